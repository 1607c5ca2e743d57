#!/usr/bin/python3
"""Runs js/s3_sdk_test.mjs (AWS SDK for JavaScript v3) against a real `strata server`.

Installs js/node_modules with npm when it is missing (needs the npm registry once).
Usage: /usr/bin/python3 test_js.py --strata build/strata
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

JS_DIR = os.path.join(H.HERE, "js")


def ensure_node_modules():
    marker = os.path.join(JS_DIR, "node_modules", "@aws-sdk", "s3-presigned-post", "package.json")
    if os.path.exists(marker):
        return
    env = H.clean_env({"HOME": os.environ.get("HOME", "/tmp")})
    cmd = [H.NPM, "ci" if os.path.exists(os.path.join(JS_DIR, "package-lock.json")) else "install",
           "--no-audit", "--no-fund"]
    H.run_tool(cmd, env, timeout=300, cwd=JS_DIR)
    assert os.path.exists(marker), "npm did not install @aws-sdk/s3-presigned-post"


def main():
    args = H.parse_args()
    runner = H.Runner("js-sdk")
    if not runner.case("npm install (if needed)", ensure_node_modules):
        return runner.finish()
    srv = H.StrataServer(args.strata)
    try:
        srv.start()

        def run_node():
            env = H.clean_env({"STRATA_ENDPOINT": srv.endpoint, "STRATA_ACCESS_KEY": srv.access_key,
                               "STRATA_SECRET_KEY": srv.secret_key, "HOME": os.environ.get("HOME", "/tmp"),
                               "AWS_CONFIG_FILE": "/nonexistent/strata-it/aws-config",
                               "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/strata-it/aws-credentials"})
            p = H.run_tool([H.NODE, os.path.join(JS_DIR, "s3_sdk_test.mjs")], env, timeout=240, check=False,
                           cwd=JS_DIR)
            assert p.returncode == 0, f"node exited {p.returncode}: " + \
                "; ".join(l for l in p.stdout.splitlines() if l.startswith("FAIL"))[:1500]

        runner.case("s3_sdk_test.mjs", run_node)

        def server_alive():
            assert srv.alive(), f"strata server died:\n{srv.log_tail()}"

        runner.case("server still running", server_alive)
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
