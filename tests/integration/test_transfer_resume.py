#!/usr/bin/python3
"""`strata cp/mv/sync --bwlimit` and resumable downloads against a real
`strata server`.

--bwlimit (rclone's syntax: 10M, 512K, 100B, a bare number in KiB/s, UP:DOWN,
off) is one budget shared by every worker: a transfer of N bytes takes at
least N/rate seconds however many files and parts run in parallel (and not
much more), for uploads, downloads, sync, mv, stdin/stdout and copies
streamed between two servers. A download killed with SIGKILL leaves its bytes in the temporary
file next to the destination (never under the destination's name); the next
run fetches only the missing ranges when the object's ETag and size are
unchanged (the server's sent-bytes counter is the witness), and starts over
when the object changed.

Usage: /usr/bin/python3 test_transfer_resume.py --strata build/strata
"""

import glob
import hashlib
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
from test_transfer_cli import TransferCliTests  # noqa: E402

MiB = H.MiB
BUCKET = "resume"
PARTS = ["--multipart-threshold", "5MiB", "--part-size", "5MiB"]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class TransferResumeTests(TransferCliTests):
    def timed(self, *args, **kw):
        t = time.monotonic()
        p = self.run(*args, **kw)
        return p, time.monotonic() - t

    def sent_bytes(self):
        return H.prom_metrics(self.srv, "strata_s3_sent_bytes_total")["strata_s3_sent_bytes_total"]

    def check_time(self, what, took, size, rate):
        floor = size / rate
        # The limiter lends at most 50 ms of unused bandwidth; process start
        # and connection setup only add time.
        assert took >= floor - 0.1, f"{what}: {size} bytes at {rate} B/s took {took:.2f}s < {floor:.2f}s"
        assert took <= floor * 1.5 + 3, f"{what}: {took:.2f}s is far more than {floor:.2f}s"

    # -- cases
    def setup(self):
        self.run("mb", f"s3://{BUCKET}")

    def bwlimit_upload_parallel(self):
        # 8 files of 768 KiB with 8 workers at 3 MiB/s: 2 s if the budget is
        # shared, 0.25 s if each worker had its own.
        for i in range(8):
            self.file(f"bw/f{i}.bin", 768 * 1024)
        size = 8 * 768 * 1024
        p, took = self.timed("cp", "-r", "--concurrency", "8", "--bwlimit", "3M",
                             os.path.join(self.src, "bw"), f"s3://{BUCKET}/bw/")
        self.check_time("upload of 8 files", took, size, 3 * MiB)
        for i in range(8):
            got = self.s3.get_object(Bucket=BUCKET, Key=f"bw/f{i}.bin")["Body"].read()
            assert hashlib.sha256(got).hexdigest() == sha(os.path.join(self.src, f"bw/f{i}.bin"))

    def bwlimit_multipart(self):
        # One 10 MiB file in two 5 MiB parts, up and down, at 4 MiB/s.
        f = self.file("bw/big.bin", 10 * MiB)
        _, took = self.timed("cp", *PARTS, "--bwlimit", "4M", f, f"s3://{BUCKET}/bw/big.bin")
        self.check_time("multipart upload", took, 10 * MiB, 4 * MiB)
        dst = os.path.join(self.work, "dl", "big.bin")
        _, took = self.timed("cp", *PARTS, "--bwlimit", "4M", f"s3://{BUCKET}/bw/big.bin", dst)
        self.check_time("ranged download", took, 10 * MiB, 4 * MiB)
        assert sha(dst) == sha(f)
        # UP:DOWN: only the download side limited (4 MiB/s); KiB/s for a bare number.
        os.unlink(dst)
        _, took = self.timed("cp", *PARTS, "--bwlimit", "off:4096", f"s3://{BUCKET}/bw/big.bin", dst)
        self.check_time("download under UP:DOWN", took, 10 * MiB, 4 * MiB)
        assert sha(dst) == sha(f)

    def bwlimit_sync_and_stdin(self):
        # sync and the stdin/stdout streams honour it too.
        d = os.path.join(self.src, "bwsync")
        for i in range(4):
            self.file(f"bwsync/s{i}.bin", MiB)
        _, took = self.timed("sync", "--bwlimit", "2M", d, f"s3://{BUCKET}/bwsync/")
        self.check_time("sync upload", took, 4 * MiB, 2 * MiB)
        data = os.urandom(3 * MiB)
        _, took = self.timed("cp", "--bwlimit", "2M", "-", f"s3://{BUCKET}/bw/stdin.bin", input=data)
        self.check_time("upload from stdin", took, len(data), 2 * MiB)
        p, took = self.timed("cp", "--bwlimit", "2M", f"s3://{BUCKET}/bw/stdin.bin", "-")
        self.check_time("download to stdout", took, len(data), 2 * MiB)
        assert p.stdout == data

    def start_and_kill(self, key, dst, min_parts):
        """Starts a slow download of key to dst and SIGKILLs it once at least
        min_parts parts are recorded; returns the partial file's path."""
        partial = dst + ".strata-partial"
        cmd = [self.strata, "cp", "--endpoint-url", self.srv.endpoint, *PARTS, "--concurrency", "2",
               "--bwlimit", "8M", f"s3://{BUCKET}/{key}", dst]
        p = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        done = 0
        while p.poll() is None and time.monotonic() < deadline:
            try:
                with open(partial + ".state") as f:
                    done = sum(1 for line in f if line.startswith("done "))
            except FileNotFoundError:
                done = 0
            if done >= min_parts:
                break
            time.sleep(0.02)
        assert p.poll() is None, f"the download ended before it could be killed: {p.communicate()}"
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
        assert not os.path.exists(dst), "a killed download must not leave a file under its destination's name"
        assert os.path.getsize(partial) == os.path.getsize(os.path.join(self.src, "res/big.bin"))
        time.sleep(0.5)  # let the server finish the responses it was sending
        return partial, done

    def resume_after_kill(self):
        size = 40 * MiB + 4321  # 9 parts of 5 MiB
        src = self.file("res/big.bin", size, seed=5)
        self.run("cp", *PARTS, src, f"s3://{BUCKET}/res/big.bin")
        dst = os.path.join(self.work, "res", "big.bin")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        partial, done = self.start_and_kill("res/big.bin", dst, min_parts=3)
        before = self.sent_bytes()
        p = self.run("cp", *PARTS, f"s3://{BUCKET}/res/big.bin", dst)
        served = self.sent_bytes() - before
        print(f"rerun: the server sent {served} bytes", flush=True)
        assert sha(dst) == sha(src), "the resumed download differs from the object"
        # At least `done` whole parts came from the partial file.
        assert served <= size - done * 5 * MiB + 256 * 1024, \
            f"the rerun fetched {served} bytes of {size}, though {done} parts were already there"
        assert not glob.glob(dst + ".strata-*"), glob.glob(dst + ".strata-*")
        # The mtime is the object's, as for any download.
        lm = self.s3.head_object(Bucket=BUCKET, Key="res/big.bin")["LastModified"].timestamp()
        assert abs(os.stat(dst).st_mtime - lm) < 2

    def resume_changed_etag_restarts(self):
        dst = os.path.join(self.work, "res", "changed.bin")
        partial, done = self.start_and_kill("res/big.bin", dst, min_parts=2)
        # The same size, other bytes: only the ETag tells them apart.
        new = os.urandom(40 * MiB + 4321)
        self.s3.put_object(Bucket=BUCKET, Key="res/big.bin", Body=new)
        before = self.sent_bytes()
        self.run("cp", *PARTS, f"s3://{BUCKET}/res/big.bin", dst)
        served = self.sent_bytes() - before
        print(f"rerun: the server sent {served} bytes", flush=True)
        with open(dst, "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == hashlib.sha256(new).hexdigest(), \
                "bytes of the old version were kept after the ETag changed"
        assert served >= len(new), f"a changed object must be fetched whole, got {served} of {len(new)} bytes"
        assert not glob.glob(dst + ".strata-*"), glob.glob(dst + ".strata-*")

    def bwlimit_mv_two_endpoints(self):
        # mv (a download, then the delete) and a copy streamed between two
        # servers (counted once, on the read) draw from the limit too.
        data = os.urandom(6 * MiB)
        self.s3.put_object(Bucket=BUCKET, Key="bw/mv.bin", Body=data)
        dst = os.path.join(self.work, "mv", "mv.bin")
        _, took = self.timed("mv", "--bwlimit", "3M", f"s3://{BUCKET}/bw/mv.bin", dst)
        self.check_time("mv download", took, len(data), 3 * MiB)
        assert open(dst, "rb").read() == data
        assert "Contents" not in self.s3.list_objects_v2(Bucket=BUCKET, Prefix="bw/mv.bin")
        self.s3.put_object(Bucket=BUCKET, Key="bw/x.bin", Body=data)
        s3b = self.srv2.client()
        s3b.create_bucket(Bucket="remote")
        _, took = self.timed("cp", "--source-endpoint-url", self.srv.endpoint, "--endpoint-url", self.srv2.endpoint,
                             *PARTS, "--bwlimit", "3M", f"s3://{BUCKET}/bw/x.bin", "s3://remote/x.bin",
                             endpoint=False)
        self.check_time("copy between two servers", took, len(data), 3 * MiB)
        assert s3b.get_object(Bucket="remote", Key="x.bin")["Body"].read() == data

    def bwlimit_bad(self):
        f = self.file("bw/small.txt", 10)
        for bad in ("fast", "10X", "1M:2M:3M"):
            p = self.run("cp", "--bwlimit", bad, f, f"s3://{BUCKET}/bw/never.txt", expect=2)
            assert "--bwlimit" in p.err, p.err
        p = self.run("cp", "--bwlimit", "08:00,512K 12:00,10M", f, f"s3://{BUCKET}/bw/never.txt", expect=2)
        assert "timetable" in p.err, p.err
        assert "bw/never.txt" not in [o["Key"] for o in self.s3.list_objects_v2(
            Bucket=BUCKET, Prefix="bw/").get("Contents", [])]
        # rm and ls move no object bytes: no such flag there.
        self.run("rm", "--bwlimit", "1M", f"s3://{BUCKET}/bw/small.txt", expect=2)


def main():
    args = H.parse_args()
    runner = H.Runner("transfer_resume")
    srv = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    srv2 = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    try:
        srv.start()
        srv2.start()
        with H.tempdir() as work:
            t = TransferResumeTests(srv, os.path.abspath(args.strata), work)
            t.srv2 = srv2
            order = ["setup", "bwlimit_upload_parallel", "bwlimit_multipart", "bwlimit_sync_and_stdin",
                     "bwlimit_mv_two_endpoints", "bwlimit_bad", "resume_after_kill", "resume_changed_etag_restarts"]
            for name in order:
                if not runner.case(name, getattr(t, name)) and name == "setup":
                    break
    finally:
        srv.cleanup()
        srv2.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
