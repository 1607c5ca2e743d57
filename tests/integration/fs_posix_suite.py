#!/usr/bin/python3
"""POSIX checks for a mounted filesystem (Strata FS, or any other), stdlib only.

Every check is a function `check_x(ctx)` that works inside its own fresh
directory `ctx.dir` under the directory being tested and raises on the first
deviation from Linux/POSIX behaviour. The same checks run against

  * a plain local directory (they must all pass there: that shows the checks
    themselves are right), and
  * a Strata FS mount (tests/integration/test_fs_posix.py).

Run against any directory (as root, for the other-user and chown checks):

    /usr/bin/python3 tests/integration/fs_posix_suite.py /some/dir \
        [--only NAME,...] [--skip NAME,...] [--large-dir N] [--list]

What the mount must offer for every check to apply: run as root, other users
must be able to reach it (FUSE `allow_other`; the path down to the directory
traversable by "others"), and permissions enforced (`default_permissions` or
the filesystem's own checks).
"""

import argparse
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import mmap
import os
import random
import select
import signal
import shutil
import stat
import struct
import sys
import tempfile
import threading
import time
import traceback

KiB = 1024
MiB = 1024 * KiB
NOBODY = 65534

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02


def renameat2(old, new, flags):
    f = _libc.renameat2
    f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    f.restype = ctypes.c_int
    if f(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old, None, new)


def fallocate(fd, mode, offset, length):
    f = _libc.fallocate
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    f.restype = ctypes.c_int
    if f(fd, mode, offset, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


# --------------------------------------------------------------------------
# Small helpers

class CheckFailed(AssertionError):
    pass


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def expect_errno(codes, fn, *a, **kw):
    """fn(*a) must fail with OSError whose errno is in `codes` (an int or a tuple)."""
    codes = (codes,) if isinstance(codes, int) else tuple(codes)
    names = "/".join(errno.errorcode.get(c, str(c)) for c in codes)
    try:
        fn(*a, **kw)
    except OSError as e:
        if e.errno not in codes:
            raise CheckFailed(f"{getattr(fn, '__name__', fn)}{a!r}: expected {names}, got "
                              f"{errno.errorcode.get(e.errno, e.errno)} ({e})") from e
        return e
    raise CheckFailed(f"{getattr(fn, '__name__', fn)}{a!r} succeeded; expected {names}")


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def read_file(path):
    """Through a fresh file descriptor."""
    with open(path, "rb", buffering=0) as f:
        out = bytearray()
        while True:
            b = f.read(4 * MiB)
            if not b:
                return bytes(out)
            out += b


def pread_all(fd, n, off):
    out = bytearray()
    while len(out) < n:
        b = os.pread(fd, n - len(out), off + len(out))
        if not b:
            break
        out += b
    return bytes(out)


def pwrite_all(fd, data, off):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, off)
        view, off = view[n:], off + n


def rand_bytes(rng, n):
    return rng.randbytes(n)


def in_child(fn, *a, uid=None, gid=None, timeout=30):
    """Runs fn(*a) in a forked child (optionally as uid/gid with no supplementary
    groups). Returns its return value (must be repr-able and eval-able: ints, strs,
    tuples); re-raises its exception as CheckFailed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r)
            if gid is not None:
                os.setgroups([])
                os.setresgid(gid, gid, gid)
            if uid is not None:
                os.setresuid(uid, uid, uid)
            res = fn(*a)
            msg = "OK " + repr(res)
        except BaseException as e:  # noqa: BLE001 - report anything to the parent
            code = 1
            if isinstance(e, OSError):
                msg = f"OSERR {e.errno} {e.strerror}"
            else:
                msg = "EXC " + "".join(traceback.format_exception(type(e), e, e.__traceback__))
        try:
            os.write(w, msg.encode())
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    deadline = time.time() + timeout
    import select
    while True:
        left = deadline - time.time()
        if left <= 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(r)
            raise CheckFailed(f"child {fn.__name__} did not finish in {timeout}s")
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    msg = b"".join(chunks).decode(errors="replace")
    if msg.startswith("OK "):
        import ast
        return ast.literal_eval(msg[3:])
    if msg.startswith("OSERR "):
        _, num, text = msg.split(" ", 2)
        raise OSError(int(num), text)
    raise CheckFailed(f"child {fn.__name__} failed: {msg}")


def child_errno(fn, *a, uid=NOBODY, gid=NOBODY):
    """errno of fn(*a) run as uid/gid in a child; 0 when it succeeded."""
    def wrapper(*args):
        try:
            fn(*args)
            return 0
        except OSError as e:
            return e.errno
    wrapper.__name__ = getattr(fn, "__name__", "child")
    return in_child(wrapper, *a, uid=uid, gid=gid)


def later(path_stat_before, path, field, msg):
    st = os.stat(path, follow_symlinks=False)
    expect(getattr(st, field) > getattr(path_stat_before, field),
           f"{msg}: {field} did not advance ({getattr(path_stat_before, field)} -> "
           f"{getattr(st, field)})")


def tick():
    """Enough time for a nanosecond clock (or a jiffy-granular kernel clock) to move."""
    time.sleep(0.02)


class Ctx:
    def __init__(self, base, name, opts):
        self.base = base
        self.dir = os.path.join(base, name)
        self.opts = opts
        self.notes = []    # lines reported next to the check's result
        self.leave = False  # True: do not remove the check's directory (too slow to)

    def p(self, *parts):
        return os.path.join(self.dir, *parts)

    def note(self, s):
        self.notes.append(s)


# --------------------------------------------------------------------------
# Regular files

def check_file_random_rw(ctx):
    """pwrite at random offsets (some across 4 MiB boundaries), pread back."""
    rng = random.Random(1234)
    path = ctx.p("rw.bin")
    model = bytearray()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for i in range(120):
            if i % 10 == 0:
                off = 4 * MiB * rng.randint(0, 2) - rng.randint(0, 5000)
                off = max(off, 0)
            else:
                off = rng.randint(0, 9 * MiB)
            n = rng.choice([1, 7, 512, 4096, 4097, 65536, 300_000, 1_100_000])
            data = rand_bytes(rng, n)
            pwrite_all(fd, data, off)
            if off > len(model):
                model += bytes(off - len(model))
            model[off:off + n] = data
            # Read back a random window through the same fd.
            ro = rng.randint(0, len(model))
            rn = rng.randint(0, 2 * MiB)
            got = pread_all(fd, rn, ro)
            expect(got == bytes(model[ro:ro + rn]), f"pread({rn}, {ro}) after {i + 1} writes differs")
        expect(os.fstat(fd).st_size == len(model), f"size {os.fstat(fd).st_size} != {len(model)}")
        os.fsync(fd)
    finally:
        os.close(fd)
    expect(read_file(path) == bytes(model), "contents through a fresh fd differ")
    expect(os.stat(path).st_size == len(model), "size by path differs")
    # Reads past the end return nothing.
    fd = os.open(path, os.O_RDONLY)
    try:
        expect(os.pread(fd, 100, len(model)) == b"", "read at EOF returned data")
        expect(os.pread(fd, 100, len(model) + 12345) == b"", "read past EOF returned data")
    finally:
        os.close(fd)


def check_append(ctx):
    """O_APPEND: every write lands at the current end, whatever the offset."""
    path = ctx.p("app.log")
    write_file(path, b"head\n")
    a = os.open(path, os.O_WRONLY | os.O_APPEND)
    b = os.open(path, os.O_WRONLY | os.O_APPEND)
    plain = os.open(path, os.O_WRONLY)
    try:
        os.lseek(a, 0, os.SEEK_SET)
        os.write(a, b"a1\n")
        os.write(b, b"b1\n")
        os.write(a, b"a2\n")
        os.pwrite(plain, b"HEAD", 0)      # not append: overwrites in place
        os.write(b, b"b2\n")
        expect(os.lseek(a, 0, os.SEEK_CUR) == len(b"head\na1\nb1\na2\n"),
               "file offset after an O_APPEND write is not the end of file")
    finally:
        for fd in (a, b, plain):
            os.close(fd)
    expect(read_file(path) == b"HEAD\na1\nb1\na2\nb2\n", f"append result {read_file(path)!r}")
    # Append with a large buffer after the end of a sparse region.
    os.truncate(path, 3 * MiB)
    with open(path, "ab") as f:
        f.write(b"x" * (MiB + 5))
    expect(os.stat(path).st_size == 4 * MiB + 5, "append after truncate-grow: wrong size")
    data = read_file(path)
    expect(data[17:3 * MiB] == bytes(3 * MiB - 17), "grown region is not zero")
    expect(data[3 * MiB:] == b"x" * (MiB + 5), "appended bytes wrong")


def check_truncate(ctx):
    """ftruncate/truncate grow (zeros) and shrink; data past a shrink is gone for good."""
    rng = random.Random(7)
    path = ctx.p("t.bin")
    data = rand_bytes(rng, 5 * MiB + 333)
    write_file(path, data)
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, 4 * MiB + 1)                   # shrink inside a block
        expect(os.fstat(fd).st_size == 4 * MiB + 1, "shrink: size")
        os.ftruncate(fd, 9 * MiB)                       # grow again: the old tail must not reappear
        expect(os.fstat(fd).st_size == 9 * MiB, "grow: size")
        got = pread_all(fd, 9 * MiB, 0)
        expect(got[:4 * MiB + 1] == data[:4 * MiB + 1], "kept prefix changed")
        expect(got[4 * MiB + 1:] == bytes(5 * MiB - 1), "grown region is not zeros (old data leaked?)")
        os.ftruncate(fd, 0)
        expect(pread_all(fd, 10, 0) == b"", "truncate to 0 left data")
        pwrite_all(fd, b"abc", 10)
    finally:
        os.close(fd)
    expect(read_file(path) == bytes(10) + b"abc", "write after truncate to 0")
    os.truncate(path, 2)                                # by path
    expect(read_file(path) == bytes(2), "truncate by path")
    expect_errno(errno.ENOENT, os.truncate, ctx.p("missing"), 0)
    expect_errno(errno.EISDIR, os.truncate, ctx.dir, 0)
    expect_errno(errno.EINVAL, os.truncate, path, -1)


def check_sparse(ctx):
    """Seek past the end and write: holes read as zeros; 64-bit offsets work."""
    path = ctx.p("sparse.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    big = ctx.opts.get("sparse_offset", (1 << 32) + 3 * 4096 + 17)   # past 4 GiB
    try:
        os.write(fd, b"start")
        os.lseek(fd, 10 * MiB + 3, os.SEEK_SET)
        os.write(fd, b"middle")
        os.pwrite(fd, b"end", big)
        st = os.fstat(fd)
        expect(st.st_size == big + 3, f"size {st.st_size} != {big + 3}")
        expect(os.pread(fd, 16, 5) == bytes(16), "hole after 'start' not zero")
        expect(os.pread(fd, 6, 10 * MiB + 3) == b"middle", "middle")
        expect(pread_all(fd, 4 * MiB, 64 * MiB - 2 * MiB) == bytes(4 * MiB), "hole across 64 MiB not zero")
        expect(os.pread(fd, 10, big - 7) == bytes(7) + b"end", "tail around the 4 GiB+ write")
    finally:
        os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        expect(os.pread(fd, 3, big) == b"end", "64-bit offset through a fresh fd")
    finally:
        os.close(fd)
    os.unlink(path)


def check_fallocate(ctx):
    """fallocate: mode 0 grows the size, KEEP_SIZE does not, PUNCH_HOLE zeroes a range."""
    path = ctx.p("falloc.bin")
    data = bytes(range(256)) * (6 * MiB // 256)
    write_file(path, data)
    fd = os.open(path, os.O_RDWR)
    try:
        fallocate(fd, 0, 0, 8 * MiB)
        expect(os.fstat(fd).st_size == 8 * MiB, "fallocate mode 0 did not grow to 8 MiB")
        expect(pread_all(fd, 2 * MiB, 6 * MiB) == bytes(2 * MiB), "allocated range not zero")
        expect(pread_all(fd, 6 * MiB, 0) == data, "fallocate changed existing data")
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 16 * MiB)
        expect(os.fstat(fd).st_size == 8 * MiB, "FALLOC_FL_KEEP_SIZE changed the size")
        # Punch a hole across a 4 MiB boundary, unaligned ends.
        off, n = 4 * MiB - 1000, 70_000
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, n)
        expect(os.fstat(fd).st_size == 8 * MiB, "punch hole changed the size")
        got = pread_all(fd, 8 * MiB, 0)
        want = data[:off] + bytes(n) + data[off + n:] + bytes(2 * MiB)
        expect(got == want, "punch hole: contents wrong")
        # Punch without KEEP_SIZE is invalid.
        expect_errno((errno.EINVAL, errno.EOPNOTSUPP), fallocate, fd, FALLOC_FL_PUNCH_HOLE, 0, 10)
    finally:
        os.close(fd)
    got = read_file(path)
    expect(got[off - 10:off + n + 10] == data[off - 10:off] + bytes(n) + data[off + n:off + n + 10],
           "punch hole not visible through a fresh fd")
    # fallocate on a read-only descriptor fails with EBADF.
    fd = os.open(path, os.O_RDONLY)
    try:
        expect_errno(errno.EBADF, fallocate, fd, 0, 0, 10)
    finally:
        os.close(fd)


def check_unlink_open_file(ctx):
    """An unlinked file stays readable and writable through open descriptors."""
    path = ctx.p("ghost")
    write_file(path, b"still here")
    fd = os.open(path, os.O_RDWR)
    try:
        os.unlink(path)
        expect(not os.path.lexists(path), "unlinked name still exists")
        expect(os.pread(fd, 100, 0) == b"still here", "read after unlink")
        os.pwrite(fd, b"!", 10)
        expect(os.pread(fd, 100, 0) == b"still here!", "write after unlink")
        expect(os.fstat(fd).st_nlink == 0, f"nlink after unlink {os.fstat(fd).st_nlink}")
    finally:
        os.close(fd)
    expect(os.listdir(ctx.dir) == [], f"directory not empty: {os.listdir(ctx.dir)}")


# --------------------------------------------------------------------------
# Directories, rename, links

def check_directories(ctx):
    d = ctx.p("a")
    os.mkdir(d)
    os.makedirs(ctx.p("a", "b", "c"))
    write_file(ctx.p("a", "f"), b"x")
    expect(sorted(os.listdir(d)) == ["b", "f"], f"listdir {os.listdir(d)}")
    st = os.stat(d)
    expect(stat.S_ISDIR(st.st_mode), "not a directory")
    expect(st.st_nlink == 3, f"nlink of a dir with one subdir is {st.st_nlink}, expected 3")
    expect_errno(errno.EEXIST, os.mkdir, d)
    expect_errno(errno.EEXIST, os.mkdir, ctx.p("a", "f"))
    expect_errno(errno.ENOENT, os.mkdir, ctx.p("nope", "x"))
    expect_errno(errno.ENOTDIR, os.mkdir, ctx.p("a", "f", "x"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, d)
    expect_errno(errno.ENOTDIR, os.rmdir, ctx.p("a", "f"))
    expect_errno(errno.ENOENT, os.rmdir, ctx.p("nope"))
    expect_errno(errno.EISDIR, os.unlink, ctx.p("a", "b"))
    expect_errno(errno.EISDIR, os.open, d, os.O_WRONLY)
    expect_errno(errno.EISDIR, os.open, d, os.O_RDWR)
    expect_errno(errno.ENOTDIR, os.open, ctx.p("a", "f") + "/", os.O_RDONLY)
    expect_errno(errno.ENOTDIR, os.stat, ctx.p("a", "f", "x"))
    expect_errno(errno.ENOTDIR, os.listdir, ctx.p("a", "f"))
    expect_errno(errno.ENOTDIR, os.open, ctx.p("a", "f"), os.O_RDONLY | os.O_DIRECTORY)
    expect_errno(errno.ENAMETOOLONG, os.open, ctx.p("n" * 256), os.O_CREAT | os.O_WRONLY, 0o644)
    write_file(ctx.p("n" * 255), b"")   # 255 is allowed
    os.unlink(ctx.p("n" * 255))
    os.rmdir(ctx.p("a", "b", "c"))
    os.rmdir(ctx.p("a", "b"))
    expect(os.stat(d).st_nlink == 2, f"nlink of a dir without subdirs is {os.stat(d).st_nlink}")
    os.unlink(ctx.p("a", "f"))
    os.rmdir(d)
    expect(not os.path.exists(d), "rmdir left the directory")
    # Names with odd bytes.
    for name in ["with space", "ü-ñ-日本", "semi;colon", "#hash", ".hidden", "x" * 200]:
        write_file(ctx.p(name), name.encode())
        expect(read_file(ctx.p(name)) == name.encode(), f"name {name!r}")
    expect(len(os.listdir(ctx.dir)) == 6, f"listdir {os.listdir(ctx.dir)}")


def check_rename(ctx):
    """rename across directories: atomic replace, directories, error cases."""
    os.makedirs(ctx.p("src", "sub"))
    os.makedirs(ctx.p("dst"))
    write_file(ctx.p("src", "f"), b"new")
    write_file(ctx.p("dst", "f"), b"old")
    ino = os.stat(ctx.p("src", "f")).st_ino
    os.rename(ctx.p("src", "f"), ctx.p("dst", "f"))     # replaces the target
    expect(not os.path.exists(ctx.p("src", "f")), "source still there")
    expect(read_file(ctx.p("dst", "f")) == b"new", "target not replaced")
    expect(os.stat(ctx.p("dst", "f")).st_ino == ino, "inode changed across rename")
    # A directory with contents across directories; nlink of both parents.
    write_file(ctx.p("src", "sub", "inner"), b"inner")
    os.rename(ctx.p("src", "sub"), ctx.p("dst", "sub2"))
    expect(read_file(ctx.p("dst", "sub2", "inner")) == b"inner", "moved directory lost its file")
    expect(os.stat(ctx.p("src")).st_nlink == 2, "old parent nlink after moving a subdir out")
    expect(os.stat(ctx.p("dst")).st_nlink == 3, "new parent nlink after moving a subdir in")
    # Directory over an empty directory: allowed. Over a non-empty one: ENOTEMPTY.
    os.mkdir(ctx.p("empty"))
    os.rename(ctx.p("dst", "sub2"), ctx.p("empty"))
    expect(os.listdir(ctx.p("empty")) == ["inner"], "dir over empty dir")
    os.mkdir(ctx.p("full"))
    write_file(ctx.p("full", "x"), b"")
    os.mkdir(ctx.p("d2"))
    expect_errno((errno.ENOTEMPTY, errno.EEXIST), os.rename, ctx.p("d2"), ctx.p("full"))
    expect_errno(errno.EISDIR, os.rename, ctx.p("dst", "f"), ctx.p("d2"))
    expect_errno(errno.ENOTDIR, os.rename, ctx.p("d2"), ctx.p("dst", "f"))
    expect_errno(errno.EINVAL, os.rename, ctx.p("full"), ctx.p("full", "inside"))
    expect_errno(errno.ENOENT, os.rename, ctx.p("missing"), ctx.p("x"))
    expect_errno(errno.ENOENT, os.rename, ctx.p("dst", "f"), ctx.p("nodir", "x"))
    # Rename onto itself / a hard link of itself: no-op.
    os.rename(ctx.p("dst", "f"), ctx.p("dst", "f"))
    expect(read_file(ctx.p("dst", "f")) == b"new", "rename onto itself")
    os.link(ctx.p("dst", "f"), ctx.p("dst", "f.link"))
    os.rename(ctx.p("dst", "f"), ctx.p("dst", "f.link"))
    expect(os.path.exists(ctx.p("dst", "f")) and os.path.exists(ctx.p("dst", "f.link")),
           "rename between two links of one inode must do nothing")


def _reader_never_misses(path, stop_path, want_prefix):
    misses = reads = 0
    while not os.path.exists(stop_path):
        try:
            with open(path, "rb") as f:
                d = f.read()
            if not d.startswith(want_prefix):
                return ("bad", d[:40])
            reads += 1
        except FileNotFoundError:
            misses += 1
    return ("ok", reads, misses)


def check_rename_atomic(ctx):
    """While one process renames new versions over a name, another never sees it missing."""
    target = ctx.p("d1", "current")
    os.makedirs(ctx.p("d1"))
    os.makedirs(ctx.p("d2"))
    write_file(target, b"version-0")
    stop = ctx.p("stop")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            res = _reader_never_misses(target, stop, b"version-")
        except BaseException as e:  # noqa: BLE001
            res = ("exc", repr(e))
        os.write(w, repr(res).encode())
        os._exit(0)
    os.close(w)
    try:
        for i in range(1, 301):
            tmp = ctx.p("d2", f"tmp{i}")
            write_file(tmp, b"version-%d" % i)
            os.rename(tmp, target)
    finally:
        write_file(stop, b"")
        out = b""
        while True:
            b = os.read(r, 4096)
            if not b:
                break
            out += b
        os.close(r)
        os.waitpid(pid, 0)
    import ast
    res = ast.literal_eval(out.decode())
    expect(res[0] == "ok", f"reader saw a partial file: {res}")
    expect(res[2] == 0, f"reader found the name missing {res[2]} times in {res[1]} reads")
    expect(read_file(target) == b"version-300", "final version")
    expect(os.listdir(ctx.p("d2")) == [], "temp names left behind")
    ctx.note(f"reader opened the name {res[1]} times during 300 renames, never missing")


def check_renameat2(ctx):
    """renameat2 RENAME_NOREPLACE and RENAME_EXCHANGE (across directories)."""
    os.makedirs(ctx.p("x"))
    os.makedirs(ctx.p("y"))
    write_file(ctx.p("x", "a"), b"A")
    write_file(ctx.p("y", "b"), b"B")
    expect_errno(errno.EEXIST, renameat2, ctx.p("x", "a"), ctx.p("y", "b"), RENAME_NOREPLACE)
    expect(read_file(ctx.p("y", "b")) == b"B", "NOREPLACE failure changed the target")
    renameat2(ctx.p("x", "a"), ctx.p("y", "a"), RENAME_NOREPLACE)
    expect(read_file(ctx.p("y", "a")) == b"A" and not os.path.exists(ctx.p("x", "a")),
           "NOREPLACE rename to a free name")
    # Exchange a file and a directory in different parents.
    os.makedirs(ctx.p("x", "dir"))
    write_file(ctx.p("x", "dir", "in"), b"in")
    ino_f, ino_d = os.stat(ctx.p("y", "b")).st_ino, os.stat(ctx.p("x", "dir")).st_ino
    renameat2(ctx.p("y", "b"), ctx.p("x", "dir"), RENAME_EXCHANGE)
    expect(os.path.isfile(ctx.p("x", "dir")) and read_file(ctx.p("x", "dir")) == b"B",
           "EXCHANGE: file not at the dir's name")
    expect(os.path.isdir(ctx.p("y", "b")) and read_file(ctx.p("y", "b", "in")) == b"in",
           "EXCHANGE: dir not at the file's name")
    expect(os.stat(ctx.p("x", "dir")).st_ino == ino_f and os.stat(ctx.p("y", "b")).st_ino == ino_d,
           "EXCHANGE: inodes not swapped")
    expect(os.stat(ctx.p("x")).st_nlink == 2 and os.stat(ctx.p("y")).st_nlink == 3,
           "EXCHANGE of a dir across parents: parent nlink not updated")
    expect_errno(errno.ENOENT, renameat2, ctx.p("y", "a"), ctx.p("x", "none"), RENAME_EXCHANGE)
    expect_errno(errno.EINVAL, renameat2, ctx.p("y", "a"), ctx.p("x", "z"),
                 RENAME_EXCHANGE | RENAME_NOREPLACE)


def check_hardlinks(ctx):
    a, b = ctx.p("a"), ctx.p("sub", "b")
    os.mkdir(ctx.p("sub"))
    write_file(a, b"one")
    os.link(a, b)
    sa, sb = os.stat(a), os.stat(b)
    expect(sa.st_ino == sb.st_ino, "hard link has another inode")
    expect(sa.st_nlink == 2, f"nlink {sa.st_nlink} after link")
    with open(b, "r+b") as f:
        f.write(b"TWO")
    expect(read_file(a) == b"TWO", "write through one link not seen through the other")
    os.link(a, ctx.p("c"))
    expect(os.stat(b).st_nlink == 3, "nlink 3")
    os.unlink(a)
    expect(os.stat(b).st_nlink == 2 and read_file(b) == b"TWO", "unlink one link")
    os.unlink(ctx.p("c"))
    expect(os.stat(b).st_nlink == 1, "nlink back to 1")
    expect_errno(errno.EEXIST, os.link, b, b)
    expect_errno(errno.ENOENT, os.link, ctx.p("missing"), ctx.p("m2"))
    expect_errno(errno.EPERM, os.link, ctx.p("sub"), ctx.p("dirlink"))


def check_symlinks(ctx):
    write_file(ctx.p("target"), b"T")
    os.mkdir(ctx.p("d"))
    os.symlink("../target", ctx.p("d", "rel"))
    os.symlink(ctx.p("target"), ctx.p("abs"))
    os.symlink("nowhere", ctx.p("dangling"))
    long_target = "/".join(["seg%03d" % i for i in range(250)])   # ~1.7 KB
    os.symlink(long_target, ctx.p("long"))
    expect(os.readlink(ctx.p("d", "rel")) == "../target", "readlink rel")
    expect(os.readlink(ctx.p("long")) == long_target, "readlink of a long target")
    expect(read_file(ctx.p("d", "rel")) == b"T" and read_file(ctx.p("abs")) == b"T", "follow")
    lst = os.lstat(ctx.p("abs"))
    expect(stat.S_ISLNK(lst.st_mode), "lstat is not a link")
    expect(lst.st_size == len(ctx.p("target").encode()), f"symlink st_size {lst.st_size}")
    expect(stat.S_ISREG(os.stat(ctx.p("abs")).st_mode), "stat does not follow")
    expect_errno(errno.ENOENT, os.stat, ctx.p("dangling"))
    expect(stat.S_ISLNK(os.lstat(ctx.p("dangling")).st_mode), "lstat of dangling")
    expect_errno(errno.ELOOP, os.open, ctx.p("abs"), os.O_RDONLY | os.O_NOFOLLOW)
    expect_errno(errno.EINVAL, os.readlink, ctx.p("target"))
    expect_errno(errno.EEXIST, os.symlink, "x", ctx.p("abs"))
    os.symlink("loop2", ctx.p("loop1"))
    os.symlink("loop1", ctx.p("loop2"))
    expect_errno(errno.ELOOP, os.stat, ctx.p("loop1"))
    # Writing through a dangling symlink creates its target.
    with open(ctx.p("dangling"), "wb") as f:
        f.write(b"made")
    expect(read_file(ctx.p("nowhere")) == b"made", "create through a dangling symlink")
    os.unlink(ctx.p("abs"))
    expect(read_file(ctx.p("target")) == b"T", "unlinking a symlink touched its target")


def check_fifo(ctx):
    path = ctx.p("fifo")
    os.mkfifo(path, 0o644)
    st = os.stat(path)
    expect(stat.S_ISFIFO(st.st_mode), f"mode {oct(st.st_mode)} is not a FIFO")
    expect(stat.S_IMODE(st.st_mode) == 0o644 & ~_current_umask(), "FIFO permissions")
    expect_errno(errno.EEXIST, os.mkfifo, path)
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(path, os.O_WRONLY)
    try:
        os.write(wfd, b"through the pipe")
        expect(os.read(rfd, 100) == b"through the pipe", "FIFO data")
    finally:
        os.close(wfd)
        os.close(rfd)
    os.mknod(ctx.p("fifo2"), 0o600 | stat.S_IFIFO)
    expect(stat.S_ISFIFO(os.stat(ctx.p("fifo2")).st_mode), "mknod S_IFIFO")
    os.unlink(path)


# --------------------------------------------------------------------------
# Permissions, ownership, times

def _current_umask():
    m = os.umask(0)
    os.umask(m)
    return m


def check_chmod_umask(ctx):
    old = os.umask(0o027)
    try:
        write_file(ctx.p("f"), b"", mode=0o666)
        os.mkdir(ctx.p("d"), 0o777)
        os.mkfifo(ctx.p("p"), 0o666)
        fd = os.open(ctx.p("g"), os.O_CREAT | os.O_WRONLY, 0o777)
        os.close(fd)
    finally:
        os.umask(old)
    expect(stat.S_IMODE(os.stat(ctx.p("f")).st_mode) == 0o640, "umask 027 on a file")
    expect(stat.S_IMODE(os.stat(ctx.p("g")).st_mode) == 0o750, "umask 027 on an 0777 file")
    expect(stat.S_IMODE(os.stat(ctx.p("d")).st_mode) == 0o750, "umask 027 on a dir")
    expect(stat.S_IMODE(os.stat(ctx.p("p")).st_mode) == 0o640, "umask 027 on a FIFO")
    for mode in (0o000, 0o4755, 0o2750, 0o1777, 0o604):
        os.chmod(ctx.p("f"), mode)
        got = stat.S_IMODE(os.stat(ctx.p("f")).st_mode)
        expect(got == mode, f"chmod {oct(mode)} -> {oct(got)}")
    os.chmod(ctx.p("d"), 0o1777)
    expect(stat.S_IMODE(os.stat(ctx.p("d")).st_mode) == 0o1777, "chmod dir sticky")
    fd = os.open(ctx.p("f"), os.O_RDONLY)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    expect(stat.S_IMODE(os.stat(ctx.p("f")).st_mode) == 0o600, "fchmod")
    expect(stat.S_IFMT(os.stat(ctx.p("f")).st_mode) == stat.S_IFREG, "chmod changed the file type")


def check_chown(ctx):
    write_file(ctx.p("f"), b"x")
    os.chown(ctx.p("f"), NOBODY, NOBODY)
    st = os.stat(ctx.p("f"))
    expect((st.st_uid, st.st_gid) == (NOBODY, NOBODY), f"chown -> {st.st_uid}:{st.st_gid}")
    os.chown(ctx.p("f"), -1, 0)
    st = os.stat(ctx.p("f"))
    expect((st.st_uid, st.st_gid) == (NOBODY, 0), "chown gid only")
    os.symlink("f", ctx.p("l"))
    os.lchown(ctx.p("l"), 123, 456)
    expect((os.lstat(ctx.p("l")).st_uid, os.lstat(ctx.p("l")).st_gid) == (123, 456), "lchown")
    expect(os.stat(ctx.p("f")).st_uid == NOBODY, "lchown followed the link")
    # Setuid/setgid bits are cleared by chown of an executable.
    os.chmod(ctx.p("f"), 0o6755)
    os.chown(ctx.p("f"), 0, 0)
    expect(stat.S_IMODE(os.stat(ctx.p("f")).st_mode) & 0o4000 == 0, "chown kept the setuid bit")
    # A non-owner cannot chown or chmod.
    write_file(ctx.p("root_owned"), b"r")
    expect(child_errno(os.chown, ctx.p("root_owned"), NOBODY, NOBODY) == errno.EPERM,
           "nobody could chown a root-owned file")
    expect(child_errno(os.chmod, ctx.p("root_owned"), 0o777) == errno.EPERM,
           "nobody could chmod a root-owned file")
    expect(stat.S_IMODE(os.stat(ctx.p("root_owned")).st_mode) == 0o644 & ~_current_umask(),
           "a refused chmod changed the mode")


def _open_read(path):
    with open(path, "rb") as f:
        return len(f.read())


def _create_in(path):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    os.close(fd)
    return os.stat(path).st_uid


def _write_existing(path):
    fd = os.open(path, os.O_WRONLY)
    os.close(fd)


def check_eacces_other_user(ctx):
    """Another user (65534, no groups) is refused per the mode bits."""
    os.chmod(ctx.dir, 0o755)
    secret = ctx.p("secret")
    write_file(secret, b"root only", mode=0o600)
    os.chmod(secret, 0o600)
    public = ctx.p("public")
    write_file(public, b"for all")
    os.chmod(public, 0o644)
    os.mkdir(ctx.p("rootdir"), 0o755)
    os.chmod(ctx.p("rootdir"), 0o755)
    os.mkdir(ctx.p("open"), 0o777)
    os.chmod(ctx.p("open"), 0o777)
    os.mkdir(ctx.p("closed"), 0o700)
    os.chmod(ctx.p("closed"), 0o700)
    write_file(ctx.p("closed", "inside"), b"x")
    # Can nobody reach the directory at all? (allow_other, parent dirs traversable)
    e = child_errno(os.stat, ctx.dir)
    expect(e == 0, f"user {NOBODY} cannot even stat the test directory ({errno.errorcode.get(e, e)}); "
                   "the mount needs allow_other and a path that others can traverse")
    expect(child_errno(_open_read, public) == 0, "nobody cannot read an 0644 file")
    expect(child_errno(_open_read, secret) == errno.EACCES, "reading an 0600 root file")
    expect(child_errno(_write_existing, public) == errno.EACCES, "opening an 0644 root file for write")
    expect(child_errno(_create_in, ctx.p("rootdir", "new")) == errno.EACCES,
           "creating a file in an 0755 root dir")
    expect(not os.path.exists(ctx.p("rootdir", "new")), "refused create left a file")
    expect(child_errno(os.mkdir, ctx.p("rootdir", "newdir")) == errno.EACCES, "mkdir in an 0755 root dir")
    expect(child_errno(os.unlink, public) == errno.EACCES, "unlink in an 0755 root dir")
    expect(child_errno(os.rename, public, ctx.p("rootdir", "moved")) == errno.EACCES,
           "rename in an 0755 root dir")
    expect(child_errno(os.listdir, ctx.p("closed")) == errno.EACCES, "listing an 0700 root dir")
    expect(child_errno(os.stat, ctx.p("closed", "inside")) == errno.EACCES,
           "searching through an 0700 root dir")
    uid = in_child(_create_in, ctx.p("open", "mine"), uid=NOBODY, gid=NOBODY)
    expect(uid == NOBODY, f"a file nobody created in an 0777 dir is owned by {uid}")
    expect(os.stat(ctx.p("open", "mine")).st_gid == NOBODY, "new file's gid is not the creator's")
    # Group bits: a file of group 65534 mode 0640 is readable by nobody.
    write_file(ctx.p("grp"), b"g")
    os.chown(ctx.p("grp"), 0, NOBODY)
    os.chmod(ctx.p("grp"), 0o640)
    expect(child_errno(_open_read, ctx.p("grp")) == 0, "group read bit not honoured")
    # Root bypasses: root may read a 0000 file.
    os.chmod(secret, 0o000)
    expect(read_file(secret) == b"root only", "root could not read an 0000 file")
    # Sticky directory: nobody cannot remove root's file in a 1777 dir.
    os.chmod(ctx.p("open"), 0o1777)
    write_file(ctx.p("open", "roots"), b"r")
    expect(child_errno(os.unlink, ctx.p("open", "roots")) in (errno.EPERM, errno.EACCES),
           "sticky bit: nobody removed root's file")
    # Writing (or truncating) a set-user-ID / set-group-ID file as another
    # user succeeds and clears those bits; a chmod by that user is refused.
    for name, how in (("suid-w", _append_byte), ("suid-t", _truncate_to_3)):
        write_file(ctx.p(name), b"payload")
        os.chmod(ctx.p(name), 0o6777)
        e = child_errno(how, ctx.p(name))
        expect(e == 0, f"{how.__name__} of an 06777 root file by nobody: {errno.errorcode.get(e, e)}")
        mode = stat.S_IMODE(os.stat(ctx.p(name)).st_mode)
        expect(mode == 0o777, f"{how.__name__} by nobody left mode {mode:o} (want 777: set-id bits cleared)")
    e = child_errno(os.chmod, ctx.p("suid-w"), 0o4777)
    expect(e == errno.EPERM, f"chmod of root's file by nobody: {errno.errorcode.get(e, e)}, want EPERM")


def _append_byte(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)


def _truncate_to_3(path):
    os.truncate(path, 3)


def _fd_write_steps(d):
    """ftruncate/fallocate through descriptors opened for writing on files
    whose mode does not (or no longer does) grant write, truncate by path,
    and a read-only descriptor. Returns {step: errno or 0}, plus the sizes
    seen through fstat."""
    out = {}

    def step(name, fn, *a):
        try:
            r = fn(*a)
            out[name] = 0
            return r
        except OSError as e:
            out[name] = e.errno
            return None
    # Created with mode 0 and opened O_RDWR in the same call: POSIX grants the
    # descriptor write access, so ftruncate and fallocate through it succeed.
    fd = os.open(os.path.join(d, "zero"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0)
    try:
        step("write on mode-0 fd", os.write, fd, b"hello")
        step("ftruncate mode-0 fd", os.ftruncate, fd, 2)
        out["size after ftruncate"] = os.fstat(fd).st_size
        step("ftruncate mode-0 fd to 0", os.ftruncate, fd, 0)
        step("posix_fallocate mode-0 fd", os.posix_fallocate, fd, 0, 8192)
        out["size after posix_fallocate"] = os.fstat(fd).st_size
        step("fallocate KEEP_SIZE mode-0 fd", fallocate, fd, FALLOC_FL_KEEP_SIZE, 0, 16384)
        step("fallocate PUNCH_HOLE mode-0 fd", fallocate, fd,
             FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
        out["size after fallocate"] = os.fstat(fd).st_size
    finally:
        os.close(fd)
    # Without a descriptor, truncate checks write permission against the mode.
    step("truncate(path) mode 0", os.truncate, os.path.join(d, "zero"), 0)
    # fchmod(fd, 0) after the open: the descriptor keeps its write access.
    fd = os.open(os.path.join(d, "chm"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"abcdef")
        os.fchmod(fd, 0)
        step("ftruncate after fchmod 0", os.ftruncate, fd, 3)
        step("posix_fallocate after fchmod 0", os.posix_fallocate, fd, 0, 4096)
        out["size after fchmod+fallocate"] = os.fstat(fd).st_size
    finally:
        os.close(fd)
    # Write-only descriptor of a file made read-only afterwards.
    fd = os.open(os.path.join(d, "wo"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"0123456789")
        os.fchmod(fd, 0o444)
        step("ftruncate O_WRONLY fd of an 0444 file", os.ftruncate, fd, 4)
    finally:
        os.close(fd)
    step("truncate(path) 0444", os.truncate, os.path.join(d, "wo"), 1)
    # A descriptor opened for reading only: Linux answers EINVAL for ftruncate
    # (ftruncate(2): "fd is not open for writing") and EBADF for fallocate.
    with open(os.path.join(d, "ro"), "wb") as f:
        f.write(b"read only")
    fd = os.open(os.path.join(d, "ro"), os.O_RDONLY)
    try:
        step("ftruncate O_RDONLY fd", os.ftruncate, fd, 0)
        step("posix_fallocate O_RDONLY fd", os.posix_fallocate, fd, 0, 100)
        step("fallocate O_RDONLY fd", fallocate, fd, 0, 0, 100)
    finally:
        os.close(fd)
    step("truncate(path) own 0644 file", os.truncate, os.path.join(d, "ro"), 4)
    return out


def _fd_of_other_user_after_chmod(path, new_mode, uid=NOBODY):
    """uid opens root's `path` O_RDWR (the mode lets it), then root chmods it
    to new_mode; uid ftruncates and posix_fallocates through its descriptor.
    Returns (ftruncate errno, posix_fallocate errno, truncate-by-path errno)."""
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r1)
            os.close(w2)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            fd = os.open(path, os.O_RDWR)
            os.write(w1, b"o")
            os.read(r2, 1)           # root changed the mode meanwhile
            res = []
            for fn, a in ((os.ftruncate, (fd, 4)), (os.posix_fallocate, (fd, 0, 8192)),
                          (os.truncate, (path, 2))):
                try:
                    fn(*a)
                    res.append(0)
                except OSError as e:
                    res.append(e.errno)
            os.close(fd)
            os.write(w1, repr(tuple(res)).encode())
        except BaseException as e:  # noqa: BLE001
            code = 1
            os.write(w1, f"E{e!r}".encode())
        finally:
            os._exit(code)
    os.close(w1)
    os.close(r2)
    try:
        first = os.read(r1, 1)
        if first != b"o":
            raise CheckFailed(f"the child could not open {path}: {(first + os.read(r1, 4096))!r}")
        os.chmod(path, new_mode)
        os.write(w2, b"g")
        out = b""
        while True:
            b = os.read(r1, 4096)
            if not b:
                break
            out += b
    finally:
        os.close(r1)
        os.close(w2)
        os.waitpid(pid, 0)
    if out.startswith(b"E"):
        raise CheckFailed(f"child failed: {out[1:].decode(errors='replace')}")
    import ast
    return ast.literal_eval(out.decode())


def check_fd_write_access(ctx):
    """ftruncate/fallocate on a descriptor opened for writing succeed whatever
    the mode says now (the open checked access); truncate by path checks the
    mode; a read-only descriptor gets EINVAL/EBADF. As root and as 65534."""
    for who, uid in (("root", None), ("nobody", NOBODY)):
        d = ctx.p(who)
        os.mkdir(d)
        os.chmod(d, 0o777)
        got = in_child(_fd_write_steps, d, uid=uid, gid=uid)
        want = {
            "write on mode-0 fd": 0,
            "ftruncate mode-0 fd": 0,
            "size after ftruncate": 2,
            "ftruncate mode-0 fd to 0": 0,
            "posix_fallocate mode-0 fd": 0,
            "size after posix_fallocate": 8192,
            "fallocate KEEP_SIZE mode-0 fd": 0,
            "fallocate PUNCH_HOLE mode-0 fd": 0,
            "size after fallocate": 8192,
            # root may write any file (CAP_DAC_OVERRIDE); nobody may not
            "truncate(path) mode 0": 0 if uid is None else errno.EACCES,
            "ftruncate after fchmod 0": 0,
            "posix_fallocate after fchmod 0": 0,
            "size after fchmod+fallocate": 4096,
            "ftruncate O_WRONLY fd of an 0444 file": 0,
            "truncate(path) 0444": 0 if uid is None else errno.EACCES,
            "ftruncate O_RDONLY fd": errno.EINVAL,
            "posix_fallocate O_RDONLY fd": errno.EBADF,
            "fallocate O_RDONLY fd": errno.EBADF,
            "truncate(path) own 0644 file": 0,
        }

        def show(k, v):
            return v if k.startswith("size") or not v else errno.errorcode.get(v, v)
        bad = [f"{k}: {show(k, got.get(k))} (want {show(k, v)})" for k, v in want.items()
               if got.get(k) != v]
        expect(not bad, f"as {who}: " + "; ".join(bad))
        # What the descriptors did is there for a fresh open (root reads 0000 files).
        expect(read_file(os.path.join(d, "zero")) == (b"" if uid is None else bytes(8192)),
               f"as {who}: mode-0 file contents")
        expect(read_file(os.path.join(d, "chm")) == b"abc" + bytes(4093), f"as {who}: fchmod-0 file")
        expect(read_file(os.path.join(d, "wo")) == (b"0" if uid is None else b"0123"),
               f"as {who}: 0444 file")
        expect(read_file(os.path.join(d, "ro")) == b"read", f"as {who}: read-only fd changed the file")
    # Not the owner: 65534 opens root's 0666 file for writing, root makes it
    # 0644; the descriptor may still truncate and allocate (and truncate(2)
    # by path is refused).
    other = ctx.p("roots")
    write_file(other, b"0123456789")
    os.chmod(other, 0o666)
    got = _fd_of_other_user_after_chmod(other, 0o644)
    names = tuple(errno.errorcode.get(e, e) if e else 0 for e in got)
    expect(got == (0, 0, errno.EACCES), f"65534's descriptor of root's file chmodded 0644: "
                                        f"ftruncate, posix_fallocate, truncate(path) gave {names}, "
                                        "want (0, 0, EACCES)")
    expect(read_file(other) == b"0123" + bytes(8188), "65534's ftruncate/fallocate contents")


def check_times(ctx):
    """mtime/ctime on write, truncate; ctime only on chmod/chown/link/rename; dir times; utime."""
    f = ctx.p("f")
    write_file(f, b"12345")
    s0 = os.stat(f)
    tick()
    with open(f, "r+b") as fh:
        fh.write(b"ab")
    later(s0, f, "st_mtime_ns", "write")
    later(s0, f, "st_ctime_ns", "write")
    s1 = os.stat(f)
    tick()
    os.truncate(f, 2)
    later(s1, f, "st_mtime_ns", "truncate")
    s2 = os.stat(f)
    tick()
    os.chmod(f, 0o600)
    later(s2, f, "st_ctime_ns", "chmod")
    s3 = os.stat(f)
    expect(s3.st_mtime_ns == s2.st_mtime_ns, "chmod changed mtime")
    tick()
    os.chown(f, NOBODY, -1)
    later(s3, f, "st_ctime_ns", "chown")
    s4 = os.stat(f)
    tick()
    os.link(f, ctx.p("f2"))
    later(s4, f, "st_ctime_ns", "link")
    expect(os.stat(f).st_mtime_ns == s4.st_mtime_ns, "link changed the file's mtime")
    s5 = os.stat(f)
    os.mkdir(ctx.p("d"))
    d0 = os.stat(ctx.dir)
    tick()
    os.rename(f, ctx.p("d", "f"))
    later(s5, ctx.p("d", "f"), "st_ctime_ns", "rename (file ctime)")
    later(d0, ctx.dir, "st_mtime_ns", "rename (old parent mtime)")
    expect(os.stat(ctx.p("d", "f")).st_mtime_ns == s5.st_mtime_ns, "rename changed the file's mtime")
    # Directory mtime/ctime on create and unlink in it.
    d1 = os.stat(ctx.p("d"))
    tick()
    write_file(ctx.p("d", "new"), b"")
    later(d1, ctx.p("d"), "st_mtime_ns", "create in dir")
    later(d1, ctx.p("d"), "st_ctime_ns", "create in dir (ctime)")
    d2 = os.stat(ctx.p("d"))
    tick()
    os.unlink(ctx.p("d", "new"))
    later(d2, ctx.p("d"), "st_mtime_ns", "unlink in dir")
    # Reading does not change mtime/ctime.
    s6 = os.stat(ctx.p("d", "f"))
    tick()
    read_file(ctx.p("d", "f"))
    s7 = os.stat(ctx.p("d", "f"))
    expect((s7.st_mtime_ns, s7.st_ctime_ns) == (s6.st_mtime_ns, s6.st_ctime_ns), "read changed mtime/ctime")
    # utime sets both exactly (to the microsecond at least), and moves ctime.
    at, mt = 1_000_000_000_123_456_000, 1_100_000_000_654_321_000
    os.utime(ctx.p("d", "f"), ns=(at, mt))
    s8 = os.stat(ctx.p("d", "f"))
    expect(s8.st_atime_ns // 1000 == at // 1000 and s8.st_mtime_ns // 1000 == mt // 1000,
           f"utime: got atime {s8.st_atime_ns} mtime {s8.st_mtime_ns}")
    later(s7, ctx.p("d", "f"), "st_ctime_ns", "utime")
    os.utime(ctx.p("d", "f"))   # now
    expect(abs(os.stat(ctx.p("d", "f")).st_mtime - time.time()) < 60, "utime(now)")
    # Timestamps are current (the clock of the filesystem is sane).
    write_file(ctx.p("now"), b"")
    expect(abs(os.stat(ctx.p("now")).st_mtime - time.time()) < 60, "new file's mtime is not now")


def check_atime(ctx):
    """relatime: a read updates atime when atime is older than mtime (or a day old)."""
    f = ctx.p("f")
    write_file(f, b"data")
    st = os.stat(f)
    old = st.st_mtime_ns - 3 * 86400 * 10**9
    os.utime(f, ns=(old, st.st_mtime_ns))
    expect(os.stat(f).st_atime_ns == old, "utime atime")
    read_file(f)
    expect(os.stat(f).st_atime_ns > old, "reading did not update an atime older than mtime (relatime)")


def check_xattrs(ctx):
    f = ctx.p("f")
    write_file(f, b"")
    os.mkdir(ctx.p("d"))
    binary = bytes(range(256)) * 4 + b"\0\0end"
    os.setxattr(f, "user.plain", b"value")
    os.setxattr(f, "user.bin", binary)
    os.setxattr(f, "user.empty", b"")
    os.setxattr(ctx.p("d"), "user.dirattr", b"on a dir")
    expect(os.getxattr(f, "user.plain") == b"value", "getxattr")
    expect(os.getxattr(f, "user.bin") == binary, "binary xattr value")
    expect(os.getxattr(f, "user.empty") == b"", "empty xattr value")
    expect(os.getxattr(ctx.p("d"), "user.dirattr") == b"on a dir", "xattr on a directory")
    names = set(os.listxattr(f))
    expect({"user.plain", "user.bin", "user.empty"} <= names, f"listxattr {names}")
    expect_errno(errno.EEXIST, os.setxattr, f, "user.plain", b"x", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, f, "user.none", b"x", os.XATTR_REPLACE)
    os.setxattr(f, "user.plain", b"replaced", os.XATTR_REPLACE)
    expect(os.getxattr(f, "user.plain") == b"replaced", "XATTR_REPLACE")
    expect_errno(errno.ENODATA, os.getxattr, f, "user.none")
    os.removexattr(f, "user.plain")
    expect_errno(errno.ENODATA, os.getxattr, f, "user.plain")
    expect_errno(errno.ENODATA, os.removexattr, f, "user.plain")
    expect("user.plain" not in os.listxattr(f), "removed xattr still listed")
    expect_errno(errno.ENOENT, os.getxattr, ctx.p("missing"), "user.x")
    # The xattr follows the inode across rename and hard link.
    os.rename(f, ctx.p("g"))
    os.link(ctx.p("g"), ctx.p("h"))
    expect(os.getxattr(ctx.p("h"), "user.bin") == binary, "xattr lost across rename/link")
    os.symlink("g", ctx.p("l"))
    expect(os.getxattr(ctx.p("l"), "user.bin") == binary, "getxattr follows symlinks")
    # A write removes a file capability (security.capability), as on a local
    # filesystem, also through a write-only descriptor (which Strata FS serves
    # without the page cache) and also for root.
    if os.geteuid() == 0:
        cap = struct.pack("<5I", 0x02000000, 1 << 10, 0, 0, 0)  # v2: cap_net_bind_service
        for name, mode in (("cap-w", os.O_WRONLY), ("cap-rw", os.O_RDWR)):
            write_file(ctx.p(name), b"binary")
            os.setxattr(ctx.p(name), "security.capability", cap)
            expect(os.getxattr(ctx.p(name), "security.capability") == cap, "security.capability set")
            fd = os.open(ctx.p(name), mode)
            try:
                os.write(fd, b"B")
            finally:
                os.close(fd)
            expect_errno(errno.ENODATA, os.getxattr, ctx.p(name), "security.capability")


# --------------------------------------------------------------------------
# POSIX ACLs (system.posix_acl_access / _default, Linux's xattr format:
# a version-2 header, then {u16 tag, u16 perm, u32 id} entries). The checks
# set them with os.setxattr so they run without the acl package; when
# getfacl is installed its output is checked too.

ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 0x10, 0x20
ACL_ACCESS, ACL_DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
_ACL_NO_ID = 0xFFFFFFFF


def acl_pack(entries):
    """entries: (tag, perm[, id]) tuples."""
    out = struct.pack("<I", 2)
    for e in entries:
        tag, perm = e[0], e[1]
        out += struct.pack("<HHI", tag, perm, e[2] if len(e) > 2 else _ACL_NO_ID)
    return out


def acl_unpack(b):
    expect(len(b) >= 4 and (len(b) - 4) % 8 == 0 and struct.unpack("<I", b[:4])[0] == 2,
           f"malformed ACL xattr {b!r}")
    out = set()
    for off in range(4, len(b), 8):
        tag, perm, uid = struct.unpack("<HHI", b[off:off + 8])
        out.add((tag, perm) if tag in (ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_MASK, ACL_OTHER)
                else (tag, perm, uid))
    return out


def _rw_open(path):
    os.close(os.open(path, os.O_RDWR))


def check_posix_acls(ctx):
    """setfacl semantics (acl(5)): a named-user entry grants what the mode
    does not, the mask limits it and is the mode's group bits, chmod changes
    the mask, a directory's default ACL is inherited (and replaces the umask);
    only the owner may set an ACL. As root and as 65534."""
    if os.geteuid() != 0:
        ctx.note("skipped: needs root (runs checks as uid 65534)")
        return
    os.chmod(ctx.dir, 0o755)
    f = ctx.p("f")
    write_file(f, b"root's", mode=0o600)
    os.chmod(f, 0o600)
    expect(child_errno(_rw_open, f) == errno.EACCES, "65534 opened root's 0600 file before any ACL")
    acl = [(ACL_USER_OBJ, 6), (ACL_USER, 6, NOBODY), (ACL_GROUP_OBJ, 0), (ACL_MASK, 6),
           (ACL_OTHER, 0)]
    try:
        os.setxattr(f, ACL_ACCESS, acl_pack(acl))
    except OSError as e:
        raise CheckFailed(f"setting {ACL_ACCESS}: {e}")
    expect(stat.S_IMODE(os.stat(f).st_mode) == 0o660,
           f"setfacl u:65534:rw on 0600: mode {oct(os.stat(f).st_mode)}, want 0660 (group bits = mask)")
    expect(acl_unpack(os.getxattr(f, ACL_ACCESS)) == set(acl), "getxattr returns the ACL set")
    expect(ACL_ACCESS in os.listxattr(f), "listxattr names the access ACL")
    expect(child_errno(_rw_open, f) == 0, "65534 cannot open for write with u:65534:rw")
    if shutil.which("getfacl"):
        import subprocess
        out = subprocess.run(["getfacl", "-cn", f], capture_output=True, text=True).stdout
        expect(f"user:{NOBODY}:rw-" in out and "mask::rw-" in out, f"getfacl shows {out!r}")
    # chmod changes the mask: g-w leaves 65534 read only.
    os.chmod(f, 0o640)
    got = acl_unpack(os.getxattr(f, ACL_ACCESS))
    expect((ACL_MASK, 4) in got and (ACL_USER, 6, NOBODY) in got,
           f"chmod 0640 did not set the mask to r-- (ACL {sorted(got)})")
    expect(child_errno(_rw_open, f) == errno.EACCES, "65534 wrote past a mask of r--")
    expect(child_errno(_open_read, f) == 0, "65534 cannot read with u:65534:rw, mask r--")
    # A named entry denies what the other bits would grant.
    g = ctx.p("g")
    write_file(g, b"deny", mode=0o644)
    os.setxattr(g, ACL_ACCESS, acl_pack([(ACL_USER_OBJ, 6), (ACL_USER, 0, NOBODY),
                                         (ACL_GROUP_OBJ, 4), (ACL_MASK, 4), (ACL_OTHER, 4)]))
    expect(child_errno(_open_read, g) == errno.EACCES, "u:65534:--- did not deny (mode alone allows)")
    # Only the owner sets an ACL; write permission is not enough.
    expect(child_errno(os.setxattr, f, ACL_ACCESS, acl_pack(acl)) == errno.EPERM,
           "65534 set the ACL of root's file")
    # An ACL the mode can say alone is stored as the mode (setfacl -m on a minimal ACL).
    h = ctx.p("h")
    write_file(h, b"", mode=0o600)
    os.setxattr(h, ACL_ACCESS, acl_pack([(ACL_USER_OBJ, 7), (ACL_GROUP_OBJ, 5), (ACL_OTHER, 1)]))
    expect(stat.S_IMODE(os.stat(h).st_mode) == 0o751, "a minimal ACL did not set the mode")
    # Malformed: no mask with a named entry; default ACL on a file.
    expect_errno(errno.EINVAL, os.setxattr, h, ACL_ACCESS,
                 acl_pack([(ACL_USER_OBJ, 7), (ACL_USER, 7, 5), (ACL_GROUP_OBJ, 5), (ACL_OTHER, 1)]))
    expect_errno(errno.EACCES, os.setxattr, h, ACL_DEFAULT, acl_pack(acl))
    # Removing the ACL: 65534 falls back to the other bits (---).
    os.removexattr(f, ACL_ACCESS)
    expect_errno(errno.ENODATA, os.getxattr, f, ACL_ACCESS)
    expect(child_errno(_open_read, f) == errno.EACCES, "the removed ACL still granted read")

    # Default ACL on a directory: inherited by files and subdirectories.
    d = ctx.p("d")
    os.mkdir(d, 0o755)
    os.chmod(d, 0o755)
    dacl = [(ACL_USER_OBJ, 7), (ACL_USER, 7, NOBODY), (ACL_GROUP_OBJ, 5), (ACL_MASK, 7),
            (ACL_OTHER, 0)]
    os.setxattr(d, ACL_DEFAULT, acl_pack(dacl))
    expect(acl_unpack(os.getxattr(d, ACL_DEFAULT)) == set(dacl), "getxattr of the default ACL")
    old_umask = os.umask(0o077)  # replaced by the default ACL, must not apply
    try:
        fd = os.open(os.path.join(d, "file"), os.O_CREAT | os.O_WRONLY, 0o666)
        os.close(fd)
        os.mkdir(os.path.join(d, "sub"), 0o777)
    finally:
        os.umask(old_umask)
    fa = acl_unpack(os.getxattr(os.path.join(d, "file"), ACL_ACCESS))
    want = {(ACL_USER_OBJ, 6), (ACL_USER, 7, NOBODY), (ACL_GROUP_OBJ, 5), (ACL_MASK, 6), (ACL_OTHER, 0)}
    expect(fa == want, f"file in a dir with a default ACL got {sorted(fa)}, want {sorted(want)}")
    fm = stat.S_IMODE(os.stat(os.path.join(d, "file")).st_mode)
    expect(fm == 0o660, f"inherited file mode {oct(fm)}, want 0660 (0666 masked by the ACL, no umask)")
    expect_errno(errno.ENODATA, os.getxattr, os.path.join(d, "file"), ACL_DEFAULT)
    sub = os.path.join(d, "sub")
    expect(acl_unpack(os.getxattr(sub, ACL_DEFAULT)) == set(dacl), "subdirectory did not inherit the default ACL")
    expect(acl_unpack(os.getxattr(sub, ACL_ACCESS)) ==
           {(ACL_USER_OBJ, 7), (ACL_USER, 7, NOBODY), (ACL_GROUP_OBJ, 5), (ACL_MASK, 7), (ACL_OTHER, 0)},
           "subdirectory access ACL")
    expect(stat.S_IMODE(os.stat(sub).st_mode) == 0o770, f"subdirectory mode {oct(os.stat(sub).st_mode)}")
    expect(child_errno(_rw_open, os.path.join(d, "file")) == 0, "65534 cannot write the inherited file")
    expect(child_errno(_create_in, os.path.join(sub, "by-nobody")) == 0,
           "65534 cannot create in a subdirectory the default ACL grants rwx")
    # Without a default ACL the umask applies as before.
    old_umask = os.umask(0o077)
    try:
        os.close(os.open(ctx.p("plain"), os.O_CREAT | os.O_WRONLY, 0o666))
    finally:
        os.umask(old_umask)
    expect(stat.S_IMODE(os.stat(ctx.p("plain")).st_mode) == 0o600, "umask without a default ACL")
    # The acl package's tools, where installed (scripts/install-deps.sh test).
    if not (shutil.which("setfacl") and shutil.which("getfacl")):
        ctx.note("setfacl/getfacl not installed: checked through the xattrs only")
        return
    import subprocess

    def run(*cmd):
        p = subprocess.run(list(cmd), capture_output=True, text=True)
        expect(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout
    t = ctx.p("tool")
    write_file(t, b"t", mode=0o600)
    os.chmod(t, 0o600)
    run("setfacl", "-m", f"u:{NOBODY}:rw", t)
    out = run("getfacl", "-cn", t)
    expect(f"user:{NOBODY}:rw-" in out and "mask::rw-" in out and "other::---" in out,
           f"getfacl after setfacl -m u:{NOBODY}:rw: {out!r}")
    expect(child_errno(_rw_open, t) == 0, "setfacl -m u:65534:rw did not let 65534 write")
    run("chmod", "g-w", t)
    expect("mask::r--" in run("getfacl", "-cn", t), "chmod g-w did not lower the mask (getfacl)")
    run("setfacl", "-b", t)
    expect(f"user:{NOBODY}" not in run("getfacl", "-cn", t), "setfacl -b left the named entry")
    expect(child_errno(_open_read, t) == errno.EACCES, "setfacl -b: 65534 still reads")
    td = ctx.p("tooldir")
    os.mkdir(td, 0o755)
    run("setfacl", "-d", "-m", f"u:{NOBODY}:rwx", td)
    expect(f"default:user:{NOBODY}:rwx" in run("getfacl", "-cn", td), "getfacl of setfacl -d -m")
    os.mkdir(os.path.join(td, "kid"))
    write_file(os.path.join(td, "kid", "grandkid"), b"g")
    out = run("getfacl", "-cn", os.path.join(td, "kid", "grandkid"))
    expect(f"user:{NOBODY}:rwx" in out, f"grandchild did not inherit the default ACL: {out!r}")
    # Created 0644: the mask is r--, so the inherited entry grants read only.
    expect("mask::r--" in out, f"grandchild created 0644 has mask {out!r}")
    expect(child_errno(_open_read, os.path.join(td, "kid", "grandkid")) == 0,
           "65534 cannot read a file that inherited u:65534:rwx")
    expect(child_errno(_rw_open, os.path.join(td, "kid", "grandkid")) == errno.EACCES,
           "65534 wrote past the mask r-- of a file created 0644")
    expect(child_errno(_create_in, os.path.join(td, "kid", "by-nobody")) == 0,
           "65534 cannot create in a directory that inherited u:65534:rwx")


def _signalled_waiter(path, lock_fn, release):
    """A child blocks in lock_fn on a lock we hold; SIGALRM after 0.3 s must end
    the wait (Python raises from the handler) instead of leaving the child stuck
    until the lock is free. Returns (outcome, seconds) as the child saw them."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)

            def on_alarm(signum, frame):
                raise TimeoutError()

            signal.signal(signal.SIGALRM, on_alarm)
            fd = os.open(path, os.O_RDWR)
            t0 = time.time()
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            try:
                lock_fn(fd)
                res = "locked"
            except TimeoutError:
                res = "interrupted"
            os.write(w, f"{res} {time.time() - t0:.3f}".encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        select.select([r], [], [], 5.0)   # a stuck child: release below frees it
    finally:
        release()
        out = os.read(r, 100).decode()
        os.close(r)
        os.waitpid(pid, 0)
    what, secs = (out.split() + ["?", "nan"])[:2]
    return what, float(secs)


def check_flock(ctx):
    """BSD flock between two processes: exclusive blocks, shared is shared, close unlocks."""
    path = ctx.p("flock")
    write_file(path, b"")

    def try_lock(op):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return "locked"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))
        finally:
            os.close(fd)

    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        expect(in_child(try_lock, fcntl.LOCK_EX) in ("EWOULDBLOCK", "EAGAIN"), "EX vs EX did not conflict")
        expect(in_child(try_lock, fcntl.LOCK_SH) in ("EWOULDBLOCK", "EAGAIN"), "EX vs SH did not conflict")
        fcntl.flock(fd, fcntl.LOCK_SH)   # downgrade
        expect(in_child(try_lock, fcntl.LOCK_SH) == "locked", "SH vs SH conflicted")
        expect(in_child(try_lock, fcntl.LOCK_EX) in ("EWOULDBLOCK", "EAGAIN"), "SH vs EX did not conflict")
        fcntl.flock(fd, fcntl.LOCK_UN)
        expect(in_child(try_lock, fcntl.LOCK_EX) == "locked", "unlock did not release")
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)                     # close releases
    expect(in_child(try_lock, fcntl.LOCK_EX) == "locked", "close did not release the flock")

    # A blocked locker wakes up when the holder unlocks.
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)

    def blocking_lock():
        f2 = os.open(path, os.O_RDONLY)
        t0 = time.time()
        fcntl.flock(f2, fcntl.LOCK_EX)
        dt = time.time() - t0
        os.close(f2)
        return dt

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, repr(blocking_lock()).encode())
        finally:
            os._exit(0)
    os.close(w)
    time.sleep(0.5)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    out = os.read(r, 100)
    os.close(r)
    os.waitpid(pid, 0)
    expect(out and float(out) >= 0.4, f"blocking flock returned too early / not at all ({out!r})")

    # A blocked flock() ends when its process is signalled.
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    # (Released with LOCK_UN: the child shares fd's open file description, so
    # closing it here alone would leave the flock held by the waiter itself.)
    what, secs = _signalled_waiter(path, lambda f: fcntl.flock(f, fcntl.LOCK_EX),
                                   lambda: (fcntl.flock(fd, fcntl.LOCK_UN), os.close(fd)))
    expect(what == "interrupted" and secs < 2.0,
           f"a signal did not end a blocked flock: {what} after {secs:.1f} s")


def check_fcntl_locks(ctx):
    """POSIX record locks between processes: ranges, read/write, F_GETLK, unlock."""
    path = ctx.p("plock")
    write_file(path, bytes(1000))

    def try_lockf(cmd, length, start):
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.lockf(fd, cmd | fcntl.LOCK_NB, length, start)
            return "locked"
        except OSError as e:
            return "busy" if e.errno in (errno.EAGAIN, errno.EACCES) else errno.errorcode.get(e.errno)
        finally:
            os.close(fd)

    def getlk(start, length):
        fd = os.open(path, os.O_RDWR)
        try:
            req = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, start, length, 0)
            res = fcntl.fcntl(fd, fcntl.F_GETLK, req)
            l_type, _whence, l_start, l_len, l_pid = struct.unpack("hhqqi", res)
            return (l_type, l_start, l_len, l_pid)
        finally:
            os.close(fd)

    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)          # bytes [0, 100)
        fcntl.lockf(fd, fcntl.LOCK_SH, 100, 500)        # bytes [500, 600)
        expect(in_child(try_lockf, fcntl.LOCK_EX, 10, 50) == "busy", "W vs W overlap did not conflict")
        expect(in_child(try_lockf, fcntl.LOCK_SH, 10, 50) == "busy", "R vs W overlap did not conflict")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 100, 200) == "locked", "disjoint range conflicted")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 1, 99) == "busy", "last byte of the range")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 1, 100) == "locked", "first byte after the range")
        expect(in_child(try_lockf, fcntl.LOCK_SH, 50, 520) == "locked", "R vs R conflicted")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 50, 520) == "busy", "W vs R did not conflict")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 0, 0) == "busy", "whole-file lock vs held ranges")
        t, s, n, pid = in_child(getlk, 20, 10)
        expect(t == fcntl.F_WRLCK and s == 0 and n == 100 and pid == os.getpid(),
               f"F_GETLK reported type {t} start {s} len {n} pid {pid}; want F_WRLCK 0 100 {os.getpid()}")
        t, *_ = in_child(getlk, 300, 10)
        expect(t == fcntl.F_UNLCK, "F_GETLK on a free range did not report F_UNLCK")
        fcntl.lockf(fd, fcntl.LOCK_UN, 50, 0)           # split: [50, 100) stays locked
        expect(in_child(try_lockf, fcntl.LOCK_EX, 50, 0) == "locked", "partial unlock did not free [0,50)")
        expect(in_child(try_lockf, fcntl.LOCK_EX, 10, 60) == "busy", "partial unlock freed too much")
    finally:
        os.close(fd)                                      # closing drops the process's locks
    expect(in_child(try_lockf, fcntl.LOCK_EX, 0, 0) == "locked", "close did not release POSIX locks")

    # A blocked F_SETLKW ends when its process is signalled.
    fd = os.open(path, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX, 100, 0)
    what, secs = _signalled_waiter(path, lambda f: fcntl.lockf(f, fcntl.LOCK_EX, 10, 10), lambda: os.close(fd))
    expect(what == "interrupted" and secs < 2.0,
           f"a signal did not end a blocked F_SETLKW: {what} after {secs:.1f} s")


def check_truncate_under_listing(ctx):
    """A shrinking truncate is what the next open sees, while other threads
    list and stat the directory (whose attribute reads race with it) and the
    file's last descriptor is still being released. Strata FS once let such a
    read, started before the truncate, put the old length back."""
    stop = time.time() + 3.0
    errors = []

    def truncator(k):
        path = ctx.p(f"t{k}")
        write_file(path, b"")
        big = b"x" * 300000
        n = 0
        while time.time() < stop and not errors:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, big, 1000000 + n % 1000)
            finally:
                os.close(fd)
            small = 1000 + n % 5000
            os.truncate(path, small)
            got = len(read_file(path))
            if got != small:
                errors.append(f"{path}: truncated to {small} bytes, read {got} (iteration {n})")
            n += 1

    def lister():
        while time.time() < stop and not errors:
            for name in os.listdir(ctx.dir):
                try:
                    os.stat(os.path.join(ctx.dir, name))
                except FileNotFoundError:
                    pass

    threads = [threading.Thread(target=truncator, args=(k,)) for k in range(3)]
    threads += [threading.Thread(target=lister) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(not errors, "; ".join(errors[:3]))


def check_write_only_coherence(ctx):
    """Writes through a write-only descriptor (served without the page cache by
    Strata FS) are seen at once by descriptors and maps that cached the range,
    and extend the size they see."""
    path = ctx.p("wo.bin")
    write_file(path, b"A" * (3 * 4096))
    r = os.open(path, os.O_RDONLY)
    rw = os.open(path, os.O_RDWR)
    m = mmap.mmap(rw, 3 * 4096, mmap.MAP_SHARED, mmap.PROT_READ)
    try:
        expect(os.pread(r, 3 * 4096, 0) == b"A" * (3 * 4096), "initial read")
        expect(m[4096:4100] == b"AAAA", "initial map read")
        w = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(w, b"B" * 4096, 4096)
            expect(os.pread(r, 4096, 4096) == b"B" * 4096, "a write-only descriptor's write not seen by a reader")
            expect(m[4096:4100] == b"BBBB", "a write-only descriptor's write not seen through a map")
            os.pwrite(w, b"C" * 10, 3 * 4096)
            expect(os.fstat(r).st_size == 3 * 4096 + 10, f"size after extending write: {os.fstat(r).st_size}")
            expect(os.pread(r, 100, 3 * 4096) == b"C" * 10, "extending write not read back")
        finally:
            os.close(w)
        expect(read_file(path) == b"A" * 4096 + b"B" * 4096 + b"A" * 4096 + b"C" * 10, "content after close")
    finally:
        m.close()
        os.close(rw)
        os.close(r)


def check_mmap(ctx):
    """mmap read, MAP_SHARED write-back seen through a fresh fd, write() seen through a map."""
    path = ctx.p("m.bin")
    rng = random.Random(99)
    data = bytearray(rand_bytes(rng, 3 * MiB + 100))
    write_file(path, data)
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, len(data), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            expect(m[:] == bytes(data), "mmap read")
            for off in (0, 4095, 4096, MiB - 1, 2 * MiB + 17, len(data) - 5):
                patch = rand_bytes(rng, 5)
                m[off:off + 5] = patch
                data[off:off + 5] = patch
            m.flush()
            expect(read_file(path) == bytes(data), "msync'd mmap writes not seen through a fresh fd")
            os.pwrite(fd, b"WRITTEN", 100)
            data[100:107] = b"WRITTEN"
            expect(m[100:107] == b"WRITTEN", "pwrite not seen through the map")
            m[200:205] = b"LATER"
            data[200:205] = b"LATER"
        finally:
            m.close()                      # unmapped without msync: still written back
    finally:
        os.close(fd)
    expect(read_file(path) == bytes(data), "mmap writes lost after munmap + close")
    # A read-only map of a file opened read-only.
    fd = os.open(path, os.O_RDONLY)
    try:
        m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
        expect(m[len(data) - 10:] == bytes(data[-10:]), "read-only map")
        m.close()
    finally:
        os.close(fd)


def check_open_flags(ctx):
    path = ctx.p("f")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b"original")
    os.close(fd)
    expect_errno(errno.EEXIST, os.open, path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.symlink("f", ctx.p("link"))
    expect_errno(errno.EEXIST, os.open, ctx.p("link"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    s0 = os.stat(path)
    tick()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    expect(os.stat(path).st_size == 0, "O_TRUNC did not truncate")
    later(s0, path, "st_mtime_ns", "O_TRUNC")
    write_file(path, b"again")
    fd = os.open(path, os.O_RDWR)
    os.lseek(fd, 2, os.SEEK_SET)
    expect(os.read(fd, 10) == b"ain", "read after lseek")
    os.lseek(fd, 0, os.SEEK_END)
    os.write(fd, b"!")
    os.close(fd)
    expect(read_file(path) == b"again!", "write at SEEK_END")
    expect_errno(errno.ENOENT, os.open, ctx.p("missing"), os.O_RDONLY)
    expect_errno(errno.ENOENT, os.open, ctx.p("nodir", "x"), os.O_CREAT | os.O_WRONLY, 0o644)
    expect_errno(errno.EISDIR, os.open, ctx.dir, os.O_WRONLY | os.O_CREAT, 0o644)
    fd = os.open(path, os.O_RDONLY)
    try:
        expect_errno(errno.EBADF, os.write, fd, b"x")
    finally:
        os.close(fd)
    fd = os.open(path, os.O_WRONLY)
    try:
        expect_errno(errno.EBADF, os.read, fd, 1)
    finally:
        os.close(fd)
    # O_CREAT on an existing file keeps it and its mode.
    os.chmod(path, 0o600)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o777)
    os.close(fd)
    expect(read_file(path) == b"again!" and stat.S_IMODE(os.stat(path).st_mode) == 0o600,
           "O_CREAT of an existing file changed it")
    # fsync / fdatasync succeed on files and directories.
    fd = os.open(path, os.O_RDWR)
    os.fsync(fd)
    os.fdatasync(fd)
    os.close(fd)
    dfd = os.open(ctx.dir, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)


def check_statfs(ctx):
    st = os.statvfs(ctx.dir)
    expect(st.f_bsize > 0 and st.f_frsize > 0, f"block sizes {st.f_bsize}/{st.f_frsize}")
    expect(st.f_blocks > 0, "f_blocks is 0")
    expect(0 <= st.f_bavail <= st.f_bfree <= st.f_blocks, f"bavail {st.f_bavail} bfree {st.f_bfree} "
                                                          f"blocks {st.f_blocks}")
    expect(st.f_files == 0 or st.f_ffree <= st.f_files, "ffree > files")
    expect(st.f_namemax >= 255, f"namemax {st.f_namemax}")
    fd = os.open(ctx.dir, os.O_RDONLY)
    try:
        fst = os.fstatvfs(fd)
    finally:
        os.close(fd)
    expect(fst.f_blocks == st.f_blocks, "fstatvfs disagrees with statvfs")
    ctx.note(f"statfs: {st.f_blocks * st.f_frsize / 2**30:.1f} GiB total, "
             f"{st.f_bavail * st.f_frsize / 2**30:.1f} GiB available, files {st.f_files}")


def check_large_dir(ctx):
    """N entries created, listed with os.scandir (every name once, right type), removed."""
    n = ctx.opts.get("large_dir", 20000)
    budget = ctx.opts.get("large_dir_budget_s")   # None: no limit
    d = ctx.p("big")
    os.mkdir(d)
    t0 = time.time()
    for i in range(n):
        fd = os.open(os.path.join(d, f"entry-{i:06d}"), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.close(fd)
        if budget is not None and i % 100 == 99 and time.time() - t0 > budget:
            ctx.leave = True   # removing them would take as long again; the caller discards the volume
            raise CheckFailed(f"too slow: created {i + 1} of {n} entries in {time.time() - t0:.0f}s "
                              f"({(i + 1) / (time.time() - t0):.0f} creates/s); budget {budget}s")
    os.mkdir(os.path.join(d, "a-subdir"))
    t1 = time.time()
    seen = {}
    with os.scandir(d) as it:
        for e in it:
            seen[e.name] = seen.get(e.name, 0) + 1
            if e.name == "a-subdir":
                expect(e.is_dir(follow_symlinks=False), "subdir is not a dir in scandir")
            else:
                expect(e.is_file(follow_symlinks=False), f"{e.name} is not a regular file in scandir")
    t2 = time.time()
    dups = [k for k, v in seen.items() if v > 1]
    expect(not dups, f"scandir returned {len(dups)} names twice, e.g. {dups[:3]}")
    want = {f"entry-{i:06d}" for i in range(n)} | {"a-subdir"}
    expect(set(seen) == want, f"scandir: {len(want - set(seen))} missing, {len(set(seen) - want)} extra")
    # Listing while removing: every listed name can be removed once; nothing is left.
    removed = 0
    with os.scandir(d) as it:
        for e in it:
            if e.name != "a-subdir":
                os.unlink(e.path)
                removed += 1
                if budget is not None and removed % 100 == 0 and time.time() - t0 > 2 * budget:
                    ctx.leave = True
                    raise CheckFailed(f"too slow: {removed} of {n} entries unlinked "
                                      f"{time.time() - t2:.0f}s after the listing ({removed / (time.time() - t2):.0f}"
                                      f" unlinks/s); budget {2 * budget}s for the whole check")
    left = os.listdir(d)
    expect(removed == n and left == ["a-subdir"], f"removed {removed}, left {left[:5]} ({len(left)})")
    t3 = time.time()
    os.rmdir(os.path.join(d, "a-subdir"))
    os.rmdir(d)
    ctx.note(f"large dir, {n} entries: create {n / (t1 - t0):.0f}/s, scandir {t2 - t1:.2f}s, "
             f"unlink {n / (t3 - t2):.0f}/s")


def check_exdev(ctx):
    """rename/link out of the filesystem: EXDEV."""
    write_file(ctx.p("f"), b"x")
    here = os.stat(ctx.dir).st_dev
    for other in ctx.opts.get("exdev_dirs", ["/tmp", "/dev/shm", "/run"]):
        if os.path.isdir(other) and os.stat(other).st_dev != here:
            break
    else:
        ctx.note("skipped: no directory on another filesystem")
        return
    dst = os.path.join(other, f"strata-fs-exdev-{os.getpid()}")
    try:
        expect_errno(errno.EXDEV, os.rename, ctx.p("f"), dst)
        expect_errno(errno.EXDEV, os.link, ctx.p("f"), dst)
        expect(not os.path.lexists(dst), "failed cross-device rename left a file")
        expect(read_file(ctx.p("f")) == b"x", "failed cross-device rename lost the source")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(dst)
    ctx.note(f"EXDEV checked against {other}")


def check_errors_misc(ctx):
    """The common error returns in one place."""
    write_file(ctx.p("f"), b"x")
    os.mkdir(ctx.p("d"))
    write_file(ctx.p("d", "g"), b"y")
    expect_errno(errno.ENOENT, os.stat, ctx.p("none"))
    expect_errno(errno.ENOENT, os.unlink, ctx.p("none"))
    expect_errno(errno.ENOENT, os.listdir, ctx.p("none"))
    expect_errno(errno.ENOENT, os.readlink, ctx.p("none"))
    expect_errno(errno.ENOENT, os.chmod, ctx.p("none"), 0o644)
    expect_errno(errno.EEXIST, os.mkdir, ctx.p("f"))
    expect_errno(errno.EEXIST, os.link, ctx.p("f"), ctx.p("d", "g"))
    expect_errno(errno.EEXIST, os.symlink, "x", ctx.p("d"))
    expect_errno(errno.EEXIST, os.mkfifo, ctx.p("f"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, ctx.p("d"))
    expect_errno(errno.EISDIR, os.unlink, ctx.p("d"))
    expect_errno(errno.EISDIR, os.open, ctx.p("d"), os.O_WRONLY)
    expect_errno(errno.ENOTDIR, os.open, ctx.p("f", "x"), os.O_CREAT | os.O_WRONLY, 0o644)
    expect_errno(errno.ENOTDIR, os.rmdir, ctx.p("f"))
    expect_errno(errno.ENOTDIR, os.rename, ctx.p("d"), ctx.p("f"))
    expect_errno(errno.EISDIR, os.rename, ctx.p("f"), ctx.p("d"))
    expect_errno(errno.EINVAL, os.rmdir, ctx.p("d", "."))


# --------------------------------------------------------------------------
# Persistence across a remount: prepare before, verify after.

PERSIST_DIR = "persist"


def persist_prepare(base):
    """Writes a tree exercising every kind of object; returns nothing. Verify it
    after a remount with persist_verify(base)."""
    with fd_guard():
        _persist_prepare(base)


def _persist_prepare(base):
    d = os.path.join(base, PERSIST_DIR)
    os.makedirs(os.path.join(d, "sub", "deeper"))
    rng = random.Random(4242)
    write_file(os.path.join(d, "big.bin"), rand_bytes(rng, 9 * MiB + 7))
    write_file(os.path.join(d, "small.txt"), b"small file\n")
    fd = os.open(os.path.join(d, "sparse.bin"), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b"tail", 70 * MiB)
    os.close(fd)
    write_file(os.path.join(d, "mm.bin"), bytes(64 * KiB))
    fd = os.open(os.path.join(d, "mm.bin"), os.O_RDWR)
    m = mmap.mmap(fd, 64 * KiB)
    m[1000:1010] = b"MMAPPED!!!"
    m.close()
    os.close(fd)
    write_file(os.path.join(d, "punched.bin"), b"\xff" * (2 * MiB))
    fd = os.open(os.path.join(d, "punched.bin"), os.O_RDWR)
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192)
    os.fsync(fd)
    os.close(fd)
    os.link(os.path.join(d, "small.txt"), os.path.join(d, "sub", "hardlink"))
    os.symlink("../small.txt", os.path.join(d, "sub", "symlink"))
    os.mkfifo(os.path.join(d, "fifo"), 0o640)
    os.setxattr(os.path.join(d, "small.txt"), "user.k", b"v\0v")
    os.chmod(os.path.join(d, "small.txt"), 0o751)
    os.chown(os.path.join(d, "small.txt"), NOBODY, 123)
    os.utime(os.path.join(d, "sub", "deeper"), ns=(1_500_000_000_000_000_000, 1_600_000_000_000_000_000))
    write_file(os.path.join(d, "renamed.tmp"), b"after rename")
    os.rename(os.path.join(d, "renamed.tmp"), os.path.join(d, "sub", "renamed"))
    write_file(os.path.join(d, "deleted"), b"gone")
    os.unlink(os.path.join(d, "deleted"))
    fd = os.open(os.path.join(d, "trunc.bin"), os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"z" * (5 * MiB))
    os.ftruncate(fd, 3 * MiB + 1)
    os.close(fd)


def persist_verify(base):
    d = os.path.join(base, PERSIST_DIR)
    rng = random.Random(4242)
    j = lambda *p: os.path.join(d, *p)  # noqa: E731
    expect(read_file(j("big.bin")) == rand_bytes(rng, 9 * MiB + 7), "big.bin")
    expect(read_file(j("small.txt")) == b"small file\n", "small.txt")
    sp = read_file(j("sparse.bin"))
    expect(len(sp) == 70 * MiB + 4 and sp[-4:] == b"tail" and sp[:70 * MiB].count(0) == 70 * MiB,
           "sparse.bin")
    mm = read_file(j("mm.bin"))
    expect(mm[1000:1010] == b"MMAPPED!!!" and len(mm) == 64 * KiB, "mmap write not persisted")
    pb = read_file(j("punched.bin"))
    expect(pb == b"\xff" * 4096 + bytes(8192) + b"\xff" * (2 * MiB - 12288), "punched hole not persisted")
    st = os.stat(j("small.txt"))
    expect(st.st_nlink == 2 and os.stat(j("sub", "hardlink")).st_ino == st.st_ino, "hard link")
    expect(os.readlink(j("sub", "symlink")) == "../small.txt", "symlink")
    expect(read_file(j("sub", "symlink")) == b"small file\n", "symlink target")
    expect(stat.S_ISFIFO(os.stat(j("fifo")).st_mode), "fifo")
    expect(os.getxattr(j("small.txt"), "user.k") == b"v\0v", "xattr")
    expect(stat.S_IMODE(st.st_mode) == 0o751, f"mode {oct(st.st_mode)}")
    expect((st.st_uid, st.st_gid) == (NOBODY, 123), f"owner {st.st_uid}:{st.st_gid}")
    sd = os.stat(j("sub", "deeper"))
    expect(sd.st_mtime_ns // 1000 == 1_600_000_000_000_000 and sd.st_atime_ns // 1000 == 1_500_000_000_000_000,
           "directory times")
    expect(read_file(j("sub", "renamed")) == b"after rename", "renamed file")
    expect(not os.path.exists(j("renamed.tmp")) and not os.path.exists(j("deleted")), "removed names")
    expect(read_file(j("trunc.bin")) == b"z" * (3 * MiB + 1), "truncated file")
    expect(sorted(os.listdir(d)) == sorted(["sub", "big.bin", "small.txt", "sparse.bin", "mm.bin",
                                            "punched.bin", "fifo", "trunc.bin"]),
           f"listing {sorted(os.listdir(d))}")
    expect(os.stat(d).st_nlink == 3, "nlink of persist/")


# --------------------------------------------------------------------------
# Registry and runner

CHECKS = [
    ("file_random_rw", check_file_random_rw),
    ("append", check_append),
    ("truncate", check_truncate),
    ("sparse", check_sparse),
    ("fallocate", check_fallocate),
    ("unlink_open_file", check_unlink_open_file),
    ("directories", check_directories),
    ("rename", check_rename),
    ("rename_atomic", check_rename_atomic),
    ("renameat2", check_renameat2),
    ("hardlinks", check_hardlinks),
    ("symlinks", check_symlinks),
    ("fifo", check_fifo),
    ("chmod_umask", check_chmod_umask),
    ("chown", check_chown),
    ("eacces_other_user", check_eacces_other_user),
    ("fd_write_access", check_fd_write_access),
    ("times", check_times),
    ("atime", check_atime),
    ("xattrs", check_xattrs),
    ("posix_acls", check_posix_acls),
    ("flock", check_flock),
    ("fcntl_locks", check_fcntl_locks),
    ("truncate_under_listing", check_truncate_under_listing),
    ("write_only_coherence", check_write_only_coherence),
    ("mmap", check_mmap),
    ("open_flags", check_open_flags),
    ("statfs", check_statfs),
    ("large_dir", check_large_dir),
    ("exdev", check_exdev),
    ("errors_misc", check_errors_misc),
]


def mount_dead(path):
    """None while path answers; else the error (ENOTCONN/ECONNABORTED: the FUSE
    daemon is gone)."""
    try:
        os.statvfs(path)
        os.listdir(path)
        return None
    except OSError as e:
        if e.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO):
            return f"{errno.errorcode.get(e.errno)}: {e.strerror}"
        return None


def _open_fds():
    try:
        return set(int(x) for x in os.listdir("/proc/self/fd"))
    except OSError:
        return set()


@contextlib.contextmanager
def fd_guard():
    """Closes the descriptors opened inside the block: a failed check may leave
    some open, and they would keep the mount busy (umount: EBUSY)."""
    before = _open_fds()
    try:
        yield
    finally:
        for fd in _open_fds() - before:
            try:
                os.close(fd)
            except OSError:
                pass


def _run_check(base, name, fn, opts):
    ctx = Ctx(base, name, opts)
    os.mkdir(ctx.dir)
    os.chmod(ctx.dir, 0o755)
    try:
        with fd_guard():
            fn(ctx)
    finally:
        # Leave the check's tree only when asked (debugging) or when removing it
        # would take too long.
        if ctx.leave:
            opts.setdefault("_left", []).append(ctx.dir)
        elif not opts.get("keep"):
            shutil.rmtree(ctx.dir, ignore_errors=True)
    return ctx.notes


def run_checks(mount_dir, runner, only=None, skip=(), opts=None):
    """Runs the checks in a fresh directory under mount_dir with runner.case()
    (strata_harness.Runner or SimpleRunner). Returns the work directory's path
    (removed at the end unless opts['keep'])."""
    opts = dict(opts or {})
    opts.pop("_left", None)
    base = tempfile.mkdtemp(prefix="posix-suite-", dir=mount_dir)
    os.chmod(base, 0o755)
    old_umask = os.umask(0o022)
    try:
        for name, fn in CHECKS:
            if (only and name not in only) or name in skip:
                continue
            dead = mount_dead(mount_dir)
            if dead:
                def report(dead=dead):
                    raise CheckFailed(f"the filesystem stopped answering ({dead}); the checks from "
                                      f"'{name}' on were not run")
                runner.case("filesystem alive", report)
                break

            def one(name=name, fn=fn):
                for line in _run_check(base, name, fn, opts):
                    print(f"     {name}: {line}", flush=True)
            runner.case(name, one)
    finally:
        os.umask(old_umask)
        if opts.get("_left"):
            print(f"     left in place: {', '.join(opts['_left'])}", flush=True)
        elif not opts.get("keep"):
            shutil.rmtree(base, ignore_errors=True)
    return base


class SimpleRunner:
    """Same interface as strata_harness.Runner (that module needs nothing else either)."""

    def __init__(self, name):
        self.name = name
        self.results = []

    def case(self, name, fn, *a, **kw):
        t0 = time.time()
        print(f"--- {self.name}: {name}", flush=True)
        try:
            fn(*a, **kw)
        except Exception as e:  # noqa: BLE001
            dt = time.time() - t0
            print(f"FAIL {name} ({dt:.1f}s)\n{traceback.format_exc()}", flush=True)
            self.results.append((name, False, dt, f"{type(e).__name__}: {e}"))
            return False
        dt = time.time() - t0
        print(f"ok   {name} ({dt:.1f}s)", flush=True)
        self.results.append((name, True, dt, ""))
        return True

    def finish(self):
        failed = [r for r in self.results if not r[1]]
        print(f"\n==== summary: {self.name}", flush=True)
        for name, ok, dt, detail in self.results:
            print(f"  {'PASS' if ok else 'FAIL'}  {name:<28} {dt:6.1f}s  {detail[:300]}")
        print(f"{self.name}: {len(self.results) - len(failed)} passed, {len(failed)} failed "
              f"of {len(self.results)}", flush=True)
        return 1 if failed or not self.results else 0


def fs_type_of(path):
    """(mount point, fstype) that path lives on, from /proc/self/mountinfo."""
    path = os.path.realpath(path)
    best = ("", "?")
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                mp = left.split()[4].replace("\\040", " ")
                if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best[0]):
                    best = (mp, right.split()[0])
    except OSError:
        pass
    return best


def _traversable_by_others(path):
    p = os.path.abspath(path)
    while True:
        if not os.stat(p).st_mode & 0o001:
            return p
        if p == "/":
            return None
        p = os.path.dirname(p)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", help="directory to test (a mount, or any local directory)")
    ap.add_argument("--only", default="", help="comma-separated check names")
    ap.add_argument("--skip", default="", help="comma-separated check names")
    ap.add_argument("--large-dir", type=int, default=20000, help="entries in the large-directory check")
    ap.add_argument("--large-dir-budget", type=float, default=None,
                    help="fail the large-directory check when creating takes longer (s)")
    ap.add_argument("--sparse-offset", type=int, default=None, help="offset of the far sparse write")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--list", action="store_true", help="list the checks and exit")
    ap.add_argument("--persist", choices=["prepare", "verify"],
                    help="only write the persistence tree (prepare) or check it (verify), "
                         "e.g. before and after a remount")
    a = ap.parse_args(argv)
    if a.list:
        for name, fn in CHECKS:
            print(f"{name:<20} {(fn.__doc__ or '').strip().splitlines()[0] if fn.__doc__ else ''}")
        return 0
    if not a.dir:
        ap.error("a directory is required")
    if a.persist:
        runner = SimpleRunner(f"persistence on {a.dir}")
        runner.case(f"persist_{a.persist}", persist_prepare if a.persist == "prepare" else persist_verify,
                    a.dir)
        return runner.finish()
    if os.geteuid() != 0:
        print("warning: not root; chown and other-user checks will fail", file=sys.stderr)
    blocker = _traversable_by_others(a.dir)
    if blocker:
        print(f"warning: {blocker} is not searchable by others; the other-user check will fail",
              file=sys.stderr)
    opts = {"large_dir": a.large_dir, "keep": a.keep, "large_dir_budget_s": a.large_dir_budget}
    if a.sparse_offset is not None:
        opts["sparse_offset"] = a.sparse_offset
    only = {s for s in a.only.split(",") if s}
    skip = {s for s in a.skip.split(",") if s}
    unknown = (only | skip) - {n for n, _ in CHECKS}
    if unknown:
        ap.error(f"unknown check(s): {', '.join(sorted(unknown))}")
    mp, fstype = fs_type_of(a.dir)
    print(f"testing {a.dir}: on {fstype} mounted at {mp}", flush=True)
    runner = SimpleRunner(f"posix suite on {a.dir} ({fstype})")
    run_checks(a.dir, runner, only=only, skip=skip, opts=opts)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
