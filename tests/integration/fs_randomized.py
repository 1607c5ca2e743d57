#!/usr/bin/python3
"""Seeded random operation sequences on one file under test and one local
reference file, compared after every few operations. Stdlib only.

Operations: pwrite at random offsets and lengths (biased towards 4 MiB block
and 64 MiB chunk boundaries), pread (compared at once), ftruncate (shrink and
grow), append through an O_APPEND descriptor, writes through a MAP_SHARED
mmap, fsync, and close + reopen. Every `check_every` operations (and at the
end, and after every reopen) the whole file and its size are compared through
fresh descriptors. On a mismatch the seed, the profile and the last operations
are printed; rerun with the same --seed to replay.

    /usr/bin/python3 tests/integration/fs_randomized.py DIR_UNDER_TEST \
        [--ref-dir LOCAL_DIR] [--seed N] [--profile small|large|all] [--ops N]
"""

import argparse
import hashlib
import mmap
import os
import random
import shutil
import sys
import tempfile
import time

from fs_posix_suite import pread_all, pwrite_all

KiB = 1024
MiB = 1024 * KiB
BLOCK = 4 * MiB
CHUNK = 64 * MiB

# name: (max file size, ops, compare every N ops)
PROFILES = {
    "small": dict(max_size=1 * MiB + 1234, ops=600, check_every=20),
    "large": dict(max_size=CHUNK + 2 * BLOCK + 999, ops=260, check_every=40),
}


class Mismatch(AssertionError):
    pass


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Pair:
    """The same file on the filesystem under test (a) and on the local disk (b)."""

    def __init__(self, path_a, path_b):
        self.paths = (path_a, path_b)
        self.fds = None
        self.open(create=True)

    def open(self, create=False):
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0)
        self.fds = tuple(os.open(p, flags, 0o644) for p in self.paths)

    def close(self):
        if self.fds:
            for fd in self.fds:
                os.close(fd)
        self.fds = None

    def size(self):
        return [os.fstat(fd).st_size for fd in self.fds]

    def full_compare(self, what):
        sizes = [os.stat(p).st_size for p in self.paths]
        if sizes[0] != sizes[1]:
            raise Mismatch(f"{what}: size {sizes[0]} under test, {sizes[1]} on local disk")
        fds = [os.open(p, os.O_RDONLY) for p in self.paths]   # fresh descriptors
        try:
            off = 0
            step = 4 * MiB
            while off < sizes[0] or off == 0:
                a, b = (pread_all(fd, step, off) for fd in fds)
                if a != b:
                    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
                    raise Mismatch(f"{what}: contents differ at byte {off + i} "
                                   f"(under test {a[i:i + 8].hex()}, local {b[i:i + 8].hex()}; "
                                   f"read {len(a)} vs {len(b)} bytes at {off})")
                if not a:
                    break
                off += len(a)
        finally:
            for fd in fds:
                os.close(fd)


def _offset(rng, max_size, size):
    return min(max_size - 1, _offset0(rng, max_size, size))


def _offset0(rng, max_size, size):
    r = rng.random()
    if r < 0.35:   # around a block / chunk boundary
        unit = CHUNK if (max_size > CHUNK and rng.random() < 0.4) else BLOCK
        if unit > max_size:
            unit = max(4096, max_size // 4)
        k = rng.randint(1, max(1, max_size // unit))
        return max(0, min(max_size - 1, k * unit + rng.randint(-70_000, 70_000)))
    if r < 0.55 and size > 0:  # inside the current file
        return rng.randint(0, size)
    if r < 0.65:   # near the end
        return max(0, size + rng.randint(-5000, 5000))
    return rng.randint(0, max_size - 1)


def _length(rng, max_size):
    r = rng.random()
    if r < 0.3:
        n = rng.randint(1, 512)
    elif r < 0.6:
        n = rng.randint(513, 64 * KiB)
    elif r < 0.9:
        n = rng.randint(64 * KiB, 1 * MiB)
    else:
        n = rng.randint(1 * MiB, 5 * MiB)
    return max(1, min(n, max_size // 2))


def run_sequence(dir_a, dir_b, seed, profile="small", ops=None, check_every=None, log=print):
    """One sequence. Returns (ops done, compares). Raises Mismatch with the seed in the message."""
    prof = dict(PROFILES[profile])
    if ops is not None:
        prof["ops"] = ops
    if check_every is not None:
        prof["check_every"] = check_every
    max_size = prof["max_size"]
    rng = random.Random(seed)
    name = f"rand-{profile}-{seed}.bin"
    pair = Pair(os.path.join(dir_a, name), os.path.join(dir_b, name))
    history = []
    compares = 0
    t0 = time.time()
    try:
        for i in range(prof["ops"]):
            size = pair.size()[1]
            r = rng.random()
            if r < 0.40:
                off, n = _offset(rng, max_size, size), _length(rng, max_size)
                n = min(n, max_size - off) or 1
                data = rng.randbytes(n)
                history.append(f"pwrite off={off} len={n}")
                for fd in pair.fds:
                    pwrite_all(fd, data, off)
            elif r < 0.55:
                off, n = _offset(rng, max_size, size), _length(rng, max_size)
                history.append(f"pread off={off} len={n}")
                a, b = (pread_all(fd, n, off) for fd in pair.fds)
                if a != b:
                    raise Mismatch(f"pread off={off} len={n}: {len(a)} bytes under test "
                                   f"(sha {hashlib.sha256(a).hexdigest()[:12]}) vs {len(b)} local "
                                   f"(sha {hashlib.sha256(b).hexdigest()[:12]})")
            elif r < 0.63:
                if rng.random() < 0.5:
                    new = rng.randint(0, max(size, 1))                       # shrink
                else:
                    new = min(max_size, size + rng.randint(1, 3 * BLOCK))   # grow
                if rng.random() < 0.3:
                    new = (new // BLOCK) * BLOCK + rng.choice([0, 1, -1 if new >= BLOCK else 0])
                new = max(0, new)
                history.append(f"ftruncate {new}")
                for fd in pair.fds:
                    os.ftruncate(fd, new)
            elif r < 0.72:
                n = min(_length(rng, max_size), max(1, max_size - size))
                data = rng.randbytes(n)
                history.append(f"append len={n}")
                for p in pair.paths:
                    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
                    try:
                        os.lseek(fd, 0, os.SEEK_SET)    # O_APPEND must ignore this
                        _write_all(fd, data)
                    finally:
                        os.close(fd)
            elif r < 0.82:
                if size == 0:
                    history.append("mmap skipped (empty file)")
                    continue
                # Map a page-aligned window, change a few ranges in it, msync (or not), unmap.
                start = (rng.randint(0, size - 1) // mmap.ALLOCATIONGRANULARITY) * mmap.ALLOCATIONGRANULARITY
                length = min(size - start, rng.choice([4096, 65536, 1 * MiB, 6 * MiB]))
                patches = []
                for _ in range(rng.randint(1, 6)):
                    po = rng.randint(0, length - 1)
                    pn = min(length - po, rng.randint(1, 9000))
                    patches.append((po, rng.randbytes(pn)))
                do_flush = rng.random() < 0.6
                history.append(f"mmap write window={start}+{length} patches={len(patches)} "
                               f"{'msync' if do_flush else 'no msync'}")
                for fd in pair.fds:
                    m = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                                  offset=start)
                    try:
                        for po, pd in patches:
                            m[po:po + len(pd)] = pd
                        if do_flush:
                            m.flush()
                    finally:
                        m.close()
            elif r < 0.88:
                history.append("fsync")
                for fd in pair.fds:
                    os.fsync(fd)
            elif r < 0.93:
                history.append("close+reopen")
                pair.close()
                pair.open()
                pair.full_compare(f"after op {i} (close+reopen)")
                compares += 1
            else:
                history.append("fstat size")
                sa, sb = pair.size()
                if sa != sb:
                    raise Mismatch(f"fstat size {sa} under test, {sb} local")
            if (i + 1) % prof["check_every"] == 0:
                pair.full_compare(f"after op {i}")
                compares += 1
        pair.close()
        pair.full_compare("at the end (closed)")
        compares += 1
    except BaseException as e:
        msg = (f"randomized sequence FAILED: seed={seed} profile={profile} at op {len(history)}: {e}\n"
               f"  replay: fs_randomized.py DIR --seed {seed} --profile {profile}\n  last operations:\n"
               + "\n".join(f"    {k + max(0, len(history) - 25)}: {h}"
                           for k, h in enumerate(history[-25:])))
        log(msg)
        if isinstance(e, Mismatch):
            raise Mismatch(msg) from None
        raise
    finally:
        pair.close()
        for p in pair.paths:
            try:
                os.unlink(p)
            except OSError:
                pass
    log(f"randomized seed={seed} profile={profile}: {len(history)} ops, {compares} full compares, "
        f"{time.time() - t0:.1f}s")
    return len(history), compares


def run_all(dir_a, seed, profiles=("small", "large"), ref_dir=None, ops=None, log=print):
    """Every profile once, seeds derived from `seed`. ref_dir: local directory
    for the reference file (a fresh temp dir under /var/tmp when None)."""
    own = ref_dir is None
    ref = ref_dir or tempfile.mkdtemp(prefix="strata-fs-ref-", dir="/var/tmp")
    try:
        for k, prof in enumerate(profiles):
            run_sequence(dir_a, ref, seed + k, prof, ops=ops, log=log)
    finally:
        if own:
            shutil.rmtree(ref, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="directory on the filesystem under test")
    ap.add_argument("--ref-dir", help="local directory for the reference file (default: temp under /var/tmp)")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed (default: $STRATA_FS_SEED or random; always printed)")
    ap.add_argument("--profile", default="all", choices=["small", "large", "all"])
    ap.add_argument("--ops", type=int, default=None, help="operations per sequence")
    ap.add_argument("--rounds", type=int, default=1, help="sequences per profile (seed, seed+100, ...)")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int(os.environ.get("STRATA_FS_SEED", random.randrange(1 << 30)))
    print(f"STRATA_FS_SEED={seed}", flush=True)
    profiles = ["small", "large"] if a.profile == "all" else [a.profile]
    work = tempfile.mkdtemp(prefix="rand-", dir=a.dir)
    try:
        for r in range(a.rounds):
            run_all(work, seed + 100 * r, profiles, ref_dir=a.ref_dir, ops=a.ops,
                    log=lambda s: print(s, flush=True))
    except Mismatch:
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
