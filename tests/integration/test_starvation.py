#!/usr/bin/python3
"""A flood of idle TCP connections must not starve a normal client.

The defect (issue 14): 2,000 idle connections (connected, nothing sent) took
every slot of the S3 port for the 60 s idle timeout; 979 of them got 503 and
so did a normal client, for up to a minute.

Each flood case starts the real `strata server`, opens 3,000 idle
connections from a child process (its own RLIMIT_NOFILE raised), and runs a
normal client (boto3 without retries, so nothing is hidden, and every 5th
operation a signed request on a new connection, as another client would open)
doing 100 PUT + 100 GET of small objects, both while the connections are being opened and while they
are held. Every operation must succeed; with the connections held p99 must
stay under 50 ms (under 250 ms while they are being opened). Then every idle
connection must be closed by the server, without a byte sent to it (no 503
storm), by the header timeout at the latest (--header-timeout-ms 8000 here).

Cases: the defaults (4096 per port, 1024 per address: the flood's oldest idle
connections make room), and --max-connections 1024 --max-connections-per-ip 0
(the issue's limit, only the global one). A last case starts the server with a
soft open-file limit of 1024 and checks that it raised it to the hard limit.

Usage: /usr/bin/python3 test_starvation.py --strata build/strata
"""

import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

IDLE = 3000
OPS = 200                  # 100 PUT + 100 GET, per phase
P99_LIMIT_S = 0.050
# While the 3,000 connections are being opened the flood's own process takes
# one of the machine's two cores and every accept competes with the client's;
# one operation per run waits behind the flood in the accept queue (60-160 ms
# measured). No operation may fail then either; the latency bound of the
# issue (p99 < 50 ms with the idle connections there) is checked once they
# are held.
P99_OPENING_LIMIT_S = 0.250
HEADER_TIMEOUT_MS = 8000   # long enough to run a phase while the flood is held
BUCKET = "starve"
FRESH_EVERY = 5            # every 5th operation on a new connection


# --------------------------------------------------------------------------
# The flood, in a child process (its GIL and descriptors are its own).

def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            raise SystemExit(f"FATAL: RLIMIT_NOFILE hard limit {hard} < {want}: cannot open the flood")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def hold_main(port, n, wait_s):
    """Opens n idle connections, reports, then reports how and when each closed."""
    raise_nofile(n + 256)
    out = sys.stdout
    socks, opened_at, connect_errors = [], [], 0
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            connect_errors += 1
            s.close()
            continue
        s.setblocking(False)
        socks.append(s)
        opened_at.append(time.monotonic())
    print(json.dumps({"event": "opened", "n": len(socks), "connect_errors": connect_errors,
                      "seconds": time.monotonic() - t0}), file=out, flush=True)
    poller = select.poll()
    by_fd = {}
    for i, s in enumerate(socks):
        poller.register(s.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        by_fd[s.fileno()] = i
    closed, got_data, lifetimes = 0, 0, []
    deadline = time.monotonic() + wait_s
    while by_fd and time.monotonic() < deadline:
        for fd, _ev in poller.poll(200):
            i = by_fd.get(fd)
            if i is None:
                continue
            try:
                data = socks[i].recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""  # reset: closed too
            if data:
                got_data += 1  # the server answered a connection that asked nothing
            poller.unregister(fd)
            del by_fd[fd]
            closed += 1
            lifetimes.append(time.monotonic() - opened_at[i])
    print(json.dumps({"event": "done", "closed": closed, "still_open": len(by_fd),
                      "got_data": got_data,
                      "max_lifetime": max(lifetimes) if lifetimes else None}), file=out, flush=True)
    for s in socks:
        s.close()


class Flood:
    def __init__(self, port, n, wait_s):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hold", str(port),
                                      str(n), str(wait_s)], stdout=subprocess.PIPE, text=True)
        self.events = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            with self.cv:
                self.events[ev["event"]] = ev
                self.cv.notify_all()
        with self.cv:
            self.events.setdefault("exit", {})
            self.cv.notify_all()

    def wait(self, name, timeout):
        with self.cv:
            self.cv.wait_for(lambda: name in self.events or "exit" in self.events, timeout)
            if name not in self.events:
                raise AssertionError(f"flood process: no {name!r} report within {timeout}s "
                                     f"(exit code {self.proc.poll()})")
            return self.events[name]

    def is_set(self, name):
        with self.cv:
            return name in self.events

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# --------------------------------------------------------------------------
# The normal client

def metrics(srv):
    status, body = srv.admin_get("/metrics")
    assert status == 200, status
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def run_ops(srv, s3, tag, ops=OPS, while_=None):
    """ops/2 PUTs then GETs of 1 KiB objects; returns (latencies, failures, ops while `while_`()).

    Most go through the boto3 client `s3` (keep-alive; no retries, so a 503 or
    a reset is a failure, not a retry). Every FRESH_EVERY-th one is a signed
    request on a new connection, as another client would open, while s3's
    connection stays open.
    """
    lat, failures, during = [], [], 0
    n = ops // 2
    for i in range(ops):
        key = f"{tag}/k{i % n}"
        body = (f"{tag}-{i % n}-".encode() * 100)[:1024]
        op = "PUT" if i < n else "GET"
        fresh = i % FRESH_EVERY == 0
        t = time.perf_counter()
        try:
            if fresh:
                r = H.signed_request(srv, op, f"/{BUCKET}/{key}", body=body if op == "PUT" else b"")
                if r.status != 200 or (op == "GET" and r.body != body):
                    raise AssertionError(f"{r!r}")
            elif op == "PUT":
                s3.put_object(Bucket=BUCKET, Key=key, Body=body)
            else:
                got = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                if got != body:
                    raise AssertionError(f"wrong body ({len(got)} bytes)")
        except Exception as e:  # noqa: BLE001 - every failure counts
            failures.append(f"{op} {key}{' (new connection)' if fresh else ''}: {type(e).__name__}: {e}")
        lat.append(time.perf_counter() - t)
        if while_ is not None and while_():
            during += 1
    return lat, failures, during


def p99(lat):
    s = sorted(lat)
    return s[min(len(s) - 1, int(len(s) * 0.99))]


def check_phase(name, lat, failures, limit_s=P99_LIMIT_S):
    s = sorted(lat)
    print(f"  {name}: {len(lat)} ops, p50 {s[len(s) // 2] * 1e3:.1f} ms, p99 {p99(lat) * 1e3:.1f} ms, "
          f"max {s[-1] * 1e3:.1f} ms, {len(failures)} failed", flush=True)
    assert not failures, f"{name}: {len(failures)} of {len(lat)} operations failed: {failures[:5]}"
    assert p99(lat) < limit_s, f"{name}: p99 {p99(lat) * 1e3:.1f} ms >= {limit_s * 1e3:.0f} ms"


def start_server(binary, extra, nofile=None):
    """nofile: the soft open-file limit the server starts with (default: this process's)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile or soft, soft), hard))
    srv = H.StrataServer(binary, log_level="info",
                         extra_args=["--header-timeout-ms", str(HEADER_TIMEOUT_MS)] + extra)
    try:
        srv.__enter__()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return srv


def flood_case(binary, extra, expect_held):
    srv = start_server(binary, extra)
    flood = None
    try:
        s3 = srv.client(retries=1)
        s3.create_bucket(Bucket=BUCKET)
        run_ops(srv, s3, "warm", 20)

        # Phase 1: while the flood is being opened.
        flood = Flood(srv.port, IDLE, HEADER_TIMEOUT_MS / 1000 + 15)
        lat, failures, during = run_ops(srv, s3, "opening", while_=lambda: not flood.is_set("opened"))
        opened = flood.wait("opened", 60)
        print(f"  flood: {opened['n']} connections opened in {opened['seconds']:.2f}s "
              f"({opened['connect_errors']} connect errors); {during} client ops ran while opening",
              flush=True)
        assert opened["n"] == IDLE, f"only {opened['n']} of {IDLE} idle connections opened: {opened}"
        check_phase("while opening", lat, failures, P99_OPENING_LIMIT_S)

        # Phase 2: while the flood is held.
        m = metrics(srv)
        held = m["strata_http_s3_open_connections"]
        print(f"  server holds {held:.0f} connections; evicted {m.get('strata_http_s3_connections_evicted', 0):.0f}",
              flush=True)
        assert held >= expect_held, f"the server holds only {held} of the flood's connections"
        t_held = time.monotonic()
        lat, failures, _ = run_ops(srv, s3, "held")
        check_phase("while held", lat, failures)
        m = metrics(srv)
        assert time.monotonic() - t_held < HEADER_TIMEOUT_MS / 1000, "phase 2 outlasted the flood"
        assert m["strata_http_s3_open_connections"] >= expect_held, m["strata_http_s3_open_connections"]

        # Phase 3: the idle connections are closed by the header timeout (or
        # made room earlier), and nothing was sent to any of them.
        done = flood.wait("done", HEADER_TIMEOUT_MS / 1000 + 20)
        print(f"  flood: {done}", flush=True)
        assert done["still_open"] == 0, f"{done['still_open']} idle connections outlived the header timeout"
        assert done["got_data"] == 0, f"{done['got_data']} idle connections were sent a response (503?)"
        assert done["max_lifetime"] < HEADER_TIMEOUT_MS / 1000 + 3, done
        # The server closes each right after the FIN the client saw: give it a moment.
        deadline = time.monotonic() + 5
        while True:
            m = metrics(srv)
            if m["strata_http_s3_open_connections"] <= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        ht = m["strata_http_s3_header_timeouts"]
        ev = m.get("strata_http_s3_connections_evicted", 0)
        print(f"  header timeouts {ht:.0f}, evicted {ev:.0f}, rejected "
              f"{m.get('strata_http_s3_connections_rejected', 0):.0f}, open {m['strata_http_s3_open_connections']:.0f}",
              flush=True)
        assert ht >= expect_held - 5, f"only {ht} connections closed by the header timeout"
        assert ht + ev >= IDLE, f"header timeouts {ht} + evictions {ev} < {IDLE}"
        assert m.get("strata_http_s3_connections_rejected", 0) == 0
        # What is left is the client's keep-alive connection.
        assert m["strata_http_s3_open_connections"] <= 2, (
            f"{m['strata_http_s3_open_connections']:.0f} connections still open")
        s3.put_object(Bucket=BUCKET, Key="after", Body=b"ok")
        assert s3.get_object(Bucket=BUCKET, Key="after")["Body"].read() == b"ok"
    finally:
        if flood is not None:
            flood.stop()
        srv.cleanup()


def raises_nofile(binary):
    """Started with a soft open-file limit of 1024 (what a login shell gives), the
    server raises it to the hard limit and logs it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        print(f"  hard limit {hard}: nothing to raise; checking it is kept", flush=True)
    srv = start_server(binary, [], nofile=1024)
    try:
        with open(f"/proc/{srv.proc.pid}/limits") as f:
            line = next(l for l in f if l.startswith("Max open files"))
        soft_s, hard_s = line.split()[3:5]
        print(f"  server: {line.strip()}", flush=True)
        assert soft_s == hard_s, f"the server's open-file limit was not raised: {line.strip()}"
        with open(srv.log_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        assert f"open-file limit (ulimit -n): {soft_s}" in log, f"not logged:\n{log[-2000:]}"
    finally:
        srv.cleanup()


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--hold":
        hold_main(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        return 0
    args = H.parse_args()
    r = H.Runner("starvation")
    r.case("defaults: 3000 idle connections from one address, per-address cap 1024",
           flood_case, args.strata, [], 1000)
    r.case("--max-connections 1024, no per-address cap (the issue's setup)",
           flood_case, args.strata, ["--max-connections", "1024", "--max-connections-per-ip", "0"], 1000)
    r.case("ulimit -n is raised to the hard limit at start", raises_nofile, args.strata)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
