#!/usr/bin/python3
"""Strata FS on SQLite metadata and our S3 server: the POSIX suite
(fs_posix_suite.py) and the randomized operation sequences (fs_randomized.py)
on a real FUSE mount, then umount, wipe the local cache, remount and check that
everything persisted (read back from the object store), and `strata fs fsck`.

Usage: /usr/bin/python3 test_fs_posix.py --strata build/strata
       [--large-dir N] [--seed N] [--only CHECK,...]
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
import fs_posix_suite as S  # noqa: E402
import fs_randomized as R  # noqa: E402


def extra_args(p):
    p.add_argument("--large-dir", type=int, default=20000)
    p.add_argument("--large-dir-budget", type=float, default=50.0,
                   help="seconds allowed for creating the large directory's entries (twice that "
                        "for the whole check), so that the test ends well within ctest's 180 s")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--only", default="", help="comma-separated suite checks (default: all)")


def main():
    args = H.parse_args(extra_args)
    M.skip_unless_fs(args.strata, "fs_posix")
    seed = M.pick_seed(args, "STRATA_FS_SEED")
    runner = H.Runner("fs_posix")
    work = M.make_work_dir("strata-it-fs-")
    srv = H.StrataServer(args.strata)
    fs = None
    mp = os.path.join(work, "mnt")
    cache = os.path.join(work, "cache")
    try:
        fs = M.new_volume(args.strata, srv, work)
        if not runner.case("format", fs.format):
            return runner.finish()
        if not runner.case("mount --background", fs.mount, mp, True, cache):
            return runner.finish()

        only = {s for s in args.only.split(",") if s}
        # The large directory runs last (on the remounted volume): it is the
        # slowest check, and a slow FS fails it on its time budget, not ctest's.
        S.run_checks(mp, runner, only=only, skip={"large_dir"})

        def randomized():
            d = os.path.join(mp, "randomized")
            os.mkdir(d)
            try:
                R.run_all(d, seed, log=lambda s: print(s, flush=True))
            finally:
                shutil.rmtree(d, ignore_errors=True)
        if S.mount_dead(mp):
            print(f"the mount died ({S.mount_dead(mp)}); see the mount log below", flush=True)
            return runner.finish()
        runner.case("randomized vs local file", randomized)

        runner.case("persistence: write tree", S.persist_prepare, mp)
        runner.case("umount", fs.umount, mp)

        def objects_in_bucket():
            c = srv.client()
            n = c.list_objects_v2(Bucket=fs.bucket, MaxKeys=1000).get("KeyCount", 0)
            assert n > 0, "nothing was written to the bucket"
            print(f"  {n}{'+' if n == 1000 else ''} objects in s3://{fs.bucket}", flush=True)
        runner.case("data is in the object store", objects_in_bucket)
        shutil.rmtree(cache, ignore_errors=True)   # reads after the remount must come from S3
        if runner.case("remount (cache wiped)", fs.mount, mp, True, cache):
            runner.case("persistence: verify after remount", S.persist_verify, mp)
            if not only or "large_dir" in only:
                S.run_checks(mp, runner, only={"large_dir"},
                             opts={"large_dir": args.large_dir, "large_dir_budget_s": args.large_dir_budget})
            runner.case("umount again", fs.umount, mp)
        runner.case("fsck clean", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
