#!/usr/bin/python3
"""The vector API with the official Qdrant JS client, plus raw-HTTP edge cases.

Starts `strata server` with the vector API on a free port and an API key, runs
qdrant_js/qdrant_test.mjs (@qdrant/js-client-rest: collections, 10,000 points,
filtered and unfiltered search, query, scroll, count, delete, errors), checks
bad requests over raw HTTP, the Prometheus metrics, then kill -9 and a clean
restart: every acknowledged point is still there.

Installs qdrant_js/node_modules with npm when it is missing (needs the npm
registry once). Usage: /usr/bin/python3 test_qdrant_js.py --strata build/strata
"""

import http.client
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

JS_DIR = os.path.join(H.HERE, "qdrant_js")
API_KEY = "strata-vector-test-key"


def ensure_node_modules():
    marker = os.path.join(JS_DIR, "node_modules", "@qdrant", "js-client-rest", "package.json")
    if os.path.exists(marker):
        return
    env = H.clean_env({"HOME": os.environ.get("HOME", "/tmp")})
    cmd = [H.NPM, "ci" if os.path.exists(os.path.join(JS_DIR, "package-lock.json")) else "install",
           "--no-audit", "--no-fund"]
    H.run_tool(cmd, env, timeout=300, cwd=JS_DIR)
    assert os.path.exists(marker), "npm did not install @qdrant/js-client-rest"


def request(srv, method, path, body=None, key=API_KEY, raw=None, headers=None):
    """One request to the vector port; returns (status, parsed JSON or text)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.vector_port, timeout=30)
    try:
        h = dict(headers or {})
        if key is not None:
            h["api-key"] = key
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text
    finally:
        c.close()


def expect_error(srv, method, path, status, fragment, **kw):
    got, body = request(srv, method, path, **kw)
    assert got == status, f"{method} {path}: expected {status}, got {got}: {body}"
    assert isinstance(body, dict) and isinstance(body.get("status"), dict) and "error" in body["status"], \
        f"not Qdrant's error shape: {body}"
    assert "time" in body, f"no time in {body}"
    msg = body["status"]["error"]
    assert fragment.lower() in msg.lower(), f"error message {msg!r} does not mention {fragment!r}"


def run_node(srv, phase):
    env = H.clean_env({"QDRANT_URL": srv.vector_endpoint, "QDRANT_API_KEY": API_KEY, "PHASE": phase,
                       "HOME": os.environ.get("HOME", "/tmp"),
                       # recoverSnapshot with a file:// location reads archives from here
                       "SNAPSHOT_DIR": os.path.join(os.path.realpath(srv.data_dir), "vector", ".snapshots")})
    p = H.run_tool([H.NODE, os.path.join(JS_DIR, "qdrant_test.mjs")], env, timeout=240, check=False, cwd=JS_DIR)
    assert p.returncode == 0, f"node ({phase}) exited {p.returncode}: " + \
        "; ".join(l for l in p.stdout.splitlines() if l.startswith("FAIL"))[:2000]


def main():
    args = H.parse_args()
    runner = H.Runner("qdrant-js")
    if not runner.case("npm install (if needed)", ensure_node_modules):
        return runner.finish()
    srv = H.StrataServer(args.strata, vector=True, extra_args=["--vector-api-key", API_KEY])
    try:
        srv.start()

        def auth():
            st, body = request(srv, "GET", "/", key=None)
            assert st == 401 and "API key" in body["status"]["error"], (st, body)
            st, body = request(srv, "GET", "/collections", key="wrong")
            assert st == 401, (st, body)
            st, body = request(srv, "GET", "/", headers={"Authorization": f"Bearer {API_KEY}"}, key=None)
            assert st == 200 and body["version"].startswith("1."), (st, body)
            st, body = request(srv, "GET", "/healthz", key=None)
            assert st == 200, (st, body)

        runner.case("api-key required (header or bearer), health open", auth)
        runner.case("official client: collections, 10k points, search, query, scroll, count, delete, errors",
                    run_node, srv, "main")

        def raw_bad_input():
            expect_error(srv, "PUT", "/collections/raw", 400, "json", raw=b"{not json")
            expect_error(srv, "PUT", "/collections/raw", 400, "object", raw=b"[1,2,3]")
            expect_error(srv, "PUT", "/collections/raw", 400, "vectors", body={"hnsw_config": {}})
            expect_error(srv, "PUT", "/collections/raw", 400, "distance", body={"vectors": {"size": 4}})
            expect_error(srv, "PUT", "/collections/raw", 400, "strata",
                         body={"vectors": {"size": 4, "distance": "Dot"}, "strata": {"index": "BTREE"}})
            expect_error(srv, "PUT", "/collections/raw", 400, "segment_row",
                         body={"vectors": {"size": 4, "distance": "Dot"}, "strata": {"segment_row": 5}})
            expect_error(srv, "PUT", "/collections/..%2Fescape", 400, "collection name",
                         body={"vectors": {"size": 4, "distance": "Dot"}})
            expect_error(srv, "POST", "/collections/docs/points/search", 400, "vector", body={"limit": 3})
            expect_error(srv, "POST", "/collections/docs/points/search", 400, "json", raw=b'{"vector": [1,')
            expect_error(srv, "POST", "/collections/docs/points/search", 400, "vector",
                         body={"vector": ["a"] * 32})
            expect_error(srv, "POST", "/collections/docs/points/scroll", 400, "filter",
                         body={"filter": {"should": 5}})
            expect_error(srv, "POST", "/collections/docs/points/count", 400, "filter expression",
                         body={"filter": "year >>> 3"})
            expect_error(srv, "POST", "/collections/docs/points/search", 400, "limit",
                         body={"vector": [0.0] * 32, "limit": -1})
            expect_error(srv, "POST", "/collections/docs/points/query", 400, "prefetch",
                         body={"query": {"fusion": "rrf"}})  # fusion with nothing to fuse
            expect_error(srv, "GET", "/collections/docs/points/123456789", 404, "123456789")
            expect_error(srv, "POST", "/collections/nope/points/count", 404, "nope", body={})
            expect_error(srv, "GET", "/no/such/route", 404, "route")
            # A huge id and a negative one.
            expect_error(srv, "PUT", "/collections/docs/points?wait=true", 400, "negative",
                         body={"points": [{"id": -5, "vector": [0.0] * 32}]})
            st, body = request(srv, "POST", "/collections/docs/points/count", body={})
            assert st == 200 and body["result"]["count"] == 10001 - 103, body

        runner.case("raw HTTP bad input: 400/404 with Qdrant's error shape, nothing lost", raw_bad_input)

        def metrics():
            st, text = srv.admin_get("/metrics")
            text = text.decode()
            assert st == 200
            for m in ("strata_vector_http_requests_total", "strata_vector_http_request_seconds",
                      "strata_vector_points", "strata_vector_searches_total", "strata_vector_wal_sync_seconds"):
                assert m in text, f"{m} missing from /metrics"
            assert 'op="search",code="200"' in text

        runner.case("Prometheus metrics on the admin port", metrics)

        def kill9_and_restart():
            run_node(srv, "late-write")   # acknowledged (wait=true), then...
            srv.kill9()                    # ...killed without a chance to flush
            srv.start()
            run_node(srv, "verify")
            srv.stop()                     # and a clean restart
            srv.start()
            run_node(srv, "verify")

        runner.case("kill -9 and clean restart keep every acknowledged point", kill9_and_restart)

        def server_alive():
            assert srv.alive(), f"strata server died:\n{srv.log_tail()}"

        runner.case("server still running", server_alive)
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
