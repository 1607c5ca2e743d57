#!/usr/bin/python3
"""Filesystems over one S3 bucket, side by side, in one run: Strata FS
without and with --writeback, s3fs, rclone mount (--vfs-cache-mode writes)
and the local disk as the limit. Driven by run.sh (see there for usage);
standard library only.

One `strata server --no-fsync` on a free loopback port, one bucket `bench`;
each FUSE tool gets its own prefix in it (strata/, strata-wb/, s3fs/,
rclone/). For each tool, in this order:

  seq write   SIZE MiB in 1 MiB write()s, then fsync + close;
              ROUNDS times (default 3), a new file each round, each
              round after sync + drop_caches + 2 s (not timed)     MiB/s
  seq read    cold, ROUNDS times: unmount, drop the page cache, wipe the
              tool's local cache, mount, read the last round's file in
              1 MiB reads                                          MiB/s
              warm: read it all again at once, ROUNDS times        MiB/s
  rand read   cold again; 4 KiB os.pread at 4 KiB-aligned offsets from a
              fixed seed for RAND_SECS seconds, one thread         IOPS
  small files N x 4 KiB: create+write+close each, ROUNDS times into a new
              directory (files/s); then ROUNDS times: unmount, drop caches,
              mount; stat each (files/s); read each (files/s)
  create      M empty files created (open O_CREAT|O_EXCL + close), ROUNDS
              times into a new directory                           ops/s
  unlink      the M files of each create round unlinked            ops/s

"Until durable": a write row stops its clock once the data is where the
tool promises it. s3fs uploads in close() and Strata FS commits in
fsync()/close() (with --writeback: staged and fdatasynced on the local
disk, metadata committed; the upload follows in the background), so for
them that is the return of close. rclone uploads after close, in the
background (after its --vfs-write-back delay, 5 s by default), so its write
rows, create included, poll the bucket (`strata ls`) until every object is
there with its size, and its unlink row until the objects are gone.

Rows measured in rounds show the median round; every round is logged. A
single round is too short to trust on a shared 2-core VM: 1,000 stats take
well under 0.1 s on a fast mount, a warm 1 GiB read 0.1-0.25 s, a 1 GiB write
about 2 s, and single rounds of identical code swung up to 2x with other
tenants' load (the local disk's warm read: 6.1 to 9.6 GiB/s). Only the big writes
are settled first: 4 MiB of small files leave nothing to flush, and dropping
the caches before a write round is not part of any write test. A Strata
--writeback mount's settle also waits (untimed) until its stage is uploaded.

Every timing is wall clock of the operations themselves (mounting is not
counted). Local: the same directory operations on WORK/local, page cache
dropped instead of remounting. The page cache is dropped with
`echo 3 > /proc/sys/vm/drop_caches` when that is permitted (root); if not, the
table says so. Strata's own caches: its --cache-dir is removed before every
cold mount (after the unmount uploaded the writeback stage; a stage not
empty then stops the run rather than lose data) and its RAM cache goes with
the process.
"""

import argparse
import glob
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from strata_server import StrataServer  # noqa: E402

MiB = 1 << 20
USER = "fsbench"
SECRET = "fsbench-secret-0123456789abcdef"
BUCKET = "bench"
FUSERMOUNT = "/usr/bin/fusermount3"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def drop(state):
    """Drops the page cache; state["dropped"] stays true while that was permitted."""
    state["dropped"] = drop_caches() and state.get("dropped", True)


def settle(state):
    """Before each write round: flush what earlier rounds left dirty, drop the
    page cache, pause. Without it each 1 GiB round ran slower than the last
    (Strata FS: 519, 425, 334 MiB/s) as the server's page cache grew and
    writeback of the earlier rounds overlapped; with it, rounds were flat."""
    drop(state)
    time.sleep(2)


def fuse_mounted(mp):
    mp = os.path.realpath(mp)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if left.split()[4] == mp and right.split()[0].startswith("fuse"):
                return True
    return False


def wait_mounted(mp, proc=None, timeout=60):
    deadline = time.time() + timeout
    while not fuse_mounted(mp):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mount of {mp} exited {proc.returncode}")
        if time.time() > deadline:
            raise RuntimeError(f"{mp} not mounted after {timeout}s")
        time.sleep(0.05)


def unmount(mp, timeout=120):
    """fusermount3 -u, retried while busy; lazily as the last resort."""
    deadline = time.time() + timeout
    while fuse_mounted(mp):
        p = subprocess.run([FUSERMOUNT, "-u", mp], capture_output=True, text=True)
        if p.returncode == 0:
            break
        if time.time() > deadline:
            subprocess.run([FUSERMOUNT, "-uz", mp], capture_output=True)
            break
        time.sleep(0.2)


def s3_env(srv, work):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env.update({
        "AWS_ACCESS_KEY_ID": USER, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_CONFIG_FILE": "/dev/null",
        "HOME": work,
        "RCLONE_CONFIG": os.path.join(work, "rclone.conf"),
        "RCLONE_CONFIG_BENCH_TYPE": "s3", "RCLONE_CONFIG_BENCH_PROVIDER": "Other",
        "RCLONE_CONFIG_BENCH_ENV_AUTH": "false",
        "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID": USER, "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY": SECRET,
        "RCLONE_CONFIG_BENCH_ENDPOINT": srv.endpoint, "RCLONE_CONFIG_BENCH_REGION": "us-east-1",
        "RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE": "true",
    })
    open(env["RCLONE_CONFIG"], "w").close()
    return env


# --------------------------------------------------------------------------
# The tools. Each: mount() / unmount() / wipe_cache(); .dir is where to work.

class Local:
    name = "local"

    def __init__(self, work, **_):
        self.dir = os.path.join(work, "local")
        os.makedirs(self.dir, exist_ok=True)

    def mount(self):
        pass

    def unmount(self):
        pass

    def wipe_cache(self):
        pass

    def wait_durable(self, rel, count, total):
        pass

    def wait_gone(self, rel):
        pass

    def settle(self):
        pass

    def describe(self):
        return f"local directory {self.dir} ({_fstype(self.dir)})"


def _fstype(path):
    best, fstype = "", "?"
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if path.startswith(parts[1]) and len(parts[1]) > len(best):
                best, fstype = parts[1], parts[2]
    return fstype


class FuseTool:
    def __init__(self, work, srv, env, args):
        self.work, self.srv, self.env, self.args = work, srv, env, args
        self.dir = os.path.join(work, f"mnt-{self.name}")
        self.cache = os.path.join(work, f"cache-{self.name}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.logf = os.path.join(work, f"{self.name}.log")

    def wipe_cache(self):
        shutil.rmtree(self.cache, ignore_errors=True)

    def wait_durable(self, rel, count, total):
        """Returns once what was written under rel is in the bucket. s3fs
        uploads in close() and Strata FS commits in fsync()/close(), so for
        them there is nothing to wait for."""

    def wait_gone(self, rel):
        """Returns once nothing under rel is left in the bucket (rclone)."""

    def settle(self):
        """Before a write round, untimed: background work of the last round done."""

    def unmount(self):
        unmount(self.dir)
        if self.proc is not None:
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _popen(self, cmd):
        log(f"  $ {' '.join(cmd)}")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=open(self.logf, "ab"), stderr=subprocess.STDOUT)
        wait_mounted(self.dir, self.proc)


class S3fs(FuseTool):
    name = "s3fs"

    def mount(self):
        pw = os.path.join(self.work, "s3fs-passwd")
        with open(pw, "w") as f:
            f.write(f"{USER}:{SECRET}\n")
        os.chmod(pw, 0o600)
        self._popen(["/usr/bin/s3fs", f"{BUCKET}:/s3fs", self.dir, "-f",
                     "-o", f"use_path_request_style,url={self.srv.endpoint},passwd_file={pw},"
                           f"endpoint=us-east-1,allow_other"])

    def describe(self):
        return ("s3fs -o use_path_request_style,url=...,passwd_file=...,endpoint=us-east-1,allow_other "
                "(defaults otherwise: no use_cache)")


class Rclone(FuseTool):
    name = "rclone"

    def mount(self):
        self._popen(["/usr/bin/rclone", "mount", f"bench:{BUCKET}/rclone", self.dir,
                     "--vfs-cache-mode", "writes", "--cache-dir", self.cache, "--allow-other"])

    def describe(self):
        return ("rclone mount --vfs-cache-mode writes (defaults otherwise); rclone uploads after "
                "close, in the background, so its write rows (create included) include waiting until the "
                "bucket holds the data, and its unlink row until the objects are gone (polled with `strata ls`)")

    def _listed(self, rel):
        """(objects, bytes) under rclone/rel in the bucket."""
        url = f"s3://{BUCKET}/rclone/{rel}"
        p = subprocess.run([self.args.strata, "ls", "-r", "--json", "--endpoint-url", self.srv.endpoint,
                            url], env=self.env, capture_output=True, text=True)
        n = size = 0
        for line in p.stdout.splitlines():
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict) and "key" in o and "size" in o:
                n += 1
                size += int(o["size"])
        return n, size

    def wait_durable(self, rel, count, total, timeout=900):
        deadline = time.time() + timeout
        while True:
            n, size = self._listed(rel)
            if n >= count and size >= total:
                return
            if time.time() > deadline:
                raise RuntimeError(f"rclone: rclone/{rel} holds {n} objects, {size} bytes after {timeout}s; "
                                   f"want {count}, {total}")
            time.sleep(0.1)

    def wait_gone(self, rel, timeout=900):
        deadline = time.time() + timeout
        while True:
            n, _ = self._listed(rel)
            if n == 0:
                return
            if time.time() > deadline:
                raise RuntimeError(f"rclone: rclone/{rel} still holds {n} objects after {timeout}s")
            time.sleep(0.1)


class StrataFS(FuseTool):
    name = "strata"
    wb_args = ()

    def __init__(self, work, srv, env, args):
        super().__init__(work, srv, env, args)
        self.meta = self.format_url() if hasattr(self, "format_url") else f"sqlite3://{work}/{self.name}-meta.db"
        cmd = [args.strata, "fs", "format", self.meta, "bench",
               "--storage", f"s3://{BUCKET}/{self.name}?endpoint={srv.endpoint}"]
        log(f"  $ {' '.join(cmd)}")
        subprocess.run(cmd, env=env, check=True, stdout=sys.stderr)   # stdout is the table

    def extra(self):
        # STRATA_BENCH_MOUNT_ARGS: extra mount options for both Strata columns, shown in the notes.
        return [*self.wb_args, *shlex.split(os.environ.get("STRATA_BENCH_MOUNT_ARGS", ""))]

    def mount(self):
        self._popen([self.args.strata, "fs", "mount", self.meta, self.dir, "--cache-dir", self.cache,
                     *self.extra()])

    def unmount(self):
        subprocess.run([self.args.strata, "fs", "umount", self.dir], env=self.env, capture_output=True)
        super().unmount()

    def staged(self):
        return [n for d in glob.glob(os.path.join(self.cache, "*", "staging"))
                for n in os.listdir(d) if n != "LOCK"]

    def wipe_cache(self):
        left = self.staged()
        if left:   # the unmount uploads the stage; wiping it now would lose data
            raise RuntimeError(f"{len(left)} blocks still staged after the unmount; see {self.logf}")
        super().wipe_cache()

    def describe(self):
        extra = " ".join(self.extra())
        return f"strata fs mount{' ' + extra if extra else ''} (sqlite3 metadata, defaults otherwise)"


class StrataWB(StrataFS):
    """--writeback: a close returns once the block is staged (fdatasynced) on
    the local disk and the metadata committed."""
    name = "strata-wb"
    wb_args = ("--writeback",)

    def settle(self, timeout=300):
        deadline = time.time() + timeout
        while self.staged() and time.time() < deadline:
            time.sleep(0.1)


class StrataPG(StrataFS):
    """Strata FS with its metadata on PostgreSQL: a throwaway server started
    here (tests/integration/fs_mount.PostgresServer: initdb in the work dir,
    loopback port, fsync off, as a PostgreSQL on its own machine behind a
    battery-backed cache would be)."""
    name = "strata-pg"

    def __init__(self, work, srv, env, args):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "tests", "integration"))
        import fs_mount  # noqa: E402
        pg_work = os.path.join(work, "pg-work")
        os.makedirs(pg_work, exist_ok=True)
        os.chmod(pg_work, 0o755)
        self.pg = fs_mount.PostgresServer(pg_work)
        self.pg.start(databases=("bench",))
        self._pg_url = self.pg.url("bench")
        super().__init__(work, srv, env, args)

    def format_url(self):
        return self._pg_url

    def stop(self):
        self.pg.stop()

    def describe(self):
        extra = " ".join(self.extra())
        return (f"strata fs mount{' ' + extra if extra else ''} (PostgreSQL metadata on loopback, "
                "fsync off, defaults otherwise)")


def strata_has_fs(strata):
    import re
    p = subprocess.run([strata, "--help"], capture_output=True, text=True)
    return re.search(r"^\s+fs\s", p.stdout + p.stderr, re.M) is not None


# --------------------------------------------------------------------------
# The measurements

def seq_write(tool, path, size):
    buf = bytearray(os.urandom(MiB))
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(size // MiB):
            buf[:8] = i.to_bytes(8, "little")   # every MiB distinct
            os.write(fd, buf)
        os.fsync(fd)
    finally:
        os.close(fd)
    tool.wait_durable(os.path.basename(path), 1, size)
    return size / MiB / (time.perf_counter() - t0)


def seq_read(path, size):
    t0 = time.perf_counter()
    n = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, MiB)
            if not b:
                break
            n += len(b)
    finally:
        os.close(fd)
    dt = time.perf_counter() - t0
    if n != size:
        raise RuntimeError(f"read {n} bytes of {size}")
    return size / MiB / dt


def rand_read(path, size, secs, seed=42):
    rng = random.Random(seed)
    pages = size // 4096
    fd = os.open(path, os.O_RDONLY)
    n = 0
    try:
        t0 = time.perf_counter()
        end = t0 + secs
        while True:
            for _ in range(64):
                b = os.pread(fd, 4096, rng.randrange(pages) * 4096)
                if len(b) != 4096:
                    raise RuntimeError("short random read")
            n += 64
            now = time.perf_counter()
            if now >= end:
                break
    finally:
        os.close(fd)
    return n / (now - t0)


def small_write(tool, d, n):
    os.makedirs(d, exist_ok=True)
    data = os.urandom(4096)
    t0 = time.perf_counter()
    for i in range(n):
        fd = os.open(os.path.join(d, f"s{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.close(fd)
    tool.wait_durable(os.path.basename(d) + "/", n, n * 4096)
    return n / (time.perf_counter() - t0)


def small_stat(d, n):
    t0 = time.perf_counter()
    for i in range(n):
        if os.stat(os.path.join(d, f"s{i:05d}")).st_size != 4096:
            raise RuntimeError("small file has the wrong size")
    return n / (time.perf_counter() - t0)


def small_read(d, n):
    t0 = time.perf_counter()
    for i in range(n):
        fd = os.open(os.path.join(d, f"s{i:05d}"), os.O_RDONLY)
        b = os.read(fd, 8192)
        os.close(fd)
        if len(b) != 4096:
            raise RuntimeError("small file read short")
    return n / (time.perf_counter() - t0)


def create_files(tool, d, n):
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    for i in range(n):
        os.close(os.open(os.path.join(d, f"e{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    tool.wait_durable(os.path.basename(d) + "/", n, 0)
    return n / (time.perf_counter() - t0)


def unlink_files(tool, d, n):
    t0 = time.perf_counter()
    for i in range(n):
        os.unlink(os.path.join(d, f"e{i:05d}"))
    tool.wait_gone(os.path.basename(d) + "/")
    return n / (time.perf_counter() - t0)


ROWS = [
    ("seq_write", "seq write {size} (median of {rounds})", "MiB/s"),
    ("seq_read_cold", "seq read {size}, cold (median of {rounds})", "MiB/s"),
    ("seq_read_warm", "seq read {size}, warm (median of {rounds})", "MiB/s"),
    ("rand_read", "random 4 KiB reads, {secs} s from cold", "IOPS"),
    ("small_write", "{nsmall} x 4 KiB files: write (median of {rounds})", "files/s"),
    ("small_stat", "{nsmall} x 4 KiB files: stat (cold, median of {rounds})", "files/s"),
    ("small_read", "{nsmall} x 4 KiB files: read (cold, median of {rounds})", "files/s"),
    ("create", "{nempty} empty files: create (median of {rounds})", "ops/s"),
    ("unlink", "{nempty} empty files: unlink (median of {rounds})", "ops/s"),
]


def cold(tool, state):
    tool.unmount()
    drop(state)
    tool.wipe_cache()
    tool.mount()


def median(tool, what, values, unit):
    log(f"[{tool.name}] {what}: rounds {', '.join(fmt(v) for v in values)} {unit}")
    return statistics.median(values)


def bench_big(tool, args, state, res):
    size = args.size_mib * MiB
    log(f"[{tool.name}] seq write {args.size_mib} MiB, {args.rounds} rounds")
    writes = []
    for r in range(args.rounds):
        big = os.path.join(tool.dir, f"big{r}.bin")   # a new name: no round sees the last one's upload
        tool.settle()
        settle(state)
        writes.append(seq_write(tool, big, size))
        if r + 1 < args.rounds:
            os.unlink(big)   # not timed; the last round's file is read below
    res["seq_write"] = median(tool, "seq write", writes, "MiB/s")
    log(f"[{tool.name}] seq read cold / warm")
    colds = []
    for _ in range(args.rounds):
        cold(tool, state)
        colds.append(seq_read(big, size))
    res["seq_read_cold"] = median(tool, "seq read (cold)", colds, "MiB/s")
    res["seq_read_warm"] = median(tool, "seq read (warm)", [seq_read(big, size) for _ in range(args.rounds)],
                                  "MiB/s")
    cold(tool, state)
    log(f"[{tool.name}] random 4 KiB reads for {args.rand_secs}s")
    res["rand_read"] = rand_read(big, size, args.rand_secs)
    os.unlink(big)


def bench_small(tool, args, state, res):
    log(f"[{tool.name}] {args.small_files} small files, {args.rounds} rounds")
    writes = []
    for r in range(args.rounds):
        d = os.path.join(tool.dir, f"small{r}")
        tool.settle()
        writes.append(small_write(tool, d, args.small_files))
        if r + 1 < args.rounds:
            shutil.rmtree(d)   # not timed; the last round's files are stat'ed and read below
    res["small_write"] = median(tool, "small write", writes, "files/s")
    stats, reads = [], []
    for _ in range(args.rounds):
        cold(tool, state)
        stats.append(small_stat(d, args.small_files))
        reads.append(small_read(d, args.small_files))
    res["small_stat"] = median(tool, "small stat (cold)", stats, "files/s")
    res["small_read"] = median(tool, "small read (cold)", reads, "files/s")
    shutil.rmtree(d)
    log(f"[{tool.name}] create, unlink {args.empty_files} empty files, {args.rounds} rounds")
    creates, unlinks = [], []
    for r in range(args.rounds):
        d = os.path.join(tool.dir, f"empty{r}")
        tool.settle()
        creates.append(create_files(tool, d, args.empty_files))
        unlinks.append(unlink_files(tool, d, args.empty_files))
        os.rmdir(d)
    res["create"] = median(tool, "create", creates, "ops/s")
    res["unlink"] = median(tool, "unlink", unlinks, "ops/s")


def bench_tool(tool, args, state):
    res = {}
    tool.mount()
    try:
        bench_big(tool, args, state, res)
        bench_small(tool, args, state, res)
    finally:
        tool.unmount()
    log(f"[{tool.name}] {json.dumps({k: round(v, 1) for k, v in res.items()})}")
    return res


def fmt(v):
    if v is None:
        return "pending"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "—"
    return f"{a / b:.2f}x"


NAMES = {"strata": "Strata FS", "strata-wb": "Strata FS --writeback", "strata-pg": "Strata FS on PostgreSQL",
         "s3fs": "s3fs",
         "rclone": "rclone (writes)", "local": "local disk"}
COLS = ["strata", "strata-wb", "strata-pg", "s3fs", "rclone", "local"]


def table(results, args, notes):
    size = f"{args.size_mib} MiB" if args.size_mib < 1024 else f"{args.size_mib / 1024:g} GiB"
    mine = [c for c in ("strata", "strata-wb", "strata-pg") if c in results]
    ratios = [(m, o) for o in ("s3fs", "rclone", "local") for m in mine]
    short = {"strata": "Strata", "strata-wb": "wb", "strata-pg": "pg", "s3fs": "s3fs", "rclone": "rclone", "local": "local"}
    lines = ["| test | unit | " + " | ".join(NAMES[c] for c in COLS) + " | " +
             " | ".join(f"{short[m]}/{short[o]}" for m, o in ratios) + " |",
             "|---|---|" + "---:|" * (len(COLS) + len(ratios))]
    for key, label, unit in ROWS:
        lab = label.format(size=size, secs=args.rand_secs, nsmall=f"{args.small_files:,}",
                           nempty=f"{args.empty_files:,}", rounds=args.rounds)
        vals = {c: results.get(c, {}).get(key) for c in COLS}
        cells = [fmt(vals[c]) if c in results else "skipped" for c in COLS]
        lines.append(f"| {lab} | {unit} | " + " | ".join(cells) + " | " +
                     " | ".join(ratio(vals[m], vals[o]) for m, o in ratios) + " |")
    return "\n".join(lines + [""] + [f"- {n}" for n in notes])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--small-files", type=int, default=1000)
    ap.add_argument("--empty-files", type=int, default=5000)
    ap.add_argument("--rand-secs", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tools", default="strata,strata-wb,strata-pg,s3fs,rclone,local")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    notes = []
    srv = StrataServer(args.strata, args.work, USER, SECRET)
    state = {}
    results = {}
    mounted = []
    try:
        env = s3_env(srv, args.work)
        subprocess.run([args.strata, "mb", "--quiet", "--endpoint-url", srv.endpoint, f"s3://{BUCKET}"],
                       env=env, check=True)
        for name in tools:
            cls = {"strata": StrataFS, "strata-wb": StrataWB, "strata-pg": StrataPG, "s3fs": S3fs, "rclone": Rclone,
                   "local": Local}[name]
            if name.startswith("strata") and not strata_has_fs(args.strata):
                raise SystemExit(f"bench: {args.strata} has no `fs` subcommand")
            tool = cls(args.work, srv=srv, env=env, args=args) if name != "local" else Local(args.work)
            mounted.append(tool)
            notes.append(f"{name}: {tool.describe()}")
            try:
                results[name] = bench_tool(tool, args, state)
            except Exception as e:  # noqa: BLE001 - one tool failing must not hide the others
                log(f"[{name}] FAILED: {e}")
                notes.append(f"{name}: FAILED ({e}); see {getattr(tool, 'logf', '')}")
                tool.unmount()
    finally:
        for t in mounted:
            try:
                t.unmount()
            except Exception:  # noqa: BLE001
                pass
            if hasattr(t, "stop"):
                t.stop()
        srv.stop()
    if not state.get("dropped", True):
        notes.append("page cache NOT dropped (no permission to write /proc/sys/vm/drop_caches): "
                     "'cold' numbers are remount-only")
    else:
        notes.append("cold = unmount (a --writeback mount uploads its stage first), "
                     "`echo 3 > /proc/sys/vm/drop_caches`, local cache dir wiped, mount")
    notes.append("ratios: Strata = Strata FS, wb = Strata FS --writeback, pg = Strata FS on PostgreSQL, "
                 "over s3fs, rclone, the local disk")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"args": vars(args), "results": results, "notes": notes}, f, indent=1)
    print(table(results, args, notes))


if __name__ == "__main__":
    main()
