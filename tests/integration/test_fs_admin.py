#!/usr/bin/python3
"""`strata fs rmr`, `stats`, `summary`, `clone` and `config` against a real mount
(SQLite metadata, S3 data on a Strata server):

- rmr of a tree given as a path inside the mount and as META_URL + volume
  path: everything below is gone on the mount, its objects are freed (gc
  finds no leaks, fsck is clean), and it is compared with `rm -rf` of an
  equal tree (both times printed);
- rmr refuses a path that is not on a mount of the volume;
- stats reads the mount's /metrics and shows the operations just made;
- summary counts of a tree match what was written; --entries folds the rest;
- clone of a tree and of a file shares the slices: the clone reads the same
  bytes, a write to it leaves the source alone, and removing the source
  (its objects deleted) leaves the clone whole (fsck checks every object);
- config changes trash days and refuses block size and compression.

Usage: /usr/bin/python3 test_fs_admin.py --strata build/strata
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
from fs_posix_suite import expect  # noqa: E402


def make_tree(root, dirs=4, files=150, size=700):
    os.makedirs(root)
    for d in range(dirs):
        sub = os.path.join(root, f"d{d}", "deep")
        os.makedirs(sub)
        for i in range(files):
            with open(os.path.join(root, f"d{d}", f"f{i}"), "wb") as f:
                f.write(b"x" * size)
        with open(os.path.join(sub, "last"), "wb") as f:
            f.write(b"y" * 5000)
    return dirs * (files + 3) + 1  # files, deep, last, d<n>, root


class AdminCases:
    def __init__(self, fs, mp, metrics):
        self.fs, self.mp, self.metrics = fs, mp, metrics

    def p(self, *a):
        return os.path.join(self.mp, *a)

    def rmr_on_mount(self):
        n = make_tree(self.p("t1"))
        make_tree(self.p("t2"))
        t0 = time.time()
        out = self.fs.cli("rmr", self.p("t1"), "--meta", self.fs.meta_url).stdout
        rmr_s = time.time() - t0
        expect(f"{n} entries removed" in out, f"rmr did not report {n} entries:\n{out}")
        t0 = time.time()
        shutil.rmtree(self.p("t2"))
        rm_s = time.time() - t0
        print(f"     rmr {rmr_s:.2f}s (process start included), rm -rf {rm_s:.2f}s for {n} entries", flush=True)
        deadline = time.time() + 5
        while os.path.exists(self.p("t1")) and time.time() < deadline:
            time.sleep(0.1)
        expect(not os.path.exists(self.p("t1")), "the mount still shows the removed tree")
        expect("t1" not in os.listdir(self.mp), "readdir of the mount lists the removed tree")

    def rmr_volume_path(self):
        make_tree(self.p("v", "t3"), dirs=2, files=10)
        with open(self.p("v", "keep"), "wb") as f:
            f.write(b"k")
        out = self.fs.cli("rmr", self.fs.meta_url, "/v/t3").stdout
        expect("entries removed" in out, out)
        expect(sorted(os.listdir(self.p("v"))) == ["keep"], f"after rmr /v/t3: {os.listdir(self.p('v'))}")
        p = self.fs.cli("rmr", self.fs.meta_url, "/v/missing", check=False)
        expect(p.returncode == 3, f"rmr of a missing path exited {p.returncode}")
        p = self.fs.cli("rmr", self.fs.meta_url, "/", check=False)
        expect(p.returncode == 2, f"rmr / exited {p.returncode}")

    def rmr_refuses_foreign_path(self):
        d = tempfile.mkdtemp(prefix="strata-not-a-mount-")
        try:
            open(os.path.join(d, "x"), "wb").close()
            p = self.fs.cli("rmr", os.path.join(d, "x"), "--meta", self.fs.meta_url, check=False)
            expect(p.returncode != 0 and "not on a mount" in p.stderr, f"rmr of a local file: {p.returncode} {p.stderr}")
            expect(os.path.exists(os.path.join(d, "x")), "rmr touched a file outside the volume")
        finally:
            shutil.rmtree(d)

    def objects_freed(self):
        # The mount deletes the freed slices' objects in the background.
        deadline = time.time() + 30
        while True:
            p = self.fs.cli("gc", self.fs.meta_url, "--min-age", "0", check=False)
            leaked = [l for l in p.stdout.splitlines() if l.startswith("Leaked slices")]
            if (p.returncode == 0 and leaked and "): 0 (" in leaked[0]
                    and "waiting for deletion: 0" in p.stdout):
                break
            if time.time() > deadline:
                raise AssertionError(f"objects of removed files remain:\n{p.stdout}{p.stderr}")
            time.sleep(1)

    def stats(self):
        stop = threading.Event()

        def load():
            i = 0
            while not stop.is_set():
                with open(self.p(f"s{i % 20}"), "wb") as f:
                    f.write(b"z" * 1000)
                os.stat(self.p(f"s{i % 20}"))
                i += 1
        t = threading.Thread(target=load)
        t.start()
        try:
            p = self.fs.cli("stats", self.metrics, "--count", "2", "--interval", "0.5", check=False, timeout=30)
        finally:
            stop.set()
            t.join()
        expect(p.returncode == 0, f"stats exited {p.returncode}: {p.stderr}")
        rows = [l.split() for l in p.stdout.splitlines() if l and not l.startswith("OP")]
        ops = {r[0]: float(r[1]) for r in rows if len(r) >= 3}
        expect(ops.get("write", 0) > 0 and ops.get("flush", 0) > 0,
               f"stats shows no writes/flushes while files are written:\n{p.stdout}")
        p = self.fs.cli("stats", "127.0.0.1:1", "--count", "1", check=False)
        expect(p.returncode != 0, "stats of nothing succeeded")

    def summary(self):
        os.makedirs(self.p("sum", "a"))
        for i in range(5):
            with open(self.p("sum", "a", f"f{i}"), "wb") as f:
                f.write(b"q" * 5000)
        os.makedirs(self.p("sum", "b"))
        for i in range(3):
            open(self.p("sum", "b", f"e{i}"), "wb").close()
        out = self.fs.cli("summary", self.fs.meta_url, "/sum", "--depth", "1").stdout
        rows = {l.split()[0]: l.split() for l in out.splitlines()[1:] if l.strip()}
        expect(rows["/sum"][-2:] == ["3", "8"], f"/sum: {rows.get('/sum')}")
        expect(rows["/sum/a"][-2:] == ["1", "5"] and rows["/sum/a"][1] == "44.0", f"/sum/a: {rows.get('/sum/a')}")
        out = self.fs.cli("summary", self.fs.meta_url, "/sum", "--depth", "1", "--entries", "1").stdout
        expect("/sum/..." in out and "/sum/b" not in out, f"--entries 1 did not fold the rest:\n{out}")

    def clone(self):
        os.makedirs(self.p("cl", "src", "sub"))
        big = os.urandom(5 * 1024 * 1024 + 123)
        with open(self.p("cl", "src", "big"), "wb") as f:
            f.write(big)
        with open(self.p("cl", "src", "sub", "small"), "wb") as f:
            f.write(b"small file")
        os.symlink("big", self.p("cl", "src", "link"))
        out = self.fs.cli("clone", self.p("cl", "src"), self.p("cl", "dst"), "--meta", self.fs.meta_url).stdout
        expect("5 entries cloned" in out, out)
        expect(open(self.p("cl", "dst", "big"), "rb").read() == big, "the clone reads other bytes")
        expect(open(self.p("cl", "dst", "sub", "small"), "rb").read() == b"small file", "clone of sub/small")
        expect(os.readlink(self.p("cl", "dst", "link")) == "big", "clone of a symlink")
        out = self.fs.cli("clone", self.fs.meta_url, "/cl/src/big", "/cl/big2").stdout
        expect("1 entries cloned" in out, out)
        p = self.fs.cli("clone", self.fs.meta_url, "/cl/src/big", "/cl/big2", check=False)
        expect(p.returncode != 0, "clone over an existing name succeeded")
        # Copy-on-write: writing the clone leaves the source as it was.
        with open(self.p("cl", "dst", "big"), "r+b") as f:
            f.seek(1000)
            f.write(b"CHANGED")
        expect(open(self.p("cl", "src", "big"), "rb").read() == big, "a write to the clone changed the source")
        # Removing the source (and waiting for its objects' deletion) leaves the clones whole:
        # fsck checks every object a file refers to exists.
        shutil.rmtree(self.p("cl", "src"))
        self.objects_freed()
        self.fs.fsck()
        want = bytearray(big)
        want[1000:1007] = b"CHANGED"
        expect(open(self.p("cl", "dst", "big"), "rb").read() == bytes(want), "the clone lost data with its source")
        expect(open(self.p("cl", "big2"), "rb").read() == big, "the second clone lost data with its source")

    def config(self):
        out = self.fs.cli("config", self.fs.meta_url, "--trash-days", "2").stdout
        expect("Trash days:  2" in out, out)
        p = self.fs.cli("config", self.fs.meta_url, "--block-size", "1M", check=False)
        expect(p.returncode == 2 and "cannot change" in p.stderr, p.stderr)
        out = self.fs.cli("status", self.fs.meta_url).stdout
        expect("Trash days:  2" in out, f"status after config:\n{out}")


def main():
    args = H.parse_args()
    M.skip_unless_fs(args.strata, "fs_admin")
    runner = H.Runner("fs_admin")
    work = M.make_work_dir("strata-it-fsadmin-")
    srv = H.StrataServer(args.strata)
    fs = None
    mp = os.path.join(work, "mnt")
    try:
        fs = M.new_volume(args.strata, srv, work)
        if not runner.case("format", fs.format, "--trash-days", "0"):
            return runner.finish()
        metrics = f"127.0.0.1:{H.free_port()}"
        if not runner.case("mount", fs.mount, mp, False, None, ("--metrics", metrics)):
            return runner.finish()
        t = AdminCases(fs, mp, metrics)
        for name in ("rmr_on_mount", "rmr_volume_path", "rmr_refuses_foreign_path", "objects_freed", "stats",
                     "summary", "clone", "config"):
            runner.case(name, getattr(t, name))
        runner.case("umount", fs.umount, mp)
        runner.case("fsck clean", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
