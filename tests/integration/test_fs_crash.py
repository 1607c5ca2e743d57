#!/usr/bin/python3
"""kill -9 of the Strata FS mount process in the middle of writes, three times.

Each round: mount (foreground process, SQLite metadata, our S3 server), write
files and fsync them (plus a rename made durable by fsyncing the directory),
start a writer process that keeps writing, appending and renaming without
fsync, SIGKILL the mount process after a random delay, clean the dead mount
(fusermount3 -uz), run `strata fs fsck` on what the crash left, remount with
the local cache wiped, and check that every file fsynced in this round and the
rounds before is intact byte for byte, and that every other file reads without
error. At the end: umount and fsck once more.

With --engine postgres the metadata is on a throwaway PostgreSQL (started by
the test, fs_mount.PostgresServer) instead of SQLite: the killed mount's
session is left in the database, its transactions in flight are rolled back
by the server.

Usage: /usr/bin/python3 test_fs_crash.py --strata build/strata [--seed N] [--rounds 3]
       [--engine sqlite|postgres]
Prints STRATA_FS_CRASH_SEED=...; exits 77 (ctest: skipped) only where
/dev/fuse is missing (or, with --engine postgres, Debian's postgresql).
"""

import hashlib
import os
import random
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
import fs_posix_suite as S  # noqa: E402

MiB = 1024 * 1024


def extra_args(p):
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")


def fsync_dir(d):
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_write(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def busy_writer(d, seed):
    """Child process: writes without fsync until killed (or the mount dies)."""
    rng = random.Random(seed)
    i = 0
    try:
        os.makedirs(d, exist_ok=True)
        while True:
            p = os.path.join(d, f"unsynced-{i}")
            with open(p, "wb") as f:
                for _ in range(rng.randint(1, 12)):
                    f.write(rng.randbytes(rng.choice([4096, 256 * 1024, 1 * MiB])))
            with open(os.path.join(d, "appendlog"), "ab") as f:
                f.write(b"line %d\n" % i)
            if i % 3 == 0:
                os.rename(p, p + ".renamed")
            i += 1
    except OSError:
        pass   # ENOTCONN etc. once the daemon is gone
    finally:
        os._exit(0)


class Crash:
    def __init__(self, fs, mp, cache, seed):
        self.fs, self.mp, self.cache = fs, mp, cache
        self.rng = random.Random(seed)
        self.seed = seed
        self.durable = {}     # relative path -> sha256 of the fsynced contents
        self.others = set()   # relative paths of directories with unsynced files

    def mount(self):
        shutil.rmtree(self.cache, ignore_errors=True)
        self.fs.mount(self.mp, background=False, cache_dir=self.cache)

    def round(self, r):
        rng = self.rng
        base = os.path.join(self.mp, f"round{r}")
        os.makedirs(os.path.join(base, "synced"))
        fsync_dir(self.mp)
        fsync_dir(base)
        sizes = [0, 1, 4095, 4 * MiB, 4 * MiB + 1, rng.randint(1, 9 * MiB), rng.randint(5 * MiB, 20 * MiB)]
        for k, n in enumerate(sizes):
            data = rng.randbytes(n)
            rel = f"round{r}/synced/f{k}"
            durable_write(os.path.join(self.mp, rel), data)
            self.durable[rel] = hashlib.sha256(data).hexdigest()
        # A rename made durable with the directory's fsync.
        data = rng.randbytes(123_456)
        durable_write(os.path.join(base, "tmpname"), data)
        os.rename(os.path.join(base, "tmpname"), os.path.join(base, "synced", "renamed"))
        fsync_dir(os.path.join(base, "synced"))
        fsync_dir(base)
        self.durable[f"round{r}/synced/renamed"] = hashlib.sha256(data).hexdigest()
        # An earlier round's durable file rewritten in place and fsynced.
        prev = [p for p in self.durable if not p.startswith(f"round{r}/")]
        if prev:
            rel = rng.choice(sorted(prev))
            data = rng.randbytes(rng.randint(0, 3 * MiB))
            durable_write(os.path.join(self.mp, rel), data)
            self.durable[rel] = hashlib.sha256(data).hexdigest()
        # Unsynced writes: only "readable without error" is checked for them.
        unsynced_dir = os.path.join(base, "unsynced")
        self.others.add(f"round{r}/unsynced")
        pid = os.fork()
        if pid == 0:
            busy_writer(unsynced_dir, self.seed * 100 + r)
        delay = rng.uniform(0.3, 1.5)
        time.sleep(delay)
        killed = self.fs.kill9(self.mp)
        print(f"  round {r}: killed mount pids {killed} after {delay:.2f}s of unsynced writes", flush=True)
        assert killed, "no mount process found to kill"
        deadline = time.time() + 30
        while time.time() < deadline:
            wpid, _ = os.waitpid(pid, os.WNOHANG)
            if wpid:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("writer process hung after the mount process was killed")
        assert M.force_unmount(self.mp), "could not clean the dead mount with fusermount3 -uz"

    def verify(self):
        bad = []
        for rel, want in sorted(self.durable.items()):
            try:
                with open(os.path.join(self.mp, rel), "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                bad.append(f"{rel}: {e}")
                continue
            if got != want:
                bad.append(f"{rel}: contents differ from what was fsynced")
        unsynced = 0
        for rel in sorted(self.others):
            d = os.path.join(self.mp, rel)
            if not os.path.isdir(d):
                continue   # the mkdir itself was not made durable
            for name in os.listdir(d):
                try:
                    with open(os.path.join(d, name), "rb") as f:
                        while f.read(4 * MiB):
                            pass
                    unsynced += 1
                except OSError as e:
                    bad.append(f"{rel}/{name} (unsynced) unreadable: {e}")
        dead = S.mount_dead(self.mp)
        if dead:
            bad.insert(0, f"the remounted filesystem died while being read ({dead}); see its log below")
        assert not bad, f"{len(bad)} problems after the crash (seed {self.seed}):\n  " + "\n  ".join(bad[:20])
        print(f"     {len(self.durable)} fsynced files intact, {unsynced} unsynced files readable", flush=True)


def main():
    args = H.parse_args(extra_args)
    M.skip_unless_fs(args.strata, "fs_crash")
    if args.engine == "postgres" and M.postgres_bin_dir() is None:
        print("SKIP fs_crash: no /usr/lib/postgresql/*/bin (Debian postgresql)", flush=True)
        return M.SKIP_RC
    seed = M.pick_seed(args, "STRATA_FS_CRASH_SEED")
    runner = H.Runner("fs_crash" if args.engine == "sqlite" else f"fs_crash_{args.engine}")
    work = M.make_work_dir("strata-it-fscrash-")
    srv = H.StrataServer(args.strata)
    pg = M.PostgresServer(work) if args.engine == "postgres" else None
    fs = None
    mp = os.path.join(work, "mnt")
    try:
        if pg is None:
            fs = M.new_volume(args.strata, srv, work)
        else:
            srv.start()
            pg.start()
            fs = M.StrataFS(args.strata, srv, work, pg.url("v1"))
            fs.create_bucket()
        if not runner.case("format", fs.format):
            return runner.finish()
        c = Crash(fs, mp, os.path.join(work, "cache"), seed)
        if not runner.case("mount", c.mount):
            return runner.finish()
        for r in range(1, args.rounds + 1):
            if not runner.case(f"round {r}: fsync, write, kill -9", c.round, r):
                break
            runner.case(f"round {r}: fsck after the crash", fs.fsck)
            if not runner.case(f"round {r}: remount", c.mount):
                break
            runner.case(f"round {r}: fsynced data intact", c.verify)
            if S.mount_dead(mp):
                print("the mount died; no further rounds", flush=True)
                break
        if fs.mounts:
            runner.case("umount", fs.umount, mp)
            runner.case("final fsck", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work, *([pg] if pg else []))
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
