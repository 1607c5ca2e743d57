#!/usr/bin/python3
"""Directory quotas on real mounts (`strata fs quota`, JuiceFS semantics), two
mounts of one volume on Redis metadata:

- a directory filled to its space quota answers EDQUOT, and every file closed
  before that reads back whole;
- an inode quota shared by two mounts: files created alternately through both
  stop at the limit, in sum;
- rename into a full quota tree is refused (EDQUOT), a non-empty directory
  cannot move between quota trees (EXDEV, so mv copies);
- `quota check` finds drift injected into the usage record and `--repair`
  fixes it; `quota get/ls/delete`, `summary` and `config` on the same volume.

Usage: /usr/bin/python3 test_fs_quota.py --strata build/strata
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import errno
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
from fs_posix_suite import read_file, expect  # noqa: E402

CAPACITY = 1 << 20  # the space quota of /space
INODES = 20         # the inode quota of /inodes
# A client learns of a quota another one set within a second (documented).
QUOTA_SEEN_S = 1.5


def resp(port, *args):
    """One RESP exchange on a fresh connection (binary keys and values)."""
    out = f"*{len(args)}\r\n".encode()
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n" + out)
        data = b""
        while data.count(b"\r\n") < 2 or (b"\r\n$" in data and not _complete(data)):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n", 1)[1]  # drop SELECT's +OK


def _complete(data):
    body = data.split(b"\r\n", 1)[1]
    if not body.startswith(b"$"):
        return True
    n = int(body[1:body.index(b"\r\n")])
    return n < 0 or len(body) >= body.index(b"\r\n") + 2 + n + 2


FAILED_AT = {}  # path -> "write" or "close": where the first failure came


def write_until_error(path, size):
    """Writes one file of `size` bytes and closes it; returns the errno of the
    first failure (write or close), or 0."""
    data = os.urandom(size)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        return e.errno, data
    try:
        os.write(fd, data)
    except OSError as e:
        print(f"     {os.path.basename(path)}: write() failed: {os.strerror(e.errno)}", flush=True)
        FAILED_AT[path] = "write"
        try:
            os.close(fd)
        except OSError:
            pass
        return e.errno, data
    try:
        os.close(fd)
    except OSError as e:
        print(f"     {os.path.basename(path)}: close() failed: {os.strerror(e.errno)}", flush=True)
        FAILED_AT[path] = "close"
        return e.errno, data
    return 0, data


class QuotaCases:
    def __init__(self, fs, redis, a, b):
        self.fs, self.redis, self.a, self.b = fs, redis, a, b

    def q(self, *args, check=True):
        return self.fs.cli("quota", *args, check=check)

    def setup(self):
        for d in ("space", "inodes", "full", "other"):
            os.mkdir(os.path.join(self.a, d))
        self.q("set", self.fs.meta_url, "--path", "/space", "--capacity", str(CAPACITY))
        self.q("set", self.fs.meta_url, "--path", "/inodes", "--inodes", str(INODES))
        self.q("set", self.fs.meta_url, "--path", "/full", "--capacity", "64K")
        time.sleep(QUOTA_SEEN_S)  # the mounts re-read the quota list
        out = self.q("get", self.fs.meta_url, "--path", "/space").stdout
        expect("/space" in out and "1.0 MiB" in out, f"quota get shows no 1 MiB limit:\n{out}")

    def fill_space(self):
        kept = {}
        err = 0
        for i in range(40):  # 40 x 100 KiB > 1 MiB
            p = os.path.join(self.a, "space", f"f{i:02d}")
            err, data = write_until_error(p, 100 * 1024)
            if err:
                failed = (p, data)
                break
            kept[p] = data
        expect(err == errno.EDQUOT, f"filling /space ended with errno {err} ({os.strerror(err) if err else 'no error'}), "
                                    "not EDQUOT")
        expect(9 <= len(kept) <= 10, f"{len(kept)} files of 100 KiB fit into a 1 MiB quota")
        # What is committed is known to the mount: write() itself refuses, as JuiceFS's does.
        expect(FAILED_AT.get(failed[0]) == "write", f"EDQUOT came from {FAILED_AT.get(failed[0])}(), not write()")
        # Nothing of what was closed before is lost, on either mount.
        for p, data in kept.items():
            expect(read_file(p) == data, f"{p} does not read back whole after EDQUOT")
            pb = os.path.join(self.b, os.path.relpath(p, self.a))
            expect(read_file(pb) == data, f"{pb} does not read back whole on the other mount")
        # The refused file holds a prefix of what was written (nothing that was
        # not written), and its size agrees with what reads return, on both mounts.
        for root in (self.a, self.b):
            fp = os.path.join(root, os.path.relpath(failed[0], self.a))
            if os.path.exists(fp):
                got = read_file(fp)
                expect(os.stat(fp).st_size == len(got), f"{fp}: size {os.stat(fp).st_size}, reads {len(got)} bytes")
                expect(failed[1].startswith(got), f"{fp}: holds bytes that were not written")
        st = os.statvfs(os.path.join(self.a, "space"))
        expect(st.f_bsize > 0, "statvfs fails inside a full quota")
        out = self.q("get", self.fs.meta_url, "--path", "/space").stdout
        print(out, flush=True)
        # Removing a file makes room again.
        os.unlink(next(iter(kept)))
        err, _ = write_until_error(os.path.join(self.a, "space", "after-unlink"), 50 * 1024)
        expect(err == 0, f"a write after freeing space failed with errno {err}")

    def inodes_two_mounts(self):
        made = refused = 0
        for i in range(30):
            root = self.a if i % 2 == 0 else self.b
            p = os.path.join(root, "inodes", f"n{i:02d}")
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
                made += 1
            except OSError as e:
                expect(e.errno == errno.EDQUOT, f"create {p}: errno {e.errno}, not EDQUOT")
                refused += 1
        expect(made == INODES, f"{made} files created through two mounts under an inode quota of {INODES}")
        expect(refused == 30 - INODES, f"{refused} creates refused")
        try:
            os.mkdir(os.path.join(self.b, "inodes", "subdir"))
            raise AssertionError("mkdir past the inode quota succeeded")
        except OSError as e:
            expect(e.errno == errno.EDQUOT, f"mkdir past the quota: errno {e.errno}")

    def rename_rules(self):
        big = os.path.join(self.a, "other", "big")
        with open(big, "wb") as f:
            f.write(os.urandom(100 * 1024))
        try:
            os.rename(big, os.path.join(self.a, "full", "big"))
            raise AssertionError("rename of 100 KiB into a 64 KiB quota succeeded")
        except OSError as e:
            expect(e.errno == errno.EDQUOT, f"rename into a full quota: errno {e.errno}")
        expect(os.path.exists(big), "the refused rename lost its source")
        sub = os.path.join(self.a, "other", "tree")
        os.mkdir(sub)
        with open(os.path.join(sub, "x"), "wb") as f:
            f.write(b"x")
        try:
            os.rename(sub, os.path.join(self.a, "full", "tree"))
            raise AssertionError("a directory with content moved into another quota tree")
        except OSError as e:
            expect(e.errno == errno.EXDEV, f"directory rename across quotas: errno {e.errno}, not EXDEV")
        # mv falls back to copy + remove, which the quota counts.
        subprocess.run(["mv", sub, os.path.join(self.a, "full", "tree")], check=True)
        expect(read_file(os.path.join(self.b, "full", "tree", "x")) == b"x", "mv across quotas lost data")

    def check_and_repair(self):
        p = self.q("check", self.fs.meta_url, check=False)
        expect(p.returncode == 0, f"quota check on a consistent volume exited {p.returncode}:\n{p.stdout}{p.stderr}")
        ino = os.stat(os.path.join(self.a, "space")).st_ino
        key = b"P" + struct.pack(">QQ", 0, ino)
        raw = resp(self.redis.port, "GET", key)
        expect(raw.startswith(b"$32\r\n"), f"no 32-byte quota record for inode {ino}: {raw[:40]!r}")
        rec = raw[5:37]
        bad = rec[:16] + struct.pack(">QQ", 123456789, 4242)
        expect(resp(self.redis.port, "SET", key, bad).startswith(b"+OK"), "could not inject drift")
        p = self.q("check", self.fs.meta_url, check=False)
        expect(p.returncode != 0 and "123456789" in p.stdout, f"quota check missed the drift:\n{p.stdout}{p.stderr}")
        p = self.q("check", self.fs.meta_url, "--path", "/space", "--repair", check=False)
        expect(p.returncode == 0 and "repaired" in p.stdout, f"quota check --repair:\n{p.stdout}{p.stderr}")
        p = self.q("check", self.fs.meta_url, check=False)
        expect(p.returncode == 0, f"drift remains after --repair:\n{p.stdout}")
        fixed = resp(self.redis.port, "GET", key)[5:37]
        expect(fixed == rec, "the repaired usage differs from the usage before the injection")

    def admin(self):
        out = self.q("ls", self.fs.meta_url).stdout
        for d in ("/space", "/inodes", "/full"):
            expect(d in out, f"quota ls misses {d}:\n{out}")
        self.q("delete", self.fs.meta_url, "--path", "/inodes")
        p = self.q("get", self.fs.meta_url, "--path", "/inodes", check=False)
        expect(p.returncode == 3, f"quota get of a deleted quota exited {p.returncode}")
        time.sleep(QUOTA_SEEN_S)
        os.close(os.open(os.path.join(self.b, "inodes", "free-now"), os.O_WRONLY | os.O_CREAT, 0o644))
        out = self.fs.cli("summary", self.fs.meta_url, "/", "--depth", "1").stdout
        expect("/space" in out and "/inodes" in out, f"summary misses directories:\n{out}")
        line = [l for l in out.splitlines() if l.startswith("/inodes ")][0].split()
        expect(line[-1] == str(INODES + 1), f"summary counts {line[-1]} files in /inodes: {line}")
        p = self.fs.cli("config", self.fs.meta_url, "--compress", "zstd", check=False)
        expect(p.returncode == 2 and "cannot change" in p.stderr, f"config --compress: {p.returncode} {p.stderr}")
        out = self.fs.cli("config", self.fs.meta_url, "--trash-days", "0").stdout
        expect("Trash days:  0" in out, f"config --trash-days 0:\n{out}")


def main():
    args = H.parse_args()
    M.skip_unless_fs(args.strata, "fs_quota")
    if not os.access(M.REDIS_SERVER, os.X_OK):
        print(f"SKIP fs_quota: {M.REDIS_SERVER} missing (Debian redis-server)", flush=True)
        return M.SKIP_RC
    runner = H.Runner("fs_quota")
    work = M.make_work_dir("strata-it-fsquota-")
    srv = H.StrataServer(args.strata)
    redis = M.RedisServer(work)
    fs = None
    mpa, mpb = os.path.join(work, "mnt-a"), os.path.join(work, "mnt-b")
    try:
        srv.start()
        redis.start()
        fs = M.StrataFS(args.strata, srv, work, redis.url(1))
        fs.create_bucket()
        if not runner.case("format on redis", fs.format, "--trash-days", "0"):
            return runner.finish()
        if not (runner.case("mount A", fs.mount, mpa, False) and runner.case("mount B", fs.mount, mpb, False)):
            return runner.finish()
        t = QuotaCases(fs, redis, mpa, mpb)
        if not runner.case("set quotas", t.setup):
            return runner.finish()
        for name in ("fill_space", "inodes_two_mounts", "rename_rules", "check_and_repair", "admin"):
            runner.case(name, getattr(t, name))
        runner.case("umount A", fs.umount, mpa)
        runner.case("umount B", fs.umount, mpb)
        runner.case("fsck clean", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work, redis)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
