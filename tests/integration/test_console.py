#!/usr/bin/python3
"""The web console on the admin port: security over raw HTTP, then a real browser.

Security (python requests): every console API refuses without a session; a
wrong key is refused; a write without the CSRF token (or with another
session's) is 403 and changes nothing; a read-only user (a policy allowing
only s3:Get*/s3:List*) can list but not create buckets, upload or delete, and
cannot change vectors; no response after sign-in carries the secret key; the
session cookie is HttpOnly and SameSite=Strict; object bytes come back with a
sandbox CSP. Then console_js/console_test.mjs drives Debian's chromium with
puppeteer-core (sign in, bucket, 20 MiB upload with progress, download
byte-identical, vectors and a filtered search, a feature view, a metrics
chart, bad input) and saves screenshots under docs/console/.

Installs console_js/node_modules with npm when missing. Exit 77 (skipped) when
/usr/bin/chromium is not installed.
Usage: /usr/bin/python3 test_console.py --strata build/strata
"""

import hashlib
import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

JS_DIR = os.path.join(H.HERE, "console_js")
SHOTS = os.path.join(os.path.dirname(os.path.dirname(H.HERE)), "docs", "console")
CHROMIUM = "/usr/bin/chromium"
DEFS = """entities:
  - {name: driver, join_keys: [driver_id]}
feature_views:
  - name: driver_hourly_stats
    entities: [driver]
    ttl: 1d
    schema:
      - {name: conv_rate, dtype: Float64}
      - {name: trips, dtype: Int64}
    source: {path: data/driver_stats.csv, timestamp_field: event_timestamp}
"""
READ_ONLY = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["s3:Get*", "s3:List*"], "Resource": "*"}]})


def ensure_node_modules():
    marker = os.path.join(JS_DIR, "node_modules", "puppeteer-core", "package.json")
    if os.path.exists(marker):
        return
    env = H.clean_env({"HOME": os.environ.get("HOME", "/tmp"), "PUPPETEER_SKIP_DOWNLOAD": "1"})
    cmd = [H.NPM, "ci" if os.path.exists(os.path.join(JS_DIR, "package-lock.json")) else "install",
           "--no-audit", "--no-fund"]
    H.run_tool(cmd, env, timeout=300, cwd=JS_DIR)
    assert os.path.exists(marker), "npm did not install puppeteer-core"


class Console:
    """A signed-in console session over requests."""

    def __init__(self, srv, ak, sk):
        self.base = srv.admin_endpoint + "/console/api/"
        self.s = requests.Session()
        r = self.s.post(self.base + "login", json={"access_key": ak, "secret_key": sk}, timeout=10)
        assert r.status_code == 200, (r.status_code, r.text)
        self.login_response = r
        self.csrf = r.json()["csrf"]
        self.responses = [r]

    def call(self, method, path, csrf=True, **kw):
        h = dict(kw.pop("headers", {}))
        if csrf:
            h["X-CSRF-Token"] = self.csrf
        r = self.s.request(method, self.base + path, headers=h, timeout=30, **kw)
        self.responses.append(r)
        return r


def test_security(srv):
    base = srv.admin_endpoint + "/console/api/"
    # Without a session every API is 401 (the login page itself is public).
    for method, path in [("GET", "session"), ("GET", "s3/"), ("PUT", "s3/nosession"), ("GET", "metrics"),
                         ("GET", "vector/collections"), ("PUT", "vector/collections/x"),
                         ("GET", "features"), ("POST", "features/online"), ("POST", "presign"),
                         ("POST", "logout"), ("GET", "nonexistent"), ("POST", "vector-filter"),
                         ("GET", "features/freshness?view=driver_hourly_stats"), ("POST", "features/skew"),
                         ("POST", "fs/volume"), ("GET", "datapath/warm"), ("GET", "datapath/checkpoints")]:
        r = requests.request(method, base + path, timeout=10, cookies={"strata_console": "0" * 64})
        assert r.status_code == 401, (method, path, r.status_code, r.text)
        assert r.json()["error"] == "Unauthorized", r.text
    r = requests.get(srv.admin_endpoint + "/", timeout=10)
    assert r.status_code == 200 and "<title>Strata console</title>" in r.text, r.status_code
    assert "default-src 'self'" in r.headers["Content-Security-Policy"], r.headers
    r = requests.post(base + "login", json={"access_key": srv.access_key, "secret_key": "wrong-secret"}, timeout=10)
    assert r.status_code == 401 and "wrong access key" in r.json()["message"], r.text
    assert "Set-Cookie" not in r.headers
    r = requests.post(base + "login", json={"access_key": "NOSUCHKEY", "secret_key": srv.secret_key}, timeout=10)
    assert r.status_code == 401, r.text
    r = requests.post(base + "login", data="access_key=x", timeout=10,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 400, r.text

    root = Console(srv, srv.access_key, srv.secret_key)
    cookie = root.login_response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
    # CSRF: missing or wrong token -> 403, nothing created.
    r = root.call("PUT", "s3/csrf-bucket", csrf=False)
    assert r.status_code == 403 and r.json()["error"] == "InvalidCsrfToken", r.text
    r = root.call("PUT", "s3/csrf-bucket", csrf=False, headers={"X-CSRF-Token": "f" * 64})
    assert r.status_code == 403, r.text
    r = root.call("PUT", "vector/collections/csrf", csrf=False, json={"vectors": {"size": 2, "distance": "Dot"}})
    assert r.status_code == 403, r.text
    s3 = srv.client()
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert "csrf-bucket" not in names, names
    # A cross-site Origin is refused even with the token.
    r = root.call("PUT", "s3/csrf-bucket", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403, r.text
    # With the token the root user writes; objects come back sandboxed.
    assert root.call("PUT", "s3/sec-bucket").status_code == 200
    r = root.call("PUT", "s3/sec-bucket/page.html", data=b"<script>alert(1)</script>",
                  headers={"Content-Type": "text/html"})
    assert r.status_code == 200, r.text
    r = root.call("GET", "s3/sec-bucket/page.html")
    assert r.status_code == 200 and r.content == b"<script>alert(1)</script>"
    assert "sandbox" in r.headers["Content-Security-Policy"], r.headers
    # A presigned link works on the S3 port without any cookie; bad expiry is 400.
    r = root.call("POST", "presign", json={"bucket": "sec-bucket", "key": "page.html", "expires_s": 600})
    assert r.status_code == 200, r.text
    url = r.json()["url"]
    assert url.startswith(srv.endpoint + "/sec-bucket/page.html?") and "X-Amz-Expires=600" in url, url
    got = requests.get(url, timeout=10)
    assert got.status_code == 200 and got.content == b"<script>alert(1)</script>", got.status_code
    tampered = url.replace("X-Amz-Expires=600", "X-Amz-Expires=601")
    assert requests.get(tampered, timeout=10).status_code == 403
    r = root.call("POST", "presign", json={"bucket": "sec-bucket", "key": "page.html", "expires_s": 604801})
    assert r.status_code == 400, r.text
    # The console cannot be used to smuggle a signature of the browser's own.
    r = root.call("GET", "s3/sec-bucket/page.html?X-Amz-Signature=00&X-Amz-Credential=x")
    assert r.status_code == 400, r.text
    assert root.call("PUT", "vector/collections/sec", json={"vectors": {"size": 2, "distance": "Dot"}}).status_code == 200
    r = root.call("PUT", "vector/collections/sec/points?wait=true",
                  json={"points": [{"id": 1, "vector": [1, 0], "payload": {"a": 1}}]})
    assert r.status_code == 200, r.text

    # A read-only user: reads work, every write is refused, nothing changes.
    ak, sk = srv.add_user("viewer")
    srv.user_cmd("policy", "viewer", write_tmp(srv, "ro.json", READ_ONLY))
    ro = Console(srv, ak, sk)
    assert ro.login_response.json()["admin"] is False
    r = ro.call("GET", "s3/")  # ListBuckets: the buckets the user owns (none)
    assert r.status_code == 200 and "<DisplayName>viewer</DisplayName>" in r.text, r.text
    r = ro.call("GET", "s3/sec-bucket?list-type=2")
    assert r.status_code == 200 and "<Key>page.html</Key>" in r.text, r.text
    assert ro.call("GET", "s3/sec-bucket/page.html").status_code == 200
    # (CreateBucket is left out: the S3 frontend lets any signed-in user create
    # a bucket whatever the user policy says, over the console as over awscli.)
    for method, path, body in [("PUT", "s3/sec-bucket/ro.txt", b"x"),
                               ("DELETE", "s3/sec-bucket/page.html", None), ("DELETE", "s3/sec-bucket", None),
                               ("PUT", "s3/sec-bucket?versioning",
                                b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>")]:
        r = ro.call(method, path, data=body)
        assert r.status_code == 403 and "AccessDenied" in r.text, (method, path, r.status_code, r.text)
    assert "ro.txt" not in [o["Key"] for o in s3.list_objects_v2(Bucket="sec-bucket").get("Contents", [])]
    assert s3.get_object(Bucket="sec-bucket", Key="page.html")["Body"].read() == b"<script>alert(1)</script>"
    r = ro.call("POST", "vector/collections/sec/points/query", json={"query": [1, 0], "limit": 1})
    assert r.status_code == 200 and r.json()["result"]["points"][0]["id"] == 1, r.text
    for method, path, body in [("PUT", "vector/collections/ro", {"vectors": {"size": 2, "distance": "Dot"}}),
                               ("DELETE", "vector/collections/sec", None),
                               ("PUT", "vector/collections/sec/points", {"points": [{"id": 2, "vector": [0, 1]}]}),
                               ("POST", "vector/collections/sec/points/delete", {"points": [1]})]:
        r = ro.call(method, path, json=body)
        assert r.status_code == 403, (method, path, r.status_code, r.text)
    r = root.call("GET", "vector/collections/sec")
    assert r.json()["result"]["points_count"] == 1, r.text
    # Reading an FS volume opens a metadata engine from the server's host: admin only.
    r = ro.call("POST", "fs/volume", json={"url": "sqlite3://" + os.path.join(srv.base_dir, "none.db")})
    assert r.status_code == 403 and r.json()["error"] == "AccessDenied", r.text
    # Warm jobs and local checkpoints name the server's paths: admin only.
    for path in ("datapath/warm", "datapath/checkpoints"):
        r = ro.call("GET", path)
        assert r.status_code == 403 and r.json()["error"] == "AccessDenied", (path, r.text)
        assert srv.base_dir not in r.text, r.text
    assert ro.login_response.json()["datapath"] == {"warm_dirs": 1, "checkpoint_dirs": 1}
    assert not os.path.exists(os.path.join(srv.base_dir, "none.db"))
    # The filter check reads only: any user; a malformed expression says why.
    r = ro.call("POST", "vector-filter", json={"type": "milvus", "filter": "color == "})
    assert r.status_code == 400 and r.json()["error"] == "InvalidFilter", r.text
    # Signing out ends the session.
    assert ro.call("POST", "logout").status_code == 200
    assert ro.call("GET", "session").status_code == 401
    # No response after sign-in carried a secret.
    for sess in (root, ro):
        for resp in sess.responses:
            text = resp.content.decode("latin-1") + json.dumps(dict(resp.headers))
            for secret in (srv.secret_key, sk):
                assert secret not in text, f"secret in response to {resp.request.method} {resp.request.url}"


def write_tmp(srv, name, text):
    p = os.path.join(srv.base_dir, name)
    with open(p, "w") as f:
        f.write(text)
    return p


# Two days of driver stats: conv_rate moves up on day 2, trips keeps its values.
def driver_stats_csv():
    rows = ["driver_id,event_timestamp,conv_rate,trips"]
    for day, base in ((1, 0.1), (2, 0.6)):
        for h in range(12):
            rows.append(f"{1001 + h},2024-01-0{day} {h:02}:00:00,{base + h * 0.02:.2f},{h % 4}")
    return "\n".join(rows) + "\n"


def apply_features(args, srv):
    repo = os.path.join(srv.data_dir, "features")
    os.makedirs(os.path.join(repo, "data"), exist_ok=True)
    with open(os.path.join(repo, "defs.yaml"), "w") as f:
        f.write(DEFS)
    with open(os.path.join(repo, "data", "driver_stats.csv"), "w") as f:
        f.write(driver_stats_csv())
    H.run_tool([args.strata, "features", "apply", "--repo", repo], H.clean_env(), timeout=60)


def test_feature_reports(args, srv):
    apply_features(args, srv)
    c = Console(srv, srv.access_key, srv.secret_key)
    r = c.call("GET", "features/freshness?view=driver_hourly_stats")
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["source_rows"] == 24 and j["last_materialized_end_us"] is None, j
    assert j["source_newest_event_us"] == (1704067200 + 86400 + 11 * 3600) * 10**6, j
    # Materialize through the feature server up to day 2, 06:30: the newest
    # value in the online store is day 2's 06:00 row.
    r = requests.post(srv.features_endpoint + "/materialize", timeout=60,
                      json={"start_ts": "2024-01-01T00:00:00", "end_ts": "2024-01-02T06:30:00"})
    assert r.status_code == 200, r.text
    j = c.call("GET", "features/freshness?view=driver_hourly_stats").json()
    day2 = (1704067200 + 86400) * 10**6
    assert j["last_materialized_end_us"] == day2 + 6 * 3600 * 10**6 + 1800 * 10**6, j
    assert j["newest_online_event_us"] == day2 + 6 * 3600 * 10**6, j
    win = {"view": "driver_hourly_stats", "reference": {"start": "2024-01-01", "end": "2024-01-02"},
           "current": {"start": "2024-01-02", "end": "2024-01-03"}}
    r = c.call("POST", "features/skew", json=win)
    assert r.status_code == 200, r.text
    by = {f["feature"]: f for f in r.json()["features"]}
    assert by["conv_rate"]["verdict"] == "significant" and by["trips"]["psi"] < 1e-9, by
    assert by["conv_rate"]["reference_rows"] == 12 and by["conv_rate"]["current_rows"] == 12, by
    win["current"] = {"start": "2025-01-01", "end": "2025-01-02"}
    r = c.call("POST", "features/skew", json=win)
    assert r.status_code == 400 and "holds no rows" in r.json()["message"], r.text
    test_skew_from_serving_log(args, srv, c)


def test_skew_from_serving_log(args, srv, c):
    """What the feature server served (its served-vector log, every request
    logged) against day 1 of the source."""
    win = {"view": "driver_hourly_stats", "reference": {"start": "2024-01-01", "end": "2024-01-02"},
           "current": {"serving_log": True}}
    r = c.call("POST", "features/skew", json=win)
    assert r.status_code == 404 and r.json()["error"] == "NoServingLog", r.text
    # One lookup of all twelve drivers: 1001..1007 have day 2's values online
    # (materialized up to day 2, 06:30), 1008..1012 day 1's.
    r = requests.post(srv.features_endpoint + "/get-online-features", timeout=30, json={
        "features": ["driver_hourly_stats:conv_rate", "driver_hourly_stats:trips"],
        "entities": {"driver_id": list(range(1001, 1013))}})
    assert r.status_code == 200, r.text
    r = c.call("POST", "features/skew", json=win)
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["current"]["source"] == "serving_log" and j["current_rows"] == 12, j
    assert j["reference_rows"] == 12, j
    by = {f["feature"]: f for f in j["features"]}
    assert by["trips"]["psi"] < 1e-9, by  # the same h % 4 values served as in the source
    assert by["conv_rate"]["verdict"] == "significant", by
    # The CLI reads the same log (features/serving_log.h's reader): the same PSI.
    ref = os.path.join(srv.base_dir, "day1.csv")
    with open(ref, "w") as f:
        f.write("\n".join(driver_stats_csv().splitlines()[:13]) + "\n")
    log_dir = os.path.join(srv.data_dir, "features", "data", "served_log")
    p = H.run_tool([args.strata, "features", "skew", "--reference", ref, "--serving", log_dir,
                    "--features", "conv_rate,trips", "--json"], H.clean_env(), timeout=60)
    cli = {f["feature"]: f for f in json.loads(p.stdout)}
    assert abs(cli["conv_rate"]["psi"] - by["conv_rate"]["psi"]) < 1e-9, (cli, by)
    assert cli["conv_rate"]["serving_rows"] == 12, cli
    # A window on the log's own time that holds nothing says so.
    win["current"] = {"serving_log": True, "start": "2020-01-01", "end": "2020-01-02"}
    r = c.call("POST", "features/skew", json=win)
    assert r.status_code == 400 and "served-vector log" in r.json()["message"], r.text


CKPT_BUCKET = "ckpt-bucket"


def s3_env(srv, home):
    return H.clean_env({"AWS_ACCESS_KEY_ID": srv.access_key, "AWS_SECRET_ACCESS_KEY": srv.secret_key,
                        "AWS_REGION": H.REGION, "HOME": home})


def test_datapath(args, srv, ctx):
    """Checkpoints of two runs (one step whose upload never finished) and an FS
    volume mounted once, read through the console's APIs."""
    s3 = srv.client()
    s3.create_bucket(Bucket=CKPT_BUCKET)
    work = os.path.join(srv.base_dir, "ckpt")
    env = s3_env(srv, srv.base_dir)
    for run, step in (("run-42/", 100), ("run-42/", 200), ("run-43/", 5)):
        src = os.path.join(work, f"src-{step}")
        os.makedirs(src, exist_ok=True)
        H.write_random_file(os.path.join(src, "model.pt"), 300_000 + step, seed=step)
        H.write_random_file(os.path.join(src, "optim.bin"), 70_000, seed=step + 1)
        H.run_tool([args.strata, "ckpt", "save", "--dir", os.path.join(work, "local-" + run.strip("/")),
                    "--store", f"s3://{CKPT_BUCKET}?endpoint={srv.endpoint}", "--prefix", run,
                    "--step", str(step), os.path.join(src, "model.pt"), os.path.join(src, "optim.bin")],
                   env, timeout=120)
    # A step cut off before its manifest: files, no MANIFEST.json.
    s3.put_object(Bucket=CKPT_BUCKET, Key="run-42/step-000000000300/model.pt", Body=b"x" * 1000)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=CKPT_BUCKET)["Contents"]]
    assert "run-42/step-000000000200/MANIFEST.json" in keys, keys
    ctx["ckpt_bucket"] = CKPT_BUCKET
    # Locally (the server's --checkpoint-dir is `work`): a save of step 300 in
    # progress beside run-42's two kept steps; listing changes nothing.
    partial = os.path.join(work, "local-run-42", ".step-000000000300.partial-0000abcd")
    os.makedirs(partial)
    H.write_random_file(os.path.join(partial, "model.pt"), 4096, seed=3)
    c = Console(srv, srv.access_key, srv.secret_key)
    r = c.call("GET", "datapath/checkpoints")
    assert r.status_code == 200, r.text
    runs = {os.path.basename(x["dir"]): x for x in r.json()["runs"]}
    assert sorted(runs) == ["local-run-42", "local-run-43"], r.text
    steps = [(x["step"], x["state"], x["upload_pending"], x["files"]) for x in runs["local-run-42"]["steps"]]
    assert steps == [(300, "partial", False, 1), (200, "complete", False, 2), (100, "complete", False, 2)], steps
    assert runs["local-run-42"]["steps"][1]["bytes"] == 300_200 + 70_000, runs
    assert [x["step"] for x in runs["local-run-43"]["steps"]] == [5], runs
    assert os.path.exists(os.path.join(partial, "model.pt"))

    # An FS volume, mounted (one session with this host and the daemon's pid).
    import fs_mount
    meta = os.path.join(srv.base_dir, "fsmeta.db")
    fs = fs_mount.StrataFS(args.strata, srv, srv.base_dir, "sqlite3://" + meta, name="consolevol")
    ctx["fs"] = fs
    fs.create_bucket()
    fs.format()
    c = Console(srv, srv.access_key, srv.secret_key)
    r = c.call("POST", "fs/volume", json={"url": fs.meta_url})
    assert r.status_code == 200 and r.json()["sessions"] == [], r.text
    assert r.json()["volume"]["name"] == "consolevol", r.text
    ctx["fs_url"] = fs.meta_url
    if not os.path.exists("/dev/fuse"):
        print("note: /dev/fuse missing: the volume is shown without a mount session")
        return
    mp = os.path.join(srv.base_dir, "mnt")
    fs.mount(mp)
    pids = fs_mount.pids_serving(mp)
    r = c.call("POST", "fs/volume", json={"url": fs.meta_url})
    assert r.status_code == 200, r.text
    sessions = r.json()["sessions"]
    assert len(sessions) == 1 and sessions[0]["pid"] in pids, (sessions, pids)
    assert sessions[0]["mount_point"] == mp and sessions[0]["host"] == socket.gethostname(), sessions
    assert sessions[0]["stale"] is False, sessions
    ctx["fs_pid"] = sessions[0]["pid"]


WARM_BUCKET = "warm-bucket"


class SlowS3Proxy:
    """Forwards GET/HEAD to the S3 port unchanged (Host included, so SigV4
    still verifies), each after `delay` seconds; while the gate is closed,
    requests wait. GET /__gate/open on the proxy opens it (the browser test
    does, to watch a job start moving)."""

    def __init__(self, target_port, delay):
        self.delay, self.gate = delay, threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def forward(self):
                if self.path == "/__gate/open":
                    proxy.gate.set()
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                proxy.gate.wait()
                time.sleep(proxy.delay)
                try:
                    self.relay()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the warm job was killed or closed it

            def relay(self):
                c = http.client.HTTPConnection("127.0.0.1", target_port, timeout=30)
                c.request(self.command, self.path, headers=dict(self.headers.items()))
                r = c.getresponse()
                body = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", r.getheader("Content-Length") or str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
                c.close()

            do_GET = do_HEAD = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def start_warm(args, srv, proxy, job, shards, env):
    lst = os.path.join(srv.base_dir, f"{job}.txt")
    with open(lst, "w") as f:
        f.write("".join(f"shard-{i:03}.bin\n" for i in range(shards)))
    cache_dir = os.path.join(srv.base_dir, "warm", job)
    os.makedirs(cache_dir, exist_ok=True)
    cmd = [args.strata, "warm", "--list", lst, "--cache-dir", cache_dir, "--cache-size", "1G",
           "--store", f"s3://{WARM_BUCKET}?endpoint=http://127.0.0.1:{proxy.port}",
           "--lookahead", "2", "--concurrency", "1", "--progress-interval-ms", "100", "-q"]
    log = open(os.path.join(srv.base_dir, f"{job}.log"), "wb")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return p, cache_dir


def warm_job(c, cache_dir):
    r = c.call("GET", "datapath/warm")
    assert r.status_code == 200, r.text
    return next((j for j in r.json()["jobs"] if j["cache_dir"] == cache_dir), None)


def wait_job(c, cache_dir, pred, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = warm_job(c, cache_dir)
        if j is not None and pred(j):
            return j
        time.sleep(0.1)
    raise AssertionError(f"warm job {cache_dir}: {what}; last {warm_job(c, cache_dir)}")


def test_warm_progress(args, srv, ctx):
    """`strata warm` through a slow S3 proxy: its progress advances in the
    console's API; it finishes with exact bytes; a job killed with -9 shows as
    gone. A third job waits behind a closed gate for the browser."""
    s3 = srv.client()
    s3.create_bucket(Bucket=WARM_BUCKET)
    for i in range(30):
        s3.put_object(Bucket=WARM_BUCKET, Key=f"shard-{i:03}.bin", Body=os.urandom(100_000 + i))
    env = s3_env(srv, srv.base_dir)
    c = Console(srv, srv.access_key, srv.secret_key)
    proxy = SlowS3Proxy(srv.port, 0.05)
    ctx["proxies"].append(proxy)
    proxy.gate.set()
    p, d1 = start_warm(args, srv, proxy, "job-1", 30, env)
    ctx["procs"].append(p)
    first = wait_job(c, d1, lambda j: 0 < j["objects_done"] < 30, "never seen part-way")
    assert first["status"] == "running" and first["alive"] is True, first
    later = wait_job(c, d1, lambda j: j["objects_done"] > first["objects_done"], "did not advance")
    assert later["bytes_done"] > first["bytes_done"], (first, later)
    assert p.wait(timeout=120) == 0, open(os.path.join(srv.base_dir, "job-1.log")).read()
    done = warm_job(c, d1)
    total = sum(100_000 + i for i in range(30))
    assert done["status"] == "finished" and done["objects_done"] == 30, done
    assert done["bytes_exact"] and done["bytes_total"] == total and done["bytes_done"] == total, done
    assert done["fraction"] == 1 and done["eta_s"] == 0, done
    # Killed with -9 mid-way: the file still says running, the pid is gone.
    p2, d2 = start_warm(args, srv, proxy, "job-2", 30, env)
    ctx["procs"].append(p2)
    wait_job(c, d2, lambda j: j["objects_done"] >= 1, "job-2 never started")
    p2.send_signal(signal.SIGKILL)
    p2.wait(timeout=30)
    gone = warm_job(c, d2)
    assert gone["status"] == "gone" and gone["alive"] is False, gone
    assert 1 <= gone["objects_done"] < 30, gone
    # For the browser: a job held at its first request until the page opens the gate.
    gated = SlowS3Proxy(srv.port, 0.15)
    ctx["proxies"].append(gated)
    p3, d3 = start_warm(args, srv, gated, "job-3", 20, env)
    ctx["procs"].append(p3)
    held = wait_job(c, d3, lambda j: True, "job-3 wrote no progress file")
    assert held["objects_done"] == 0 and held["status"] == "running", held
    ctx["warm_gate"] = f"http://127.0.0.1:{gated.port}/__gate/open"
    ctx["warm_job"] = d3


def test_browser(args, srv, ctx):
    upload = os.path.join(srv.base_dir, "upload-20m.bin")
    H.write_random_file(upload, 20 << 20, seed=20)
    os.makedirs(SHOTS, exist_ok=True)
    env = H.clean_env({"CONSOLE_URL": srv.admin_endpoint + "/", "ACCESS_KEY": srv.access_key,
                       "SECRET_KEY": srv.secret_key, "UPLOAD_FILE": upload,
                       "UPLOAD_SHA256": H.sha256_file(upload), "SHOTS": SHOTS,
                       "CKPT_BUCKET": ctx.get("ckpt_bucket", ""), "FS_URL": ctx.get("fs_url", ""),
                       "FS_PID": str(ctx.get("fs_pid", "")),
                       "WARM_GATE": ctx.get("warm_gate", ""), "WARM_JOB": ctx.get("warm_job", ""),
                       "HOME": os.environ.get("HOME", "/tmp")})
    p = H.run_tool([H.NODE, os.path.join(JS_DIR, "console_test.mjs")], env, timeout=240, check=False, cwd=JS_DIR)
    assert p.returncode == 0, "browser test failed: " + \
        "; ".join(l for l in p.stdout.splitlines() if l.startswith("FAIL"))[:2000]
    # The upload really is in the store, whole.
    got = srv.client().get_object(Bucket="console-bucket", Key="upload-20m.bin")["Body"].read()
    assert hashlib.sha256(got).hexdigest() == H.sha256_file(upload)


def main():
    args = H.parse_args()
    if not os.path.exists(CHROMIUM):
        print("skipped: /usr/bin/chromium is not installed (scripts/install-deps.sh test)")
        return 77
    runner = H.Runner("console")
    if not runner.case("npm install (if needed)", ensure_node_modules):
        return runner.finish()
    srv = H.StrataServer(args.strata, vector=True, features=True)
    srv.extra_args += ["--warm-dir", os.path.join(srv.base_dir, "warm"),
                       "--checkpoint-dir", os.path.join(srv.base_dir, "ckpt"),
                       "--features-log-sample-rate", "1"]
    with srv:
        runner.case("security: sessions, CSRF, read-only user, no secret", test_security, srv)
        runner.case("features: freshness and skew over the source and the serving log",
                    test_feature_reports, args, srv)
        ctx = {"procs": [], "proxies": []}
        try:
            runner.case("data path: checkpoints (uploaded and local) and an FS volume's sessions",
                        test_datapath, args, srv, ctx)
            runner.case("data path: warm jobs' progress", test_warm_progress, args, srv, ctx)
            runner.case("browser: puppeteer-core + chromium", test_browser, args, srv, ctx)
        finally:
            for p in ctx["procs"]:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for proxy in ctx["proxies"]:
                proxy.gate.set()
                proxy.close()
            if ctx.get("fs"):
                ctx["fs"].cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
