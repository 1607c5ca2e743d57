"""Strata FS smoke test: format a volume (SQLite metadata, file:// data), mount
it in the background, write/read/rename/list a few files, unmount, mount again,
check the data survived and fsck is clean. Every mount is unmounted even when a
case fails.
"""

import hashlib
import json
import mmap
import os
import random
import re
import subprocess
import sys
import threading
import time

from strata_harness import Runner, clean_env, free_port, parse_args, run_tool, tempdir

args = parse_args()
ENV = clean_env()


def strata(*a, check=True, timeout=120):
    return run_tool([args.strata, "fs", *a], ENV, timeout=timeout, check=check)


def is_mounted(mnt):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def umount(mnt):
    """Unmounts and waits until the kernel no longer lists the mount."""
    if not is_mounted(mnt):
        return
    strata("umount", mnt, check=False)
    for _ in range(100):
        if not is_mounted(mnt):
            return
        time.sleep(0.1)
    subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)


def mount(meta, mnt, log, *extra):
    strata("mount", meta, mnt, "--background", "--log", log, "--log-level", "info", *extra)
    assert is_mounted(mnt), f"{mnt} is not in /proc/self/mounts after mount returned"


def check_metrics(port, at_least_written):
    """The mount's /metrics counts what this test just did through it."""
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    def val(name):
        assert name in values, f"/metrics has no {name}"
        return values[name]
    assert val("strata_fs_written_bytes_total") >= at_least_written, values.get("strata_fs_written_bytes_total")
    assert val("strata_fs_read_bytes_total") >= at_least_written
    for op in ("create", "write", "read", "rename", "unlink", "mkdir", "symlink", "readlink", "statfs"):
        assert val(f'strata_fs_op_seconds_count{{op="{op}"}}') >= 1, op
    assert val('strata_fsmeta_txn_seconds_count{kind="write"}') >= 20
    assert val("strata_fs_object_put_seconds_count") >= 10   # 9 MiB in 1 MiB blocks, the small files
    assert val("strata_fs_object_put_failures_total") == 0
    assert val("strata_fs_buffered_bytes") == 0   # everything closed was committed


def sha(data):
    return hashlib.sha256(data).hexdigest()


def concurrent_model_check(mnt, local, seconds=8.0, threads=4):
    """Threads each run random pwrite/truncate/fallocate/mmap/readdir on their
    own file, mirrored on a local file; every read-back must match at once."""
    end = time.time() + seconds
    errors = []

    def worker(k):
        rnd = random.Random(1000 + k)
        pm, pl = os.path.join(mnt, f"c{k}"), os.path.join(local, f"c{k}")
        for p in (pm, pl):
            open(p, "wb").close()
        n = 0
        while time.time() < end and not errors:
            op = rnd.random()
            if op < 0.45:
                off, ln = rnd.randrange(0, 6 << 20), rnd.randrange(1, 200000)
                data = os.urandom(ln)
                for p in (pm, pl):
                    fd = os.open(p, os.O_WRONLY)
                    os.pwrite(fd, data, off)
                    os.close(fd)
            elif op < 0.55:
                sz = rnd.randrange(0, 6 << 20)
                for p in (pm, pl):
                    os.truncate(p, sz)
            elif op < 0.6:
                off, ln = rnd.randrange(0, 6 << 20), rnd.randrange(1, 100000)
                for p in (pm, pl):
                    fd = os.open(p, os.O_RDWR)
                    os.posix_fallocate(fd, off, ln)
                    os.close(fd)
            elif op < 0.65:
                size = os.path.getsize(pl)
                if size:
                    off = rnd.randrange(0, size)
                    ln = min(size - off, rnd.randrange(1, 50000))
                    data = os.urandom(ln)
                    for p in (pm, pl):
                        with open(p, "r+b") as f:
                            m = mmap.mmap(f.fileno(), 0)
                            m[off:off + ln] = data
                            m.flush()
                            m.close()
            elif op < 0.7:
                os.listdir(mnt)
            else:
                a, b = open(pm, "rb").read(), open(pl, "rb").read()
                if a != b:
                    errors.append(f"c{k}: after {n} ops {len(a)} bytes vs {len(b)} expected")
            n += 1

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def main():
    if not os.path.exists("/dev/fuse"):
        print("SKIP fs_smoke: /dev/fuse missing: this machine cannot mount FUSE filesystems; "
              "exit 77 = skipped", flush=True)
        sys.exit(77)
    runner = Runner("fs_smoke")
    with tempdir("strata-fs-smoke-") as work:
        meta = f"sqlite3://{work}/meta.db"
        storage = f"file://{work}/objects?bucket=fsdata"
        mnt = os.path.join(work, "mnt")
        log = os.path.join(work, "mount.log")
        os.mkdir(mnt)
        big = os.urandom(9 * 1024 * 1024 + 12345)   # several blocks, odd tail
        small = {f"f{i}.txt": f"hello {i}\n".encode() * (i + 1) for i in range(20)}
        try:
            runner.case("format", strata, "format", meta, "smoke", "--storage", storage,
                        "--block-size", "1M", "--compress", "lz4", "--trash-days", "0")

            metrics_port = free_port()

            def first_mount():
                mount(meta, mnt, log, "--metrics", f"127.0.0.1:{metrics_port}")
                os.makedirs(os.path.join(mnt, "dir/sub"))
                with open(os.path.join(mnt, "dir/big.bin"), "wb") as f:
                    f.write(big)
                for name, data in small.items():
                    with open(os.path.join(mnt, "dir/sub", name), "wb") as f:
                        f.write(data)
                with open(os.path.join(mnt, "dir/big.bin"), "rb") as f:
                    assert sha(f.read()) == sha(big), "big file differs right after writing"
                # Overwrite in the middle, append, then read back.
                with open(os.path.join(mnt, "dir/big.bin"), "r+b") as f:
                    f.seek(4 * 1024 * 1024 - 10)
                    f.write(b"X" * 100)
                with open(os.path.join(mnt, "dir/big.bin"), "ab") as f:
                    f.write(b"tail")
                want = bytearray(big)
                want[4 * 1024 * 1024 - 10:4 * 1024 * 1024 + 90] = b"X" * 100
                want += b"tail"
                with open(os.path.join(mnt, "dir/big.bin"), "rb") as f:
                    assert f.read() == bytes(want), "big file differs after overwrite/append"
                os.rename(os.path.join(mnt, "dir/sub/f0.txt"), os.path.join(mnt, "dir/renamed.txt"))
                names = sorted(os.listdir(os.path.join(mnt, "dir/sub")))
                assert names == sorted(n for n in small if n != "f0.txt"), names
                assert sorted(os.listdir(os.path.join(mnt, "dir"))) == ["big.bin", "renamed.txt", "sub"]
                os.symlink("renamed.txt", os.path.join(mnt, "dir/link"))
                assert os.readlink(os.path.join(mnt, "dir/link")) == "renamed.txt"
                os.unlink(os.path.join(mnt, "dir/sub/f1.txt"))
                os.mkdir(os.path.join(mnt, "conc"))
                local = os.path.join(work, "local")
                os.mkdir(local)
                concurrent_model_check(os.path.join(mnt, "conc"), local)
                st = os.statvfs(mnt)
                assert st.f_bsize > 0
                check_metrics(metrics_port, len(big))
                umount(mnt)
                assert not is_mounted(mnt)
                return bytes(want)

            holder = {}
            runner.case("mount, write, read, rename, ls, umount",
                        lambda: holder.setdefault("big", first_mount()))

            def remount():
                mount(meta, mnt, log)
                with open(os.path.join(mnt, "dir/big.bin"), "rb") as f:
                    assert f.read() == holder["big"], "big file differs after remount"
                with open(os.path.join(mnt, "dir/renamed.txt"), "rb") as f:
                    assert f.read() == small["f0.txt"]
                for name, data in small.items():
                    p = os.path.join(mnt, "dir/sub", name)
                    if name in ("f0.txt", "f1.txt"):
                        assert not os.path.exists(p), p
                        continue
                    with open(p, "rb") as f:
                        assert f.read() == data, name
                assert os.path.islink(os.path.join(mnt, "dir/link"))
                p = strata("status", meta)
                assert "smoke" in p.stdout and "Sessions:    1" in p.stdout, p.stdout
                umount(mnt)

            runner.case("remount: data still there", remount)

            def fsck():
                p = strata("fsck", meta, check=False)
                assert p.returncode == 0, p.stdout + p.stderr
                assert "no problems found" in p.stdout

            runner.case("fsck clean", fsck)

            def gc():
                p = strata("gc", meta, "--delete", "--min-age", "0")
                assert "Leaked slices" in p.stdout
                p = strata("fsck", meta, check=False)
                assert p.returncode == 0, p.stdout

            runner.case("gc leaves nothing referenced missing", gc)

            def tools_through_a_mount():
                mount(meta, mnt, log)
                p = strata("info", os.path.join(mnt, "dir/big.bin"), "--meta", meta)
                assert f"size:  {len(holder['big'])} " in p.stdout and "chunk 0 pos 0" in p.stdout, p.stdout
                p = strata("warmup", os.path.join(mnt, "dir"))
                m = re.match(r"Warmed (\d+) files, ", p.stdout)
                assert m and int(m.group(1)) >= 20, p.stdout   # big.bin, renamed.txt, 18 in sub/
                p = strata("bench", mnt, "--big-file-size", "4M", "--small-files", "20", "--small-file-size", "4K")
                assert "Big file" in p.stdout and "Small files 20 x" in p.stdout, p.stdout
                assert sorted(os.listdir(mnt)) == ["conc", "dir"], os.listdir(mnt)   # bench cleaned up
                umount(mnt)

            runner.case("info, warmup and bench through a mount", tools_through_a_mount)

            meta2 = f"sqlite3://{work}/meta2.db"

            def dump_and_load():
                d1, d2 = os.path.join(work, "dump1.json"), os.path.join(work, "dump2.json")
                strata("dump", meta, d1)
                with open(d1) as f:
                    assert json.load(f)["format"]["name"] == "smoke"
                strata("load", meta2, d1)
                p = strata("fsck", meta2, check=False)
                assert p.returncode == 0 and "no problems found" in p.stdout, p.stdout + p.stderr
                strata("dump", meta2, d2)
                with open(d1, "rb") as a, open(d2, "rb") as b:
                    assert a.read() == b.read(), "a loaded dump dumps differently"
                mount(meta2, mnt, log, "--read-only")
                with open(os.path.join(mnt, "dir/big.bin"), "rb") as f:
                    assert f.read() == holder["big"], "big file differs in the loaded copy"
                umount(mnt)

            runner.case("dump, load into a new database, fsck, read", dump_and_load)

            def destroy():
                p = strata("destroy", meta, check=False)
                assert p.returncode != 0 and "--yes" in p.stderr, p.stdout + p.stderr
                p = strata("destroy", meta, "--yes")
                assert "destroyed" in p.stdout, p.stdout
                assert strata("status", meta, check=False).returncode != 0, "metadata left after destroy"
                # The loaded copy names the same objects: destroy deleted them.
                p = strata("fsck", meta2, check=False)
                assert p.returncode != 0 and "is missing" in p.stdout, p.stdout + p.stderr

            runner.case("destroy removes the metadata and every object", destroy)
        finally:
            umount(mnt)
            if os.path.exists(log):
                with open(log) as f:
                    tail = f.read()[-3000:]
                if tail.strip():
                    print("mount log (tail):\n" + tail)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
