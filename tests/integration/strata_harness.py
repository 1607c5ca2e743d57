"""Shared helper for Strata's integration tests.

Starts the real `strata server` on loopback with a fresh data directory and
free ports, waits for /health, and always stops it (SIGTERM, then SIGKILL) and
removes its files. Also: boto3 clients, raw SigV4-signed requests (botocore's
signer over http.client), S3 error parsing and a tiny test runner that reports
every case and exits non-zero when any failed.

Run with the Debian interpreter (/usr/bin/python3: boto3 1.26 / botocore 1.29).
Each test script takes `--strata PATH` (the server binary); ctest passes
$<TARGET_FILE:strata>.
"""

import argparse
import base64
import contextlib
import ctypes
import hashlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zlib

ROOT_USER = "strataroot"
ROOT_PASSWORD = "strata-root-secret-0123456789"
REGION = "us-east-1"
PYTHON = "/usr/bin/python3"
AWS = "/usr/bin/aws"
S3CMD = "/usr/bin/s3cmd"
RCLONE = "/usr/bin/rclone"
NODE = "/usr/bin/node"
NPM = "/usr/bin/npm"
HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1024 * 1024


# --------------------------------------------------------------------------
# Process plumbing

def _die_with_parent():
    """preexec_fn: the server gets SIGKILL if the test process dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:
        pass


def _sigterm_to_exit(signum, frame):
    # ctest's timeout sends SIGTERM/SIGKILL; turn SIGTERM into SystemExit so
    # `finally` blocks stop servers and remove temp dirs.
    raise SystemExit(f"killed by signal {signum}")


signal.signal(signal.SIGTERM, _sigterm_to_exit)


# Nothing may come from the user's AWS setup: no ~/.aws files, no env keys.
for _k in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[_k]
os.environ["AWS_CONFIG_FILE"] = "/nonexistent/strata-it/aws-config"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/strata-it/aws-credentials"
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


def free_port():
    """A port that was free a moment ago (bind :0, release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args(extra=None):
    p = argparse.ArgumentParser()
    p.add_argument("--strata", required=True, help="path of the strata binary")
    if extra:
        extra(p)
    args = p.parse_args()
    if not os.access(args.strata, os.X_OK):
        sys.exit(f"FATAL: strata binary {args.strata!r} is missing or not executable")
    return args


def clean_env(extra=None):
    """Environment for child tools: no user config, no pyenv, fixed creds."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "PYTHON", "PYENV", "RCLONE_", "S3CMD"))}
    env["PATH"] = "/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
    if extra:
        env.update(extra)
    return env


class StrataServer:
    """One `strata server` process on a (possibly reused) data directory."""

    def __init__(self, binary, data_dir=None, extra_args=(), root_user=ROOT_USER,
                 root_password=ROOT_PASSWORD, log_level="warn", vector=False, features=False,
                 milvus=False):
        self.binary = os.path.abspath(binary)
        self._own_dir = data_dir is None
        self.base_dir = tempfile.mkdtemp(prefix="strata-it-")
        self.data_dir = data_dir or os.path.join(self.base_dir, "data")
        self.extra_args = list(extra_args)
        self.access_key = root_user
        self.secret_key = root_password
        self.log_level = log_level
        self.proc = None
        self.port = None
        self.admin_port = None
        # vector=True: also serve the vector (Qdrant-compatible) API on a free port.
        self.vector = vector
        self.vector_port = None
        # features=True: also serve the feature server (Feast API) on a free port;
        # otherwise it is switched off (--features-port 0).
        self.features = features
        self.features_port = None
        # milvus=True: also serve the Milvus gRPC API on a free port; otherwise
        # it is switched off (--milvus-port 0), so tests never race for 19530.
        self.milvus = milvus
        self.milvus_port = None
        self.log_path = None
        self.starts = 0

    # -- lifecycle
    def start(self, timeout=60):
        last_err = None
        for _attempt in range(5):  # a port picked by free_port() may be taken meanwhile
            self.port, self.admin_port = free_port(), free_port()
            vector_args = []
            if self.vector:
                self.vector_port = free_port()
                vector_args = ["--vector-address", f"127.0.0.1:{self.vector_port}"]
            if self.features:
                self.features_port = free_port()
                vector_args += ["--features-port", str(self.features_port)]
            else:
                vector_args += ["--features-port", "0"]
            if self.milvus:
                self.milvus_port = free_port()
                vector_args += ["--milvus-port", str(self.milvus_port)]
            else:
                vector_args += ["--milvus-port", "0"]
            self.starts += 1
            self.log_path = os.path.join(self.base_dir, f"server-{self.starts}.log")
            log = open(self.log_path, "wb")
            env = clean_env({"STRATA_ROOT_USER": self.access_key,
                             "STRATA_ROOT_PASSWORD": self.secret_key})
            cmd = [self.binary, "server", "--data", self.data_dir,
                   "--s3-address", f"127.0.0.1:{self.port}",
                   "--admin-address", f"127.0.0.1:{self.admin_port}",
                   "--log-level", self.log_level] + vector_args + self.extra_args
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         preexec_fn=_die_with_parent)
            log.close()
            deadline = time.time() + timeout
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    break
                if self._healthy():
                    return self
                time.sleep(0.05)
            if self.proc.poll() is None:
                self.kill9()
                raise RuntimeError(f"strata server not healthy after {timeout}s:\n{self.log_tail()}")
            last_err = f"strata server exited with {self.proc.returncode}:\n{self.log_tail()}"
            if "in use" not in last_err.lower():
                raise RuntimeError(last_err)
        raise RuntimeError(last_err)

    def _healthy(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=2)
            c.request("GET", "/health")
            r = c.getresponse()
            r.read()
            c.close()
            return r.status == 200
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=20):
        """SIGTERM, wait, SIGKILL. Returns the exit code (None if it had to be killed)."""
        if self.proc is None:
            return None
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                print(f"strata server ignored SIGTERM for {timeout}s; killing it", flush=True)
                self.proc.kill()
                self.proc.wait()
        else:
            rc = self.proc.returncode
        self.proc = None
        return rc

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def cleanup(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            if not self._own_dir:
                pass  # the caller owns data_dir

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc):
        self.cleanup()

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return "(no log)"

    # -- endpoints and clients
    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def vector_endpoint(self):
        return f"http://127.0.0.1:{self.vector_port}"

    @property
    def features_endpoint(self):
        return f"http://127.0.0.1:{self.features_port}"

    @property
    def admin_endpoint(self):
        return f"http://127.0.0.1:{self.admin_port}"

    def client(self, access_key=None, secret_key=None, unsigned=False, retries=3, **cfg):
        """A boto3 S3 client for this server (path style, private session)."""
        import boto3
        import botocore
        from botocore.config import Config
        opts = dict(s3={"addressing_style": "path"},
                    signature_version=botocore.UNSIGNED if unsigned else "s3v4",
                    retries={"max_attempts": retries, "mode": "standard"},
                    connect_timeout=10, read_timeout=60)
        opts.update(cfg)
        config = Config(**opts)
        if unsigned:
            sess = boto3.session.Session(region_name=REGION)
        else:
            sess = boto3.session.Session(aws_access_key_id=access_key or self.access_key,
                                         aws_secret_access_key=secret_key or self.secret_key,
                                         region_name=REGION)
        return sess.client("s3", endpoint_url=self.endpoint, config=config)

    def admin_get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=10)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def user_cmd(self, *args, check=True):
        """`strata user ARGS --endpoint <admin> ` against the running server, as root."""
        out = subprocess.run([self.binary, "user", *args, "--endpoint", f"http://127.0.0.1:{self.admin_port}"],
                             capture_output=True, text=True, timeout=30,
                             env=clean_env({"STRATA_ROOT_PASSWORD": self.secret_key}))
        if check and out.returncode != 0:
            raise RuntimeError(f"strata user {args[0]} failed ({out.returncode}): {out.stderr}{out.stdout}")
        return out

    def add_user(self, name):
        """`strata user add NAME` on the running server; returns (access, secret)."""
        out = self.user_cmd("add", name)
        ak = sk = None
        for line in out.stdout.splitlines():
            line = line.strip()
            if line.startswith("AccessKey:"):
                ak = line.split(":", 1)[1].strip()
            elif line.startswith("SecretKey:"):
                sk = line.split(":", 1)[1].strip()
        if not ak or not sk:
            raise RuntimeError(f"cannot parse `strata user add` output:\n{out.stdout}")
        return ak, sk


# --------------------------------------------------------------------------
# Raw requests

class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers          # dict, lower-case names
        self.body = body

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def error(self):
        return parse_error(self.body)

    def __repr__(self):
        return (f"<HTTP {self.status} {self.reason} headers={self.headers} "
                f"body={self.body[:600]!r}>")


def sign_headers(server, method, path, query="", headers=None, body=b"", host=None,
                 access_key=None, secret_key=None, payload_hash=None):
    """SigV4-sign a request with botocore's S3 signer; returns the header dict to send.

    `path` must already be URI-encoded; `query` is the raw query string;
    `payload_hash` replaces the body's SHA-256 as X-Amz-Content-SHA256
    (e.g. "UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER").
    """
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    host = host or f"127.0.0.1:{server.port}"
    url = f"http://{host}{path}" + (f"?{query}" if query else "")
    hdrs = dict(headers or {})
    hdrs["Host"] = host
    req = AWSRequest(method=method, url=url, data=body, headers=hdrs)
    creds = Credentials(access_key or server.access_key, secret_key or server.secret_key)
    signer = S3SigV4Auth(creds, "s3", REGION)
    if payload_hash is not None:
        signer.payload = lambda request: payload_hash
    signer.add_auth(req)
    return dict(req.headers.items())


def http_request(port, method, path_and_query, headers=None, body=b"", timeout=30):
    """One request on a fresh connection; returns Response."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path_and_query, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return Response(r.status, r.reason, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        c.close()


def signed_request(server, method, path, query="", headers=None, body=b"", host=None,
                   access_key=None, secret_key=None, timeout=30):
    """A SigV4-signed request sent over http.client to the server's S3 port."""
    hdrs = sign_headers(server, method, path, query, headers, body, host, access_key, secret_key)
    pq = path + (f"?{query}" if query else "")
    return http_request(server.port, method, pq, hdrs, body, timeout)


def url_request(url, method="GET", data=None, headers=None, timeout=30):
    """urllib request that returns a Response for any status (no exception on 4xx)."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Response(r.status, r.reason, {k.lower(): v for k, v in r.getheaders()}, r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, e.reason, {k.lower(): v for k, v in e.headers.items()}, e.read())


def parse_error(body):
    """S3 error XML -> dict of its child elements ({} if not S3 error XML)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return {}
    if _local(root.tag) != "Error":
        return {}
    return {_local(ch.tag): (ch.text or "") for ch in root}


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def assert_s3_error(resp, status, code, require_fields=True):
    """The response is an S3 error: status, <Error><Code>, and (by default) the
    Message/Resource/RequestId fields and an x-amz-request-id header."""
    assert resp.status == status, f"expected HTTP {status} {code}, got {resp!r}"
    err = parse_error(resp.body)
    assert err, f"expected S3 error XML for {code}, got body {resp.body[:400]!r}"
    assert err.get("Code") == code, f"expected Code {code}, got {err.get('Code')!r} in {resp!r}"
    if require_fields:
        for f in ("Message", "Resource", "RequestId"):
            assert f in err, f"S3 error XML lacks <{f}>: {resp.body[:400]!r}"
        rid = resp.header("x-amz-request-id")
        assert rid, f"no x-amz-request-id header on error response {resp!r}"
        assert err["RequestId"] == rid, (
            f"<RequestId> {err['RequestId']!r} != x-amz-request-id {rid!r}")
    return err


def client_error_code(fn, *a, **kw):
    """Runs a boto3 call expected to fail; returns (HTTP status, error code)."""
    from botocore.exceptions import ClientError
    try:
        fn(*a, **kw)
    except ClientError as e:
        return (e.response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
                e.response.get("Error", {}).get("Code"))
    raise AssertionError(f"{getattr(fn, '__name__', fn)} succeeded but should have failed")


# --------------------------------------------------------------------------
# Data and checksums

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def write_random_file(path, size, seed=None):
    """A file of `size` pseudo-random bytes (fast: repeats a random block with a counter)."""
    block = os.urandom(MiB) if seed is None else hashlib.sha256(str(seed).encode()).digest() * (MiB // 32)
    with open(path, "wb") as f:
        left, i = size, 0
        while left > 0:
            n = min(left, MiB)
            # Make every MiB distinct so a misplaced part cannot compare equal.
            chunk = i.to_bytes(8, "big") + block[8:n] if n >= 8 else block[:n]
            f.write(chunk)
            left -= n
            i += 1


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC32C
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc32c_b64(data):
    return base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()


def sha256_b64(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


# --------------------------------------------------------------------------
# A small runner: every case runs, failures are reported, exit status says it all.

class TestClock:
    """The server's test-only movable clock: a file `strata server
    --test-clock-file PATH` reads (Unix seconds), replaced atomically on each move."""

    def __init__(self, t=None):
        self.dir = tempfile.mkdtemp(prefix="strata-it-clock-")
        self.path = os.path.join(self.dir, "now")
        self.set(time.time() if t is None else t)

    def set(self, t):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{t:.3f}\n")
        os.replace(tmp, self.path)
        self.now = t

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def prom_metrics(srv, prefix):
    """The server's Prometheus samples whose names start with `prefix`: {name: value}."""
    status, body = srv.admin_get("/metrics")
    assert status == 200, status
    out = {}
    for line in body.decode().splitlines():
        if line.startswith(prefix) and " " in line and "{" not in line.split(" ", 1)[0]:
            name, value = line.split(" ", 1)
            out[name] = float(value.split()[0])
    return out


class Runner:
    def __init__(self, name):
        self.name = name
        self.results = []   # (case, ok, seconds, detail)

    def case(self, name, fn, *a, **kw):
        t0 = time.time()
        print(f"--- {self.name}: {name}", flush=True)
        try:
            fn(*a, **kw)
        except Exception as e:  # noqa: BLE001 - report every failure, keep going
            dt = time.time() - t0
            detail = f"{type(e).__name__}: {e}"
            print(f"FAIL {name} ({dt:.1f}s)\n{traceback.format_exc()}", flush=True)
            self.results.append((name, False, dt, detail))
            return False
        dt = time.time() - t0
        print(f"ok   {name} ({dt:.1f}s)", flush=True)
        self.results.append((name, True, dt, ""))
        return True

    def finish(self):
        failed = [r for r in self.results if not r[1]]
        print("\n==== summary:", self.name, flush=True)
        for name, ok, dt, detail in self.results:
            print(f"  {'PASS' if ok else 'FAIL'}  {name:<50} {dt:6.1f}s  {detail[:300]}")
        print(f"{self.name}: {len(self.results) - len(failed)} passed, {len(failed)} failed "
              f"of {len(self.results)}", flush=True)
        return 1 if failed or not self.results else 0


@contextlib.contextmanager
def tempdir(prefix="strata-it-work-"):
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_tool(cmd, env, timeout=300, check=True, cwd=None):
    """Runs a client tool; prints its command and output; returns CompletedProcess."""
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    out = (p.stdout or "") + (p.stderr or "")
    if out.strip():
        lines = out.splitlines()
        shown = lines if len(lines) <= 80 else lines[:20] + [f"... ({len(lines) - 60} lines)"] + lines[-40:]
        print("\n".join("  | " + l for l in shown), flush=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd[0]} exited {p.returncode}: {out[-2000:]}")
    return p
