#!/usr/bin/python3
"""The mount's entry cache (`strata fs mount --meta-cache`, MetaEngine::
EnableCache), on SQLite and on Redis metadata, each with two mounts A and B
of one volume:

  * transaction counts, from A's /metrics (strata_fsmeta_txn_seconds_count,
    strata_fsmeta_cached_total): N files created in a directory A made, then
    stat'ed and unlinked after the kernel's own caches expired. The lookups
    behind each stat and unlink and the attribute reads cost no read
    transaction (the negative lookup before each create does: absence is
    never answered from the cache); the creates and unlinks one write transaction each. Without the cache (--meta-cache 0,
    mount C) the same run pays a read transaction per lookup.
  * coherence: names B looked up or found missing, then created, renamed over,
    unlinked + re-created and chmodded on A, show on B within the bound the
    docs give (--meta-cache 0.5 s + --entry-timeout 1 s, tested at 3 s); a
    name A renamed over, opened on B at once, gives A's new bytes (ESTALE and
    the cache dropped, never the old file).
  * create / stat / unlink rates of N empty files with and without the cache
    (printed; the SQLite run is the before/after number in docs/fs.md).

Usage: /usr/bin/python3 test_fs_metacache.py --strata build/strata [--files N]
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402

VISIBLE_WITHIN_S = 3.0
KERNEL_CACHE_S = 1.0  # --entry-timeout / --attr-timeout defaults


def extra_args(p):
    p.add_argument("--files", type=int, default=400, help="files per counting/timing run")


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def scrape(port):
    """(read txns, write txns, cached answers) of the mount serving /metrics on port."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

    def val(pattern):
        m = re.search(pattern + r" ([0-9.e+]+)$", body, re.M)
        return float(m.group(1)) if m else 0.0
    return (val(r'^strata_fsmeta_txn_seconds_count\{kind="read"\}'),
            val(r'^strata_fsmeta_txn_seconds_count\{kind="write"\}'),
            val(r"^strata_fsmeta_cached_total"))


def eventually(cond, what):
    t0 = time.time()
    while True:
        if cond():
            print(f"     {what}: visible after {time.time() - t0:.2f}s", flush=True)
            return
        if time.time() - t0 > VISIBLE_WITHIN_S:
            raise AssertionError(f"{what}: not visible on the other mount after {VISIBLE_WITHIN_S}s")
        time.sleep(0.05)


def write(p, data):
    with open(p, "wb") as f:
        f.write(data)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def create_stat_unlink(root, n, port):
    """Creates n 4 KiB files in a new directory, stats and unlinks them (each
    phase after the kernel's caches expired). Returns per phase (ops/s, read
    txns, write txns, cached answers)."""
    d = os.path.join(root, f"csu-{time.time_ns()}")
    os.mkdir(d)
    names = [os.path.join(d, f"f{i:05d}") for i in range(n)]
    out = {}

    def phase(name, fn):
        c0 = scrape(port)
        t0 = time.perf_counter()
        for p in names:
            fn(p)
        dt = time.perf_counter() - t0
        c1 = scrape(port)
        out[name] = (n / dt, c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2])
        print(f"     {name:6} {n / dt:8.0f} ops/s   read txns {c1[0] - c0[0]:6.0f}   "
              f"write txns {c1[1] - c0[1]:6.0f}   cached {c1[2] - c0[2]:6.0f}", flush=True)
        time.sleep(KERNEL_CACHE_S + 0.3)  # the next phase's lookups reach the mount

    phase("create", lambda p: write(p, b"x" * 4096))
    phase("stat", lambda p: os.stat(p))
    phase("unlink", os.unlink)
    os.rmdir(d)
    return out


class Cases:
    def __init__(self, mpa, mpb, port_a, mpc=None, port_c=None, files=400):
        self.a, self.b, self.port_a, self.c, self.port_c, self.n = mpa, mpb, port_a, mpc, port_c, files

    def transaction_counts(self):
        r = create_stat_unlink(self.a, self.n, self.port_a)
        n = self.n
        # Cached: no read transaction per op (a counter read per 0.5 s at most)
        # but the lookup before each create: with B mounted too, a name's
        # absence is always read from the engine (B's creates show at once);
        # without the cache a create costs three.
        for ph in ("create", "stat", "unlink"):
            limit = n * 1.1 if ph == "create" else n / 10
            expect(r[ph][1] <= limit, f"{ph}: {r[ph][1]:.0f} read transactions for {n} files "
                                      f"(the cache should answer the lookups)")
        expect(r["stat"][3] >= n, f"stat: only {r['stat'][3]:.0f} cached answers for {n} stats")
        expect(r["unlink"][2] <= n + 10, f"unlink: {r['unlink'][2]:.0f} write transactions for {n}")

    def without_cache(self):
        if self.c is None:
            return
        r = create_stat_unlink(self.c, self.n, self.port_c)
        # The same run without the cache: a read transaction per lookup.
        expect(r["stat"][1] >= self.n * 0.9, f"--meta-cache 0: {r['stat'][1]:.0f} read txns for {self.n} stats")
        expect(r["stat"][3] == 0, "--meta-cache 0 answered from a cache")
        with_cache = create_stat_unlink(self.a, self.n, self.port_a)
        for ph in ("create", "stat", "unlink"):
            print(f"     {ph}: {r[ph][0]:.0f} ops/s without the cache, {with_cache[ph][0]:.0f} with it "
                  f"({with_cache[ph][0] / r[ph][0]:.2f}x)", flush=True)

    def coherence(self):
        A = lambda *p: os.path.join(self.a, "co", *p)  # noqa: E731
        B = lambda *p: os.path.join(self.b, "co", *p)  # noqa: E731
        os.mkdir(A())
        write(A("tgt"), b"old tgt")
        write(A("gone"), b"to be unlinked")
        write(A("mode"), b"m")
        eventually(lambda: os.path.exists(B("tgt")), "mkdir + files")
        # B's cache learns every name (and that "new" does not exist).
        expect(read(B("tgt")) == b"old tgt", "B reads tgt")
        os.stat(B("gone"))
        os.stat(B("mode"))
        expect(not os.path.exists(B("new")), "new exists too early")
        expect(not os.path.exists(B("atonce")), "atonce exists too early")
        time.sleep(KERNEL_CACHE_S + 0.2)  # the kernel asks the mount again from here
        os.stat(B("gone"))

        # A name B found missing, created on A, shows on B at once (names
        # absent are not cached while another mount is registered).
        write(A("atonce"), b"a")
        expect(os.path.exists(B("atonce")), "A's create not visible on B at once")
        write(A("new"), b"created on A")
        eventually(lambda: os.path.exists(B("new")), "create of a name B found missing")
        os.unlink(A("gone"))
        eventually(lambda: not os.path.exists(B("gone")), "unlink of a name B looked up")
        os.chmod(A("mode"), 0o600)
        eventually(lambda: os.stat(B("mode")).st_mode & 0o777 == 0o600, "chmod")
        # Rename over a name B has open-able in its caches: B's open at once
        # gives the new bytes (ESTALE, cache dropped, looked up again).
        write(A("src"), b"new tgt from A")
        os.rename(A("src"), A("tgt"))
        expect(read(B("tgt")) == b"new tgt from A", "B opened the replaced tgt")
        # Unlink + re-create of a looked-up name.
        os.unlink(A("tgt"))
        write(A("tgt"), b"re-created on A")
        expect(read(B("tgt")) == b"re-created on A", "B opened the unlinked tgt")
        # B's own changes show on B at once, A's view follows.
        write(B("fromb"), b"b")
        expect(os.path.exists(B("fromb")), "B's own create")
        eventually(lambda: os.path.exists(A("fromb")), "B's create on A")
        for n in os.listdir(A()):
            os.unlink(A(n))
        os.rmdir(A())


def run_engine(runner, args, srv, work, label, meta_url, redis=None, with_c=False):
    fs = M.StrataFS(args.strata, srv, work, meta_url, name=label, bucket="fsvol", prefix=label)
    mpa, mpb, mpc = (os.path.join(work, f"mnt-{label}-{x}") for x in "abc")
    port_a, port_c = H.free_port(), H.free_port()
    try:
        if not runner.case(f"{label}: format", fs.format):
            return
        if not (runner.case(f"{label}: mount A", fs.mount, mpa, False,
                            extra=("--metrics", f"127.0.0.1:{port_a}"))
                and runner.case(f"{label}: mount B", fs.mount, mpb, False)):
            return
        if with_c and not runner.case(f"{label}: mount C --meta-cache 0", fs.mount, mpc, False,
                                      extra=("--metrics", f"127.0.0.1:{port_c}", "--meta-cache", "0")):
            return
        t = Cases(mpa, mpb, port_a, mpc if with_c else None, port_c, args.files)
        runner.case(f"{label}: transaction counts", t.transaction_counts)
        runner.case(f"{label}: coherence across mounts", t.coherence)
        if with_c:
            runner.case(f"{label}: without the cache", t.without_cache)
        for mp in ([mpa, mpb, mpc] if with_c else [mpa, mpb]):
            runner.case(f"{label}: umount {os.path.basename(mp)}", fs.umount, mp)
        runner.case(f"{label}: fsck clean", fs.fsck)
    finally:
        fs.cleanup()
        if any(not ok for _, ok, _, _ in runner.results):
            fs.dump_logs()


def main():
    args = H.parse_args(extra_args)
    M.skip_unless_fs(args.strata, "fs_metacache")
    runner = H.Runner("fs_metacache")
    work = M.make_work_dir("strata-it-fsmetacache-")
    srv = H.StrataServer(args.strata)
    redis = M.RedisServer(work)
    try:
        srv.start()
        srv.client().create_bucket(Bucket="fsvol")
        run_engine(runner, args, srv, work, "sqlite", f"sqlite3://{work}/meta.db", with_c=True)
        if os.access(M.REDIS_SERVER, os.X_OK):
            redis.start()
            run_engine(runner, args, srv, work, "redis", redis.url(1))
        else:
            print(f"note: {M.REDIS_SERVER} missing: the Redis half is skipped", flush=True)
    finally:
        M.teardown(runner, None, srv, work, redis)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
