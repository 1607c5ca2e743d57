#!/usr/bin/python3
"""Runs the volume administration example of docs/fs.md (the sh block after
`<!-- fs-admin-example -->`) line by line, as written, in a scratch
directory: `strata` is the binary under test, /mnt/vol a scratch mount
point. Lines marked "(... skipped by the doc test)" are not run. Each line
must exit 0; the quota it sets must show in `quota get`.

Usage: /usr/bin/python3 test_fs_docs.py --strata build/strata
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402
from fs_posix_suite import expect  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "fs.md")


def example_lines():
    text = open(DOC).read()
    m = re.search(r"<!-- fs-admin-example -->\s*```sh\n(.*?)```", text, re.S)
    assert m, "docs/fs.md has no fs-admin-example block"
    return [l for l in m.group(1).splitlines() if l.strip() and "skipped by the doc test" not in l]


class DocRun:
    def __init__(self, strata, work):
        self.work = work
        self.mp = os.path.join(work, "mnt")
        os.makedirs(self.mp)
        bindir = os.path.join(work, "bin")
        os.makedirs(bindir)
        os.symlink(os.path.abspath(strata), os.path.join(bindir, "strata"))
        self.env = H.clean_env({"HOME": work})
        self.env["PATH"] = bindir + ":" + self.env.get("PATH", "/usr/bin:/bin")
        self.outputs = []

    def run_all(self):
        lines = example_lines()
        expect(len(lines) >= 8, f"the example has only {len(lines)} runnable lines")
        for line in lines:
            cmd = line.replace("/mnt/vol", self.mp)
            print("$", cmd, flush=True)
            p = subprocess.run(["bash", "-c", cmd], cwd=self.work, env=self.env, capture_output=True,
                               text=True, timeout=120)
            for l in (p.stdout + p.stderr).splitlines()[-15:]:
                print("  |", l, flush=True)
            expect(p.returncode == 0, f"`{line}` exited {p.returncode}")
            self.outputs.append((line, p.stdout))
        got = [o for l, o in self.outputs if "quota get" in l]
        expect(got and "/projects" in got[0] and "10.0 GiB" in got[0], f"quota get output: {got}")
        summ = [o for l, o in self.outputs if "summary" in l]
        expect(summ and "/projects" in summ[0], f"summary output: {summ}")
        expect(not M.is_fuse_mounted(self.mp), "the example's umount left the mount")

    def cleanup(self):
        if M.is_fuse_mounted(self.mp):
            M.force_unmount(self.mp, quiet=True)


def main():
    args = H.parse_args()
    M.skip_unless_fs(args.strata, "fs_docs")
    runner = H.Runner("fs_docs")
    work = M.make_work_dir("strata-it-fsdocs-")
    d = DocRun(args.strata, work)
    try:
        runner.case("docs/fs.md administration example", d.run_all)
    finally:
        d.cleanup()
        M.remove_work_dir(work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
