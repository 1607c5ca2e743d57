#!/usr/bin/python3
"""`strata fs mount --writeback`: closed files survive a kill -9 of the mount
while their uploads are pending, and the staged blocks reach the object store.

Our S3 server, SQLite metadata, one foreground mount with --writeback and a
upload delay of an hour (--upload-delay) so that no upload happens
before the kill:
  1. write 500 small files (1-64 KiB of random bytes), closing each; they read
     back from the mount; the stage directory holds their blocks and the bucket
     none of them (the uploads are pending);
  2. `fsck` without the cache directory reports the staged blocks missing
     from the object store; with `--cache-dir` it is clean;
  3. kill -9 the mount; plant an unreferenced stage file (a crash between the
     stage and the metadata commit) and a temp file of an interrupted stage;
  4. remount (without --writeback): every closed file has its bytes; the stage empties;
     every staged block is an object in the bucket; the planted files are
     gone and the unreferenced block was not uploaded; fsck is clean;
  5. with a 128 KiB --writeback-limit and uploads held: what does not fit
     the stage is uploaded at close, every file reads back;
  6. kill -9 that mount, remount with --writeback: files intact, the old
     stage uploaded;
  7. with the upload delay again, write more files and unmount cleanly: the
     unmount uploads the stage (umount drains), fsck is clean.

Usage: /usr/bin/python3 test_fs_writeback.py --strata build/strata [--seed N] [--files 500]
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import glob
import hashlib
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402

KiB = 1024
HOLD = ["--upload-delay", "3600"]   # an hour: nothing uploads before the kill
ORPHAN = "987654321_0_10"                          # a slice id no file references


def extra_args(p):
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--files", type=int, default=500)


class WB:
    def __init__(self, fs, mp, cache, seed, nfiles):
        self.fs, self.mp, self.cache = fs, mp, cache
        self.rng = random.Random(seed)
        self.nfiles = nfiles
        self.files = {}          # relative path -> sha256
        self.staged_names = set()

    def stage_dir(self):
        dirs = glob.glob(os.path.join(self.cache, "*", "staging"))
        assert len(dirs) == 1, f"expected one stage directory under {self.cache}, found {dirs}"
        return dirs[0]

    def staged(self):
        return {n for n in os.listdir(self.stage_dir()) if n != "LOCK" and not n.endswith(".tmp")}

    def bucket_block_names(self):
        c = self.fs.server.client()
        names = set()
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=self.fs.bucket):
            for o in page.get("Contents", []):
                if "/chunks/" in o["Key"]:
                    names.add(o["Key"].rsplit("/", 1)[1])
        return names

    def mount(self, *extra):
        self.fs.mount(self.mp, background=False, cache_dir=self.cache, extra=("--writeback", *extra))

    def write_files(self, sub, n):
        d = os.path.join(self.mp, sub)
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            data = self.rng.randbytes(self.rng.randint(1 * KiB, 64 * KiB))
            rel = f"{sub}/f{i:04d}"
            with open(os.path.join(self.mp, rel), "wb") as f:
                f.write(data)
            self.files[rel] = hashlib.sha256(data).hexdigest()

    def check_files(self):
        bad = []
        for rel, want in sorted(self.files.items()):
            try:
                with open(os.path.join(self.mp, rel), "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                bad.append(f"{rel}: {e}")
                continue
            if got != want:
                bad.append(f"{rel}: bytes differ from what was written and closed")
        assert not bad, f"{len(bad)} of {len(self.files)} files wrong:\n  " + "\n  ".join(bad[:20])
        print(f"     {len(self.files)} files intact", flush=True)

    def write_and_hold(self):
        self.write_files("small", self.nfiles)
        self.check_files()   # read back while staged: served from the stage
        self.staged_names = self.staged()
        assert len(self.staged_names) >= self.nfiles, \
            f"{len(self.staged_names)} blocks staged for {self.nfiles} closed files"
        uploaded = self.bucket_block_names() & self.staged_names
        assert not uploaded, f"{len(uploaded)} blocks uploaded despite the upload delay"
        print(f"     {len(self.staged_names)} blocks staged, none in the bucket", flush=True)

    def fsck_sees_stage(self):
        p = self.fs.cli("fsck", self.fs.meta_url, check=False, timeout=300)
        out = p.stdout + p.stderr
        assert p.returncode != 0 and "missing" in out, \
            f"fsck without the cache directory should report the unuploaded blocks missing:\n{out[-2000:]}"
        p = self.fs.cli("fsck", self.fs.meta_url, "--cache-dir", self.cache, check=False, timeout=300)
        out = p.stdout + p.stderr
        assert p.returncode == 0, f"fsck --cache-dir exited {p.returncode}:\n{out[-2000:]}"
        assert "staged" in out, f"fsck --cache-dir does not mention the staged blocks:\n{out[-2000:]}"

    def kill_and_plant(self):
        killed = self.fs.kill9(self.mp)
        assert killed, "no mount process found to kill"
        assert M.force_unmount(self.mp), "could not clean the dead mount"
        left = self.staged()
        assert left >= self.staged_names, "staged blocks vanished with the crash"
        d = self.stage_dir()
        with open(os.path.join(d, ORPHAN), "wb") as f:
            f.write(b"0123456789")
        with open(os.path.join(d, "5_0_3.tmp"), "wb") as f:
            f.write(b"abc")

    def remount_and_drain(self):
        # Without --writeback: a plain mount of the cache directory uploads
        # what a crashed writeback mount left staged.
        self.fs.mount(self.mp, background=False, cache_dir=self.cache)
        self.check_files()
        deadline = time.time() + 120
        while self.staged() and time.time() < deadline:
            time.sleep(0.2)
        left = self.staged()
        assert not left, f"{len(left)} blocks still staged 120 s after the remount: {sorted(left)[:5]}"
        names = os.listdir(self.stage_dir())
        assert not [n for n in names if n.endswith(".tmp")], f"temp files left in the stage: {names}"
        in_bucket = self.bucket_block_names()
        missing = self.staged_names - in_bucket
        assert not missing, f"{len(missing)} staged blocks never reached the bucket: {sorted(missing)[:5]}"
        assert ORPHAN not in in_bucket, "an unreferenced staged block was uploaded"
        print(f"     stage empty, {len(self.staged_names)} blocks in the bucket", flush=True)

    def limit_falls_back(self):
        """A full stage (--writeback-limit) makes closes upload synchronously:
        every file still correct, the stage within its limit, the rest of the
        blocks already in the bucket while uploads are held."""
        self.fs.umount(self.mp)
        self.mount("--writeback-limit", "128K", *HOLD)
        before = set(self.files)
        self.write_files("limited", 30)
        new = [r for r in self.files if r not in before]
        d = self.stage_dir()
        held = self.staged()
        staged_bytes = sum(os.path.getsize(os.path.join(d, n)) for n in held)
        assert 0 < staged_bytes <= 128 * KiB, f"{staged_bytes} bytes staged with a 128 KiB limit"
        in_bucket = self.bucket_block_names()
        assert len(in_bucket - self.staged_names) >= len(new) - len(held), \
            f"{len(new)} files, {len(held)} staged, but only {len(in_bucket - self.staged_names)} new objects"
        self.check_files()
        print(f"     {len(held)} blocks ({staged_bytes} bytes) staged, the rest uploaded at close", flush=True)

    def crash_then_writeback_remount(self):
        """kill -9 again (blocks held in the stage), remount with --writeback:
        the new writeback mount uploads the old stage too."""
        held = self.staged()
        assert held, "nothing staged before the second crash"
        self.fs.kill9(self.mp)
        assert M.force_unmount(self.mp), "could not clean the dead mount"
        self.mount()
        self.check_files()
        deadline = time.time() + 120
        while self.staged() and time.time() < deadline:
            time.sleep(0.2)
        assert not self.staged(), "stage not empty 120 s after the remount"
        missing = held - self.bucket_block_names()
        assert not missing, f"{len(missing)} blocks of the second crash never reached the bucket"

    def umount_drains(self):
        self.fs.umount(self.mp)
        self.mount(*HOLD)
        self.write_files("more", 40)
        held = self.staged()
        assert len(held) >= 40, f"{len(held)} blocks staged for 40 files"
        self.fs.umount(self.mp, timeout=120)
        left = self.staged()
        assert not left, f"{len(left)} blocks still staged after a clean unmount"
        missing = held - self.bucket_block_names()
        assert not missing, f"{len(missing)} blocks not uploaded by the unmount"


def main():
    args = H.parse_args(extra_args)
    M.skip_unless_fs(args.strata, "fs_writeback")
    seed = M.pick_seed(args, "STRATA_FS_WRITEBACK_SEED")
    runner = H.Runner("fs_writeback")
    work = M.make_work_dir("strata-it-fswb-")
    srv = H.StrataServer(args.strata)
    fs = None
    mp = os.path.join(work, "mnt")
    try:
        fs = M.new_volume(args.strata, srv, work)
        if not runner.case("format", fs.format):
            return runner.finish()
        w = WB(fs, mp, os.path.join(work, "cache"), seed, args.files)
        if not runner.case("mount --writeback (uploads held)", w.mount, *HOLD):
            return runner.finish()
        if not runner.case(f"write and close {args.files} small files; all staged", w.write_and_hold):
            return runner.finish()
        runner.case("fsck: staged blocks missing without --cache-dir, clean with it", w.fsck_sees_stage)
        if not runner.case("kill -9 the mount with uploads pending", w.kill_and_plant):
            return runner.finish()
        if not runner.case("remount (plain): files intact, stage uploaded", w.remount_and_drain):
            return runner.finish()
        runner.case("fsck after the uploads", fs.fsck)
        runner.case("--writeback-limit: a full stage uploads at close", w.limit_falls_back)
        runner.case("kill -9 again, remount --writeback: old stage uploaded", w.crash_then_writeback_remount)
        runner.case("clean unmount uploads the stage", w.umount_drains)
        runner.case("final fsck", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
