#!/usr/bin/python3
"""`strata fs objbench` and `strata fs sync` (as `juicefs objbench` / `juicefs sync`):

- objbench against file:// and against a Strata server (s3://) with small
  counts: every functional check passes, the table has a row per phase with
  the counts asked for, and nothing is left under its prefix (an object that
  was in the bucket before is still there); against a missing bucket it fails
  with a non-zero exit and says why;
- sync local dir -> s3://bucket/prefix -> another local dir: the trees are
  equal (--exclude honoured), a second run copies nothing; then files are
  changed, added and removed and --delete-dst makes both copies equal again;
- sync dir -> dir (what a mounted volume's path is): equal trees, a second run
  copies nothing, --dry-run changes nothing, --delete-dst removes extras,
  --check-all finds a change that keeps size and mtime; overlapping trees
  (DST inside SRC, SRC inside DST) are refused with exit 2;
- a mounted Strata FS volume as a side (where /dev/fuse exists): local dir ->
  volume -> s3:// -> local dir, --delete-dst on the volume, fsck clean.

Usage: /usr/bin/python3 test_fs_objbench_sync.py --strata build/strata
"""

import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402

BUCKET = "objsync"


def tree_digest(root):
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_tree(root):
    write(os.path.join(root, "a.txt"), b"alpha\n")
    write(os.path.join(root, "sub", "b.bin"), os.urandom(300_000))
    write(os.path.join(root, "sub", "deep", "c.txt"), b"c" * 1000)
    write(os.path.join(root, "sub", "skip.tmp"), b"excluded")
    write(os.path.join(root, "empty"), b"")


class Cases:
    def __init__(self, srv, strata, work):
        self.srv, self.strata, self.work = srv, strata, work
        self.s3 = srv.client()
        self.env = H.clean_env({
            "HOME": work,
            "AWS_ACCESS_KEY_ID": srv.access_key,
            "AWS_SECRET_ACCESS_KEY": srv.secret_key,
            "AWS_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.path.join(work, "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": os.path.join(work, "no-aws-credentials"),
        })

    def run(self, *args, expect=0):
        cmd = [self.strata, "fs", *args]
        print("$", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=self.env, capture_output=True, timeout=120)
        p.out, p.err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        shown = (p.out + p.err).splitlines()
        print("\n".join("  | " + l for l in shown[-40:]), flush=True)
        if expect is not None:
            assert p.returncode == expect, f"exit {p.returncode}, expected {expect}: {p.err[-1500:]}"
        return p

    def s3_url(self, bucket=BUCKET, prefix=""):
        q = (f"endpoint={self.srv.endpoint}&region=us-east-1&access_key={self.srv.access_key}"
             f"&secret_key={self.srv.secret_key}")
        return f"s3://{bucket}{'/' + prefix if prefix else ''}?{q}"

    def keys(self, prefix=""):
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    # -- objbench
    def check_table(self, out, nblocks, nsmall):
        for item, n in [("put big object", nblocks), ("get big object", nblocks),
                        ("put small objects", nsmall), ("get small objects", nsmall),
                        ("head small objects", nsmall), ("list objects (100/page)", (nsmall + 99) // 100),
                        ("delete small objects", nsmall), ("delete big object", nblocks)]:
            rows = [l for l in out.splitlines() if l.startswith(item + " ")]
            assert len(rows) == 1, f"no single row {item!r} in:\n{out}"
            cols = rows[0][len(item):].split()
            assert int(cols[0]) == n, f"{item}: {cols[0]} ops, expected {n}"
            assert float(cols[1]) > 0, f"{item}: ops/s {cols[1]}"
            assert "FAILED" not in rows[0], rows[0]
        fun = out.split("Functional tests:")[1].split("Benchmark:")[0]
        checks = [l for l in fun.splitlines() if l.strip()]
        assert len(checks) >= 7 and all(l.rstrip().endswith(" ok") for l in checks), fun
        assert "Cleaned up: nothing left" in out, out

    def objbench_file(self):
        d = os.path.join(self.work, "store")
        url = f"file://{d}?bucket=bench"
        p = self.run("objbench", url, "--big-object-size", "5M", "--block-size", "1M",
                     "--small-objects", "120", "--small-object-size", "8K", "--threads", "4")
        self.check_table(p.out, 5, 120)
        # Nothing under the bucket: the engine lists no objects.
        p = self.run("objbench", url, "--skip-functional-tests", "--big-object-size", "0",
                     "--small-objects", "1", "--small-object-size", "1K")
        assert "Functional tests:" not in p.out, p.out

    def objbench_s3(self):
        self.s3.create_bucket(Bucket=BUCKET)
        self.s3.put_object(Bucket=BUCKET, Key="keep-me", Body=b"precious")
        p = self.run("objbench", self.s3_url(), "--big-object-size", "6M", "--block-size", "2M",
                     "--small-objects", "150", "--small-object-size", "4K", "--threads", "8")
        self.check_table(p.out, 3, 150)
        assert self.keys() == ["keep-me"], f"left behind: {self.keys()}"
        assert self.s3.get_object(Bucket=BUCKET, Key="keep-me")["Body"].read() == b"precious"
        self.s3.delete_object(Bucket=BUCKET, Key="keep-me")

    def objbench_missing_bucket(self):
        p = self.run("objbench", self.s3_url("no-such-bucket-here"), "--small-objects", "2",
                     "--big-object-size", "1M", "--block-size", "1M", expect=None)
        assert p.returncode != 0, "objbench against a missing bucket succeeded"
        text = p.out + p.err
        assert "FAILED" in text or "strata fs objbench:" in p.err, text
        assert "no benchmark" in p.out and "put big object" not in p.out, p.out
        assert "NoSuchBucket" in text or "not found" in text.lower() or "no such" in text.lower(), text

    # -- sync through a bucket
    def sync_via_bucket(self):
        a, b = os.path.join(self.work, "A"), os.path.join(self.work, "B")
        make_tree(a)
        bucket = f"s3://{BUCKET}/ds"
        ep = ["--endpoint-url", self.srv.endpoint]
        self.run("sync", a, bucket, "--exclude", "*.tmp", "--threads", "4", *ep)
        assert self.keys("ds/") == ["ds/a.txt", "ds/empty", "ds/sub/b.bin", "ds/sub/deep/c.txt"], self.keys()
        self.run("sync", bucket, b, *ep)
        want = {k: v for k, v in tree_digest(a).items() if not k.endswith(".tmp")}
        assert tree_digest(b) == want, (tree_digest(b), want)
        # A second run has nothing to copy.
        p = self.run("sync", a, bucket, "--exclude", "*.tmp", *ep)
        assert "upload:" not in p.out, p.out
        # Change one, add one, remove one; --delete-dst on both legs.
        write(os.path.join(a, "a.txt"), b"alpha, longer now\n")
        write(os.path.join(a, "new", "n.txt"), b"new file")
        os.unlink(os.path.join(a, "sub", "deep", "c.txt"))
        p = self.run("sync", a, bucket, "--exclude", "*.tmp", "--delete-dst", "--dry-run", *ep)
        assert self.keys("ds/") == ["ds/a.txt", "ds/empty", "ds/sub/b.bin", "ds/sub/deep/c.txt"], \
            "--dry-run changed the bucket"
        self.run("sync", a, bucket, "--exclude", "*.tmp", "--delete-dst", *ep)
        assert self.keys("ds/") == ["ds/a.txt", "ds/empty", "ds/new/n.txt", "ds/sub/b.bin"], self.keys()
        self.run("sync", bucket, b, "--delete-dst", *ep)
        want = {k: v for k, v in tree_digest(a).items() if not k.endswith(".tmp")}
        assert tree_digest(b) == want, (tree_digest(b), want)

    # -- sync directory to directory
    def sync_dirs(self):
        a, c = os.path.join(self.work, "A2"), os.path.join(self.work, "C")
        make_tree(a)
        p = self.run("sync", a, c, "--exclude", "*.tmp", "--include", "keep*.tmp")
        want = {k: v for k, v in tree_digest(a).items() if not k.endswith(".tmp")}
        assert tree_digest(c) == want, (tree_digest(c), want)
        assert "Copied 4 files" in p.out, p.out
        st_a, st_c = os.stat(os.path.join(a, "sub", "b.bin")), os.stat(os.path.join(c, "sub", "b.bin"))
        assert int(st_a.st_mtime) == int(st_c.st_mtime), "mtime not kept"
        p = self.run("sync", a, c, "--exclude", "*.tmp")
        assert "Copied 0 files (0 bytes), skipped 4" in p.out, p.out
        # Changes; --dry-run first.
        write(os.path.join(a, "a.txt"), b"changed!")
        os.unlink(os.path.join(a, "empty"))
        write(os.path.join(c, "extra", "x"), b"only in dst")
        before = tree_digest(c)
        p = self.run("sync", a, c, "--exclude", "*.tmp", "--delete-dst", "--dry-run")
        assert tree_digest(c) == before, "--dry-run changed DST"
        assert "Would copy 1 files" in p.out and "delete 2" in p.out, p.out
        p = self.run("sync", a, c, "--exclude", "*.tmp", "--delete-dst")
        want = {k: v for k, v in tree_digest(a).items() if not k.endswith(".tmp")}
        assert tree_digest(c) == want, (tree_digest(c), want)
        assert "deleted 2" in p.out, p.out
        # Same size, same mtime, other bytes: only --check-all sees it.
        src = os.path.join(a, "sub", "deep", "c.txt")
        st = os.stat(src)
        write(src, b"d" * 1000)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        p = self.run("sync", a, c, "--exclude", "*.tmp")
        assert "Copied 0 files" in p.out, p.out
        p = self.run("sync", a, c, "--exclude", "*.tmp", "--check-all")
        assert "Copied 1 files" in p.out, p.out
        assert tree_digest(c) == {k: v for k, v in tree_digest(a).items() if not k.endswith(".tmp")}
        p = self.run("sync", os.path.join(a, "a.txt"), c, expect=2)
        # Overlapping trees are refused before anything changes.
        before = tree_digest(a)
        p = self.run("sync", os.path.join(a, "sub"), a, "--delete-dst", expect=2)
        assert "overlap" in p.err, p.err
        p = self.run("sync", a, os.path.join(a, "copy"), expect=2)
        assert tree_digest(a) == before, "a refused sync changed SRC"

    # -- a mounted volume as a side (needs /dev/fuse)
    def sync_volume(self):
        if not os.path.exists("/dev/fuse"):
            print("     no /dev/fuse: the mounted-volume case is not run here", flush=True)
            return
        work = M.make_work_dir("strata-it-fssync-")
        fs = M.StrataFS(self.strata, self.srv, work, f"sqlite3://{work}/meta.db", bucket="fssyncvol")
        mp = os.path.join(work, "mnt")
        try:
            fs.create_bucket()
            fs.format()
            fs.mount(mp)
            a, d = os.path.join(self.work, "A3"), os.path.join(self.work, "D")
            make_tree(a)
            vol = os.path.join(mp, "data")
            p = self.run("sync", a, vol)
            assert "failed 0" in p.out and tree_digest(vol) == tree_digest(a), (tree_digest(vol), tree_digest(a))
            p = self.run("sync", a, vol)
            assert "Copied 0 files" in p.out, p.out
            ep = ["--endpoint-url", self.srv.endpoint]
            self.run("sync", vol, f"s3://{BUCKET}/fromvol", *ep)
            self.run("sync", f"s3://{BUCKET}/fromvol", d, *ep)
            assert tree_digest(d) == tree_digest(a), (tree_digest(d), tree_digest(a))
            os.unlink(os.path.join(a, "sub", "b.bin"))
            p = self.run("sync", a, vol, "--delete-dst")
            assert "deleted 1" in p.out and tree_digest(vol) == tree_digest(a), p.out
            fs.umount(mp)
            fs.fsck()
        finally:
            fs.cleanup()
            M.remove_work_dir(work)


def main():
    args = H.parse_args()
    runner = H.Runner("fs_objbench_sync")
    srv = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    try:
        srv.start()
        with H.tempdir() as work:
            t = Cases(srv, os.path.abspath(args.strata), work)
            for name in ["objbench_file", "objbench_s3", "objbench_missing_bucket", "sync_via_bucket", "sync_dirs",
                         "sync_volume"]:
                runner.case(name, getattr(t, name))
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
