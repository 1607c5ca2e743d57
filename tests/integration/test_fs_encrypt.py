#!/usr/bin/python3
"""Encryption at rest: `strata fs format --encrypt-key-file` seals every block
with AES-256-GCM before it leaves the mount.

Our S3 server, SQLite metadata, a raw 32-byte key file:
  1. format with the key; format again with --encrypt-key-file on the
     existing volume (no --force) is refused (the key would be dropped);
  2. mount with the key, write a file of a known text pattern (several
     blocks) and a small one, read them back, unmount;
  3. every block object in the bucket (fetched over S3) and every file of the
     mount's disk cache lacks the pattern, and each uncompressed block object is
     its block length + 28 bytes (nonce and tag); the metadata file does not
     hold the key;
  4. mount without --encrypt-key-file, and with a wrong key, are refused
     with a clear message and mount nothing;
  5. remount with the key: the bytes are back;
  6. a --writeback mount with uploads held, kill -9, remount with the key:
     the staged block is uploaded sealed like the others, the file reads back;
  7. one byte of a block object flipped in the bucket: a read of that block
     through a fresh mount (empty cache) fails with EIO and the mount logs
     "does not decrypt"; other blocks still read; the byte restored, fsck
     (no key needed) is clean.

Usage: /usr/bin/python3 test_fs_encrypt.py --strata build/strata
Exits 77 (ctest: skipped) only where /dev/fuse is missing.
"""

import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
import fs_mount as M  # noqa: E402

PATTERN = b"STRATA-ENCRYPTION-AT-REST-PATTERN-"
BIG = (PATTERN * (3 * 1024 * 1024 // len(PATTERN) + 1))[: 3 * 1024 * 1024 + 12345]
SMALL = PATTERN * 3


class Enc:
    def __init__(self, fs, work):
        self.fs, self.work = fs, work
        self.mp = os.path.join(work, "mnt")
        self.cache = os.path.join(work, "cache")
        self.key = os.path.join(work, "key.bin")
        self.wrong = os.path.join(work, "wrong.bin")
        with open(self.key, "wb") as f:
            f.write(os.urandom(32))
        with open(self.wrong, "wb") as f:
            f.write(os.urandom(32))

    def format(self):
        p = self.fs.format("--block-size", "1M", "--encrypt-key-file", self.key)
        assert "encrypted" in p.stdout, p.stdout
        p = self.fs.cli("format", self.fs.meta_url, self.fs.name, "--storage", self.fs.storage_url,
                        "--encrypt-key-file", self.key, check=False)
        assert p.returncode != 0, "re-format of an existing volume with a key must be refused"

    def mount(self, *extra):
        self.fs.mount(self.mp, background=False, cache_dir=self.cache, extra=extra)

    def write(self):
        self.mount("--encrypt-key-file", self.key)
        with open(os.path.join(self.mp, "big"), "wb") as f:
            f.write(BIG)
        with open(os.path.join(self.mp, "small"), "wb") as f:
            f.write(SMALL)
        with open(os.path.join(self.mp, "big"), "rb") as f:
            assert f.read() == BIG
        self.fs.umount(self.mp)

    def storage_has_no_plaintext(self, want_blocks=5):
        c = self.fs.server.client()
        blocks = 0
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=self.fs.bucket):
            for o in page.get("Contents", []):
                if "/chunks/" not in o["Key"]:
                    continue
                body = c.get_object(Bucket=self.fs.bucket, Key=o["Key"])["Body"].read()
                assert PATTERN[:16] not in body, f"plaintext in block object {o['Key']}"
                length = int(o["Key"].rsplit("_", 1)[1])
                assert len(body) == length + 28, f"{o['Key']}: {len(body)} bytes, want {length} + 28"
                blocks += 1
        assert blocks == want_blocks, f"expected {want_blocks} block objects, found {blocks}"
        scanned = 0
        for root, _, files in os.walk(self.cache):
            for n in files:
                with open(os.path.join(root, n), "rb") as f:
                    data = f.read()
                scanned += len(data)
                assert PATTERN[:16] not in data, f"plaintext in the disk cache: {os.path.join(root, n)}"
        print(f"  scanned {blocks} block objects and {scanned} bytes of disk cache", flush=True)
        with open(self.key, "rb") as f:
            key = f.read()
        with open(os.path.join(self.work, "meta.db"), "rb") as f:
            meta = f.read()
        assert key not in meta and key.hex().encode() not in meta, "the key is in the metadata"

    def refused(self, *extra, want):
        os.makedirs(self.mp, exist_ok=True)
        p = self.fs.cli("mount", self.fs.meta_url, self.mp, "--cache-dir", self.cache, *extra,
                        check=False, timeout=60)
        assert p.returncode != 0, "mount must be refused"
        assert want in (p.stdout + p.stderr), f"no '{want}' in: {p.stdout + p.stderr}"
        assert not M.is_fuse_mounted(self.mp)

    def no_key(self):
        self.refused(want="--encrypt-key-file")

    def wrong_key(self):
        self.refused("--encrypt-key-file", self.wrong, want="wrong encryption key")

    def remount(self):
        self.mount("--encrypt-key-file", self.key)
        with open(os.path.join(self.mp, "big"), "rb") as f:
            assert f.read() == BIG, "big file differs after remount"
        with open(os.path.join(self.mp, "small"), "rb") as f:
            assert f.read() == SMALL
        self.fs.umount(self.mp)

    def writeback_crash(self):
        self.mount("--encrypt-key-file", self.key, "--writeback", "--upload-delay", "3600")
        with open(os.path.join(self.mp, "staged"), "wb") as f:
            f.write(SMALL * 10)
        assert self.fs.kill9(self.mp), "no mount process found to kill"
        assert M.force_unmount(self.mp), "could not clean the dead mount"
        self.mount("--encrypt-key-file", self.key)   # uploads what the crashed mount staged
        with open(os.path.join(self.mp, "staged"), "rb") as f:
            assert f.read() == SMALL * 10
        self.fs.umount(self.mp)
        self.storage_has_no_plaintext(want_blocks=6)

    def tampered_block_is_eio(self):
        c = self.fs.server.client()
        keys = sorted(o["Key"] for page in c.get_paginator("list_objects_v2").paginate(Bucket=self.fs.bucket)
                      for o in page.get("Contents", []) if "/chunks/" in o["Key"] and "_0_1048576" in o["Key"])
        assert keys, "no first block of the big file"
        key = keys[0]
        body = c.get_object(Bucket=self.fs.bucket, Key=key)["Body"].read()
        bad = bytearray(body)
        bad[len(bad) // 2] ^= 0x01
        c.put_object(Bucket=self.fs.bucket, Key=key, Body=bytes(bad))
        try:
            fresh = os.path.join(self.work, "cache-fresh")
            self.fs.mount(self.mp, background=False, cache_dir=fresh, extra=("--encrypt-key-file", self.key))
            try:
                with open(os.path.join(self.mp, "big"), "rb") as f:
                    f.seek(2 * 1024 * 1024)
                    assert f.read(1000) == BIG[2 * 1024 * 1024: 2 * 1024 * 1024 + 1000]
                    try:
                        f.seek(0)
                        f.read(1000)
                        raise AssertionError("a read of a tampered block returned bytes")
                    except OSError as e:
                        assert e.errno == errno.EIO, f"want EIO, got {e}"
            finally:
                self.fs.umount(self.mp)
            with open(self.fs.logs[self.mp], "rb") as f:
                assert b"does not decrypt" in f.read(), "no log line for the failed decrypt"
        finally:
            c.put_object(Bucket=self.fs.bucket, Key=key, Body=body)


def main():
    args = H.parse_args()
    M.skip_unless_fs(args.strata, "fs_encrypt")
    runner = H.Runner("fs_encrypt")
    work = M.make_work_dir("strata-it-fsenc-")
    srv = H.StrataServer(args.strata)
    fs = None
    try:
        fs = M.new_volume(args.strata, srv, work)
        t = Enc(fs, work)
        if not runner.case("format with a key", t.format):
            return runner.finish()
        if not runner.case("mount, write, unmount", t.write):
            return runner.finish()
        runner.case("no plaintext in the storage, the cache or the metadata", t.storage_has_no_plaintext)
        runner.case("mount without the key is refused", t.no_key)
        runner.case("mount with a wrong key is refused", t.wrong_key)
        runner.case("remount with the key reads the bytes back", t.remount)
        runner.case("writeback crash: the stage is uploaded sealed", t.writeback_crash)
        runner.case("a tampered block reads as EIO", t.tampered_block_is_eio)
        runner.case("fsck clean", fs.fsck)
    finally:
        M.teardown(runner, fs, srv, work)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
