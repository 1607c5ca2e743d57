#!/usr/bin/python3
"""The Milvus gRPC API with the official Milvus Node.js SDK (@zilliz/milvus2-sdk-node).

Starts `strata server` with the Milvus API on a free loopback port, runs
milvus_js/milvus_test.mjs (schema, HNSW index, 10,000 rows, filtered search
against brute force, query with count(*), upsert, delete by expression,
rename, drop, error cases), milvus_js/milvus_search_test.mjs (range search,
group_by_field, filter templates, hybrid search with RRF and weighted
rankers, search and query iterators), milvus_js/milvus_types_test.mjs (sparse and
binary vector fields, hybrid dense + sparse), then a small collection with a VARCHAR key and a
dynamic field across kill -9 and a restart, then milvus_js/milvus_rest_test.mjs: the
RESTful API v2 on the same port through the SDK's HttpClient, and authentication
(--milvus-auth) over gRPC and REST on a second server.

Installs milvus_js/node_modules with npm (package-lock.json) when missing.
Exit 77 (skipped) only when node/npm are not installed or the SDK cannot be
installed. Usage: /usr/bin/python3 test_milvus_js.py --strata build/strata
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

JS_DIR = os.path.join(H.HERE, "milvus_js")
MARKER = os.path.join(JS_DIR, "node_modules", "@zilliz", "milvus2-sdk-node", "package.json")


def ensure_node_modules():
    """True when the SDK is installed (npm ci from the registry when missing)."""
    if os.path.exists(MARKER):
        return True
    if not (os.path.exists(H.NODE) and os.path.exists(H.NPM)):
        return False
    env = H.clean_env({"HOME": os.environ.get("HOME", "/tmp")})
    p = H.run_tool([H.NPM, "ci", "--no-audit", "--no-fund"], env, timeout=300, check=False, cwd=JS_DIR)
    return p.returncode == 0 and os.path.exists(MARKER)


def run_node(srv, phase, timeout=280, script="milvus_test.mjs", extra_env=None):
    env = H.clean_env({"MILVUS_ADDRESS": f"127.0.0.1:{srv.milvus_port}", "PHASE": phase,
                       "HOME": os.environ.get("HOME", "/tmp"), **(extra_env or {})})
    p = H.run_tool([H.NODE, os.path.join(JS_DIR, script)], env, timeout=timeout, check=False,
                   cwd=JS_DIR)
    assert p.returncode == 0, f"node ({phase}) exited {p.returncode}: " + \
        "; ".join(l for l in p.stdout.splitlines() if l.startswith("FAIL"))[:2000]


def main():
    args = H.parse_args()
    if not ensure_node_modules():
        print("skipped: node/npm or @zilliz/milvus2-sdk-node unavailable (scripts/install-deps.sh test)")
        return 77
    runner = H.Runner("milvus-js")
    srv = H.StrataServer(args.strata, vector=True, milvus=True)
    try:
        srv.start()
        runner.case("official SDK: schema, index, 10k rows, search, query, count, delete, errors",
                    run_node, srv, "main")

        runner.case("official SDK: range search, group_by, templates, hybrid search, iterators",
                    run_node, srv, "search", 120, "milvus_search_test.mjs")

        runner.case("official SDK: sparse and binary vector fields, hybrid dense + sparse",
                    run_node, srv, "types", 120, "milvus_types_test.mjs")

        def kill9_and_restart():
            run_node(srv, "persist-write", timeout=60)
            srv.kill9()
            srv.start()
            run_node(srv, "persist-verify", timeout=60)

        runner.case("VARCHAR key + dynamic field survive kill -9 and restart", kill9_and_restart)

        def server_alive():
            assert srv.alive(), f"strata server died:\n{srv.log_tail()}"

        runner.case("server still running", server_alive)

        runner.case("RESTful API v2 on the gRPC port: HttpClient create, insert, search with "
                    "filter, count, delete, partitions, aliases, errors",
                    run_node, srv, "rest", 120, "milvus_rest_test.mjs")
        runner.case("server still running after REST", server_alive)
    finally:
        srv.cleanup()

    # Authentication on: a second server with --milvus-auth and an API key.
    api_key = "milvus-test-api-key-7f3c"
    auth = H.StrataServer(args.strata, vector=True, milvus=True,
                          extra_args=["--milvus-auth", "--milvus-api-key", api_key])
    try:
        auth.start()
        runner.case("auth: bad tokens refused over gRPC and REST, user:password and API key work",
                    run_node, auth, "auth", 120, "milvus_rest_test.mjs",
                    {"TOKEN": f"{auth.access_key}:{auth.secret_key}", "API_KEY": api_key})
    finally:
        auth.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
