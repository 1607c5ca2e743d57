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
import json
import os
import socket
import sys

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
                         ("POST", "fs/volume")]:
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


def test_browser(args, srv, ctx):
    upload = os.path.join(srv.base_dir, "upload-20m.bin")
    H.write_random_file(upload, 20 << 20, seed=20)
    os.makedirs(SHOTS, exist_ok=True)
    env = H.clean_env({"CONSOLE_URL": srv.admin_endpoint + "/", "ACCESS_KEY": srv.access_key,
                       "SECRET_KEY": srv.secret_key, "UPLOAD_FILE": upload,
                       "UPLOAD_SHA256": H.sha256_file(upload), "SHOTS": SHOTS,
                       "CKPT_BUCKET": ctx.get("ckpt_bucket", ""), "FS_URL": ctx.get("fs_url", ""),
                       "FS_PID": str(ctx.get("fs_pid", "")),
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
    with H.StrataServer(args.strata, vector=True, features=True) as srv:
        runner.case("security: sessions, CSRF, read-only user, no secret", test_security, srv)
        runner.case("features: freshness and skew over the view's source", test_feature_reports, args, srv)
        ctx = {}
        try:
            runner.case("data path: checkpoints and an FS volume's sessions", test_datapath, args, srv, ctx)
            runner.case("browser: puppeteer-core + chromium", test_browser, args, srv, ctx)
        finally:
            if ctx.get("fs"):
                ctx["fs"].cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
