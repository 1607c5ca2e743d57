"""One `strata server --no-fsync` for a side-by-side benchmark: S3 and the
admin endpoint on free loopback ports (no vector or feature ports held), data
and log under WORK, root credentials USER/SECRET. Shared by bench/fs and
bench/transfer (their bench.py put this directory on sys.path)."""
import http.client
import os
import signal
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StrataServer:
    def __init__(self, strata, work, user, secret):
        self.data = os.path.join(work, "server-data")
        self.port, self.admin = free_port(), free_port()
        env = dict(os.environ, STRATA_ROOT_USER=user, STRATA_ROOT_PASSWORD=secret)
        self.log = open(os.path.join(work, "server.log"), "wb")
        self.proc = subprocess.Popen(
            [strata, "server", "--no-fsync", "--data", self.data,
             "--s3-address", f"127.0.0.1:{self.port}", "--admin-address", f"127.0.0.1:{self.admin}",
             "--no-vector", "--features-port", "0", "--log-level", "warn"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.admin, timeout=1)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("bench: strata server did not start; see " + self.log.name)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
