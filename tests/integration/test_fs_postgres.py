#!/usr/bin/python3
"""Strata FS on PostgreSQL metadata (a throwaway PostgreSQL, started by the
test: initdb in the work directory, postgres on a free loopback port): the
two-mount cases of test_fs_redis.py (close-to-open both ways, namespace
changes, open-descriptor coherence, replaced names, flock and fcntl locks
across mounts, POSIX ACLs), flock right after a close, the POSIX suite (fs_posix_suite.py) and the
randomized sequences (fs_randomized.py) on one of the mounts, `strata fs
fsck`, then `strata fs dump` / `load` from PostgreSQL to SQLite to Redis and
back to PostgreSQL, each dump equal to the first.

Usage: /usr/bin/python3 test_fs_postgres.py --strata build/strata [--only CASE,...] [--seed N]
Exits 77 (ctest: skipped) where /dev/fuse is missing, or the PostgreSQL
binaries (Debian's postgresql: /usr/lib/postgresql/*/bin) are not installed.
"""

import errno
import fcntl
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
import fs_posix_suite as S  # noqa: E402
import fs_randomized as R  # noqa: E402
from fs_posix_suite import expect, read_file, write_file  # noqa: E402
from test_fs_redis import CASES, TwoMounts  # noqa: E402


def extra_args(p):
    p.add_argument("--only", default="", help="comma-separated cases: two-mount cases, "
                                              "flock_right_after_close, posix, randomized, "
                                              "dump_load (default: all)")
    p.add_argument("--seed", type=int, default=None)


def dump_load_chain(fs, work, pg, redis):
    """postgres -> sqlite -> redis -> postgres: every dump equal to the first."""
    first = os.path.join(work, "dump-0.json")
    fs.cli("dump", fs.meta_url, first)
    text = open(first, "rb").read()
    expect(len(text) > 100, "the dump of the postgres volume is empty")
    chain = [f"sqlite3://{work}/loaded.db", redis.url(3), pg.url("v2")]
    prev = first
    for i, url in enumerate(chain, 1):
        fs.cli("load", url, prev)
        out = os.path.join(work, f"dump-{i}.json")
        fs.cli("dump", url, out)
        got = open(out, "rb").read()
        expect(got == text, f"dump after loading into {url.split(':')[0]} differs from the first "
                            f"({len(got)} vs {len(text)} bytes)")
        p = fs.cli("fsck", url, check=False, timeout=300)
        expect(p.returncode == 0, f"fsck of {url} exited {p.returncode}: {(p.stdout + p.stderr)[-2000:]}")
        prev = out
    tables = pg.sql("v2", "SELECT count(*) FROM strata_kv").strip()
    expect(int(tables) > 0, "the volume loaded back into postgres has no rows")


def flock_right_after_close(mp, rounds=30):
    """The kernel sends a closed file's flock unlock (FUSE RELEASE) after
    close() returned, and a PostgreSQL transaction takes long enough for the
    next request to overtake it: each round, another process's non-blocking
    flock right after the close must get the lock, and a lock taken again
    by this process right after a close (the kernel may give the new open the
    closed one's lock owner) must not be dropped by the late unlock."""
    d = os.path.join(mp, "flock-after-close")
    os.mkdir(d)

    def try_lock(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return "locked"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))
        finally:
            os.close(fd)

    for i in range(rounds):
        path = os.path.join(d, f"f{i}")
        write_file(path, b"")
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.close(fd)
        got = S.in_child(try_lock, path)
        expect(got == "locked", f"round {i}: flock right after the holder's close: {got}")
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.close(fd)
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)   # again, right after the close
        try:
            time.sleep(0.01)  # the late unlock of the closed descriptor, if any, lands here
            got = S.in_child(try_lock, path)
            expect(got in ("EAGAIN", "EWOULDBLOCK"),
                   f"round {i}: the lock taken right after a close was lost ({got})")
        finally:
            os.close(fd)


def main():
    args = H.parse_args(extra_args)
    only = {c for c in args.only.split(",") if c}
    M.skip_unless_fs(args.strata, "fs_postgres")
    if M.postgres_bin_dir() is None:
        print("SKIP fs_postgres: no /usr/lib/postgresql/*/bin (Debian postgresql)", flush=True)
        return M.SKIP_RC
    if not os.access(M.REDIS_SERVER, os.X_OK):
        print(f"SKIP fs_postgres: {M.REDIS_SERVER} missing (Debian redis-server)", flush=True)
        return M.SKIP_RC
    seed = M.pick_seed(args, "STRATA_FS_SEED")
    runner = H.Runner("fs_postgres")
    work = M.make_work_dir("strata-it-fspg-")
    srv = H.StrataServer(args.strata)
    pg = M.PostgresServer(work)
    redis = M.RedisServer(work)
    fs = None
    mpa, mpb = os.path.join(work, "mnt-a"), os.path.join(work, "mnt-b")
    try:
        srv.start()
        if not runner.case("start postgres", pg.start):
            return runner.finish()
        redis.start()
        fs = M.StrataFS(args.strata, srv, work, pg.url("v1"))
        fs.create_bucket()
        if not runner.case("format on postgres", fs.format):
            return runner.finish()
        if not (runner.case("mount A", fs.mount, mpa, False) and runner.case("mount B", fs.mount, mpb, False)):
            return runner.finish()
        t = TwoMounts(mpa, mpb)
        if not runner.case("setup", t.setup):
            return runner.finish()
        for name in CASES:
            if not only or name in only:
                runner.case(name, getattr(t, name))
        if not only or "flock_right_after_close" in only:
            runner.case("flock right after close", flock_right_after_close, mpa)
        if not only or "posix" in only:
            S.run_checks(mpa, runner, skip={"large_dir"})
        if (not only or "randomized" in only) and not S.mount_dead(mpa):
            def randomized():
                d = os.path.join(mpa, "randomized")
                os.mkdir(d)
                try:
                    R.run_all(d, seed, log=lambda s: print(s, flush=True))
                finally:
                    shutil.rmtree(d, ignore_errors=True)
            runner.case("randomized vs local file", randomized)
        runner.case("umount A", fs.umount, mpa)
        if not only or "close_to_open" in only:
            runner.case("B still works after A is gone",
                        lambda: expect(read_file(t.B("c2o"))[-13:] == b"appended on A", "B lost data"))
        runner.case("umount B", fs.umount, mpb)
        runner.case("fsck clean", fs.fsck)
        if not only or "dump_load" in only:
            runner.case("dump/load postgres -> sqlite -> redis -> postgres",
                        dump_load_chain, fs, work, pg, redis)
    finally:
        M.teardown(runner, fs, srv, work, redis, pg)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
