#!/usr/bin/python3
"""`strata fs mount --writeback`: a close returns once the data is staged
durably (issue 18), so a closed file survives a power loss of the stage's disk,
not only a crash of the mount.

The stage lives on its own ext4 filesystem (a loop device), so that its power
loss can be simulated exactly: EXT4_IOC_SHUTDOWN with
EXT4_GOING_FLAGS_NOLOGFLUSH (xfstests' `godown`) drops everything neither
written back nor committed to the journal, as a power cut would; unmounting
and mounting it again replays the journal. The metadata (SQLite) and the
object store are on other disks and do not lose power.

  1. mount --writeback --upload-delay 3600 (nothing uploads) with the cache
     directory on the loop filesystem; write and close N small files (1-64
     KiB of random bytes) one after another, no fsync;
  2. at once: power loss of the stage's disk, kill -9 of the mount;
  3. the loop filesystem unmounted and mounted again (journal replay);
  4. remount (without --writeback) on the same cache directory: every closed
     file reads back with its bytes; the stage is uploaded and empties;
  5. the opt-out, `--writeback-no-fsync`, is accepted with --writeback and
     refused without it and together with --writeback-sync.

Before the stage was fdatasynced at close by default, step 4 failed: the
stage files of the closed files came back empty after the power loss.

Usage: /usr/bin/python3 test_fs_writeback_powerloss.py --strata build/strata [--seed N] [--files 200]
Exits 77 (ctest: skipped) only where /dev/fuse is missing, or where this
machine cannot make a loop-mounted ext4 (not root, no loop device, no mkfs.ext4).
"""

import fcntl
import glob
import hashlib
import os
import random
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402

KiB = 1024
EXT4_IOC_SHUTDOWN = 0x8004587D          # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 0x2       # neither data nor the journal is flushed


def extra_args(p):
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--files", type=int, default=200)


class LoopDisk:
    """A 256 MiB ext4 image mounted through a loop device."""

    def __init__(self, work):
        self.img = os.path.join(work, "stage-disk.img")
        self.mp = os.path.join(work, "stage-disk")
        self.mounted = False

    def make(self):
        os.makedirs(self.mp, exist_ok=True)
        with open(self.img, "wb") as f:
            f.truncate(256 << 20)
        p = subprocess.run(["/usr/sbin/mkfs.ext4", "-q", "-F", self.img], capture_output=True, text=True)
        if p.returncode != 0:
            return f"mkfs.ext4: {p.stderr.strip()}"
        return self.mount()

    def mount(self):
        p = subprocess.run(["/usr/bin/mount", "-o", "loop", self.img, self.mp], capture_output=True, text=True)
        if p.returncode != 0:
            return f"mount -o loop: {p.stderr.strip()}"
        self.mounted = True
        return None

    def power_loss(self):
        fd = os.open(self.mp, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
        finally:
            os.close(fd)

    def umount(self):
        if self.mounted:
            for _ in range(50):
                if subprocess.run(["/usr/bin/umount", self.mp], capture_output=True).returncode == 0:
                    break
                time.sleep(0.2)
            else:
                subprocess.run(["/usr/bin/umount", "-l", self.mp], capture_output=True)
            self.mounted = False


def can_loop_mount(work):
    if os.geteuid() != 0:
        return "not root"
    if not os.access("/usr/sbin/mkfs.ext4", os.X_OK):
        return "/usr/sbin/mkfs.ext4 missing (Debian e2fsprogs)"
    probe = LoopDisk(work)
    why = probe.make()
    probe.umount()
    return why


class PowerLoss:
    def __init__(self, fs, work, seed, nfiles):
        self.fs, self.disk = fs, LoopDisk(work)
        self.mp = os.path.join(work, "mnt")
        self.cache = os.path.join(self.disk.mp, "cache")
        self.rng = random.Random(seed)
        self.nfiles = nfiles
        self.files = {}

    def stage(self):
        return [n for d in glob.glob(os.path.join(self.cache, "*", "staging"))
                for n in os.listdir(d) if n != "LOCK"]

    def mount_and_write(self):
        why = self.disk.make()
        assert why is None, why
        self.fs.mount(self.mp, background=False, cache_dir=self.cache,
                      extra=("--writeback", "--upload-delay", "3600"))
        os.makedirs(os.path.join(self.mp, "d"), exist_ok=True)
        for i in range(self.nfiles):
            data = self.rng.randbytes(self.rng.randint(1 * KiB, 64 * KiB))
            rel = f"d/f{i:04d}"
            with open(os.path.join(self.mp, rel), "wb") as f:
                f.write(data)
            self.files[rel] = hashlib.sha256(data).hexdigest()
        staged = self.stage()
        assert len(staged) >= self.nfiles, f"{len(staged)} blocks staged for {self.nfiles} closed files"

    def power_loss_and_kill(self):
        self.disk.power_loss()
        assert self.fs.kill9(self.mp), "no mount process found to kill"
        assert M.force_unmount(self.mp), "could not clean the dead mount"
        self.disk.umount()
        why = self.disk.mount()   # the journal replayed: what a reboot finds
        assert why is None, why

    def remount_and_check(self):
        self.fs.mount(self.mp, background=False, cache_dir=self.cache)
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
        assert not bad, (f"{len(bad)} of {len(self.files)} closed files lost with the stage's power:\n  " +
                         "\n  ".join(bad[:10]))
        deadline = time.time() + 120
        while self.stage() and time.time() < deadline:
            time.sleep(0.2)
        assert not self.stage(), f"{len(self.stage())} blocks still staged 120 s after the remount"
        print(f"     {len(self.files)} files intact, stage uploaded", flush=True)

    def opt_out_flag(self):
        self.fs.umount(self.mp)
        self.fs.mount(self.mp, background=False, cache_dir=self.cache, extra=("--writeback", "--writeback-no-fsync"))
        with open(os.path.join(self.mp, "d", "nofsync"), "wb") as f:
            f.write(b"x" * 5000)
        with open(os.path.join(self.mp, "d", "nofsync"), "rb") as f:
            assert f.read() == b"x" * 5000
        self.fs.umount(self.mp)
        for extra in (["--writeback-no-fsync"], ["--writeback", "--writeback-sync", "--writeback-no-fsync"]):
            p = subprocess.run([self.fs.binary, "fs", "mount", self.fs.meta_url, self.mp, "--cache-dir",
                                self.cache, "--background", *extra], capture_output=True, text=True,
                               timeout=60, env=self.fs.env)
            mounted = M.is_fuse_mounted(self.mp)
            M.force_unmount(self.mp, quiet=True)
            assert p.returncode != 0 and not mounted, f"mount {' '.join(extra)} was accepted (rc {p.returncode})"
            assert "--writeback" in p.stdout + p.stderr, f"no clear error: {(p.stdout + p.stderr)[-500:]}"

    def close(self):
        if M.is_fuse_mounted(self.mp):
            M.force_unmount(self.mp, quiet=True)
        self.disk.umount()


def main():
    args = H.parse_args(extra_args)
    M.skip_unless_fs(args.strata, "fs_writeback_powerloss")
    work = M.make_work_dir("strata-it-fswbpl-")
    why = can_loop_mount(work)
    if why:
        M.remove_work_dir(work)
        print(f"SKIP fs_writeback_powerloss: cannot make a loop-mounted ext4 here ({why}); "
              f"exit {M.SKIP_RC} = skipped", flush=True)
        return M.SKIP_RC
    seed = M.pick_seed(args, "STRATA_FS_WRITEBACK_SEED")
    runner = H.Runner("fs_writeback_powerloss")
    srv = H.StrataServer(args.strata)
    fs = None
    pl = None
    try:
        fs = M.new_volume(args.strata, srv, work)
        if not runner.case("format", fs.format):
            return runner.finish()
        pl = PowerLoss(fs, work, seed, args.files)
        if not runner.case(f"mount --writeback, {args.files} small files closed", pl.mount_and_write):
            return runner.finish()
        if not runner.case("power loss of the stage's disk, kill -9 of the mount", pl.power_loss_and_kill):
            return runner.finish()
        if runner.case("remount: every closed file intact, stage uploaded", pl.remount_and_check):
            runner.case("--writeback-no-fsync: accepted with --writeback only", pl.opt_out_flag)
            runner.case("fsck", fs.fsck)
    finally:
        if pl is not None:
            pl.close()
        M.teardown(runner, fs, srv, work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
