#!/usr/bin/python3
"""Crash test: kill -9 a real `strata server` in the middle of a PUT storm,
restart it on the same data directory, and check what survived.

Invariants after each restart:
  * every acknowledged (HTTP 200) PUT is present with the same ETag, bytes and
    CRC32 (read with ChecksumMode ENABLED), unless a later PUT of the same key
    was in flight at the kill, in which case that newer version is also allowed;
  * every listed object is readable in full, its bytes match its ETag and size,
    and it is a version some client actually sent (nothing partial, nothing
    rejected, nothing superseded);
  * /metrics on the admin port responds.
Rounds 1-2 run the server as by default (fsync); round 3 with --no-fsync, whose
help text promises that acknowledged writes still survive kill -9.

Usage: /usr/bin/python3 test_crash.py --strata build/strata
"""

import base64
import hashlib
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402

MiB = H.MiB
BUCKET = "crash"
THREADS = 4
ROUNDS = [[], [], ["--no-fsync"]]     # server flags of the process that gets killed
INLINE_MAX = 64 * 1024                # the engine's default inline threshold

SEED = int(os.environ.get("STRATA_CRASH_SEED", str(int(time.time()))))
rng = random.Random(SEED)
POOL = os.urandom(4 * MiB)
POOL2 = POOL + POOL


class Version:
    __slots__ = ("md5", "crc", "size", "etag", "state")

    def __init__(self, md5, crc, size, etag=None):
        self.md5, self.crc, self.size = md5, crc, size   # md5 of the bytes
        self.etag = etag or md5                          # S3 ETag (differs for multipart)
        self.state = "sent"   # sent -> acked | rejected | unknown


class Storm:
    def __init__(self):
        self.lock = threading.Lock()
        self.versions = {}     # key -> [Version], in send order (one writer thread per key)
        self.own_keys = [[] for _ in range(THREADS)]
        self.acks = 0
        self.unexpected = []   # errors while the server was up

    def body(self, key, n):
        if rng.random() < 0.5:
            size = rng.randint(1024, INLINE_MAX)
        else:
            size = rng.randint(INLINE_MAX + 1, 3 * MiB)
        head = f"{key}#{n}#".encode()
        off = rng.randrange(0, len(POOL))
        return head + POOL2[off:off + size - len(head)]

    def writer(self, srv, tid, rnd, stop, killed):
        c = srv.client(retries=1, read_timeout=30)
        n = 0
        while not stop.is_set():
            n += 1
            own = self.own_keys[tid]
            if own and rng.random() < 0.2:
                key = rng.choice(own)
            else:
                key = f"r{rnd}/t{tid}/{n:05d}"
                own.append(key)
            data = self.body(key, n)
            v = Version(hashlib.md5(data).hexdigest(), H.crc32_b64(data), len(data))
            with self.lock:
                self.versions.setdefault(key, []).append(v)
            try:
                r = c.put_object(Bucket=BUCKET, Key=key, Body=data, ChecksumAlgorithm="CRC32")
            except ClientError as e:
                v.state = "rejected"
                if not killed.is_set():
                    self.unexpected.append(f"{key}: {e}")
                continue
            except Exception as e:  # connection refused/reset: the kill
                v.state = "unknown"
                if not killed.is_set():
                    self.unexpected.append(f"{key}: {type(e).__name__}: {e}")
                return
            if r["ETag"] != f'"{v.md5}"' or r.get("ChecksumCRC32") != v.crc:
                self.unexpected.append(f"{key}: PUT answered ETag {r['ETag']} CRC32 {r.get('ChecksumCRC32')}, "
                                       f"sent md5 {v.md5} crc {v.crc}")
            v.state = "acked"
            with self.lock:
                self.acks += 1

    def mp_writer(self, srv, rnd, stop, killed):
        """Multipart uploads (5 MiB + a small last part) with CRC32 part checksums."""
        c = srv.client(retries=1, read_timeout=30)
        n = 0
        while not stop.is_set():
            n += 1
            key = f"r{rnd}/mp/{n:04d}"
            p1 = f"{key}#1#".encode() + POOL2[n % 1000:n % 1000 + 5 * MiB]
            p2 = self.body(key, n)[:rng.randint(1, 200_000)]
            data = p1 + p2
            c1, c2 = H.crc32_b64(p1), H.crc32_b64(p2)
            etag = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
            crc = H.crc32_b64(base64.b64decode(c1) + base64.b64decode(c2)) + "-2"
            v = Version(hashlib.md5(data).hexdigest(), crc, len(data), etag)
            with self.lock:
                self.versions[key] = [v]
            try:
                up = c.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
                e1 = c.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=1, Body=p1,
                                   ChecksumAlgorithm="CRC32")["ETag"]
                e2 = c.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=2, Body=p2,
                                   ChecksumAlgorithm="CRC32")["ETag"]
                r = c.complete_multipart_upload(
                    Bucket=BUCKET, Key=key, UploadId=up,
                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1, "ChecksumCRC32": c1},
                                               {"PartNumber": 2, "ETag": e2, "ChecksumCRC32": c2}]})
            except ClientError as e:
                v.state = "rejected"
                if not killed.is_set():
                    self.unexpected.append(f"{key}: {e}")
                continue
            except Exception as e:  # noqa: BLE001 - the kill
                v.state = "unknown"
                if not killed.is_set():
                    self.unexpected.append(f"{key}: {type(e).__name__}: {e}")
                return
            if r["ETag"].strip('"') != etag:
                self.unexpected.append(f"{key}: Complete answered ETag {r['ETag']}, expected {etag}")
            v.state = "acked"
            with self.lock:
                self.acks += 1

    def acceptable(self, key):
        """Versions the key may hold now, and whether it may be absent."""
        vs = self.versions.get(key, [])
        last_ack = max((i for i, v in enumerate(vs) if v.state == "acked"), default=-1)
        ok = ([vs[last_ack]] if last_ack >= 0 else []) + \
             [v for v in vs[last_ack + 1:] if v.state in ("unknown", "sent")]
        return ok, last_ack < 0


def verify(srv, storm, label):
    c = srv.client(retries=2)
    listed = {}
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for o in page.get("Contents", []):
            listed[o["Key"]] = (o["ETag"].strip('"'), o["Size"])
    problems = []
    acked_keys = [k for k, vs in storm.versions.items() if any(v.state == "acked" for v in vs)]
    for key in acked_keys:
        ok, _ = storm.acceptable(key)
        if key not in listed:
            problems.append(f"{key}: acknowledged but not listed")
            continue
        try:
            g = c.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
            data = g["Body"].read()
        except Exception as e:  # noqa: BLE001
            problems.append(f"{key}: acknowledged but GET failed: {e}")
            continue
        m = hashlib.md5(data).hexdigest()
        match = [v for v in ok if v.md5 == m]
        if not match:
            problems.append(f"{key}: bytes (md5 {m}, {len(data)} B) match no acceptable version "
                            f"{[(v.md5, v.size, v.state) for v in ok]}")
            continue
        v = match[0]
        if g["ETag"].strip('"') != v.etag:
            problems.append(f"{key}: ETag {g['ETag']} != {v.etag}")
        if g.get("ChecksumCRC32") != v.crc:
            problems.append(f"{key}: CRC32 {g.get('ChecksumCRC32')} != {v.crc}")
        if len(data) != v.size:
            problems.append(f"{key}: {len(data)} bytes != {v.size}")
    for key, (etag, size) in listed.items():
        if key in acked_keys:
            continue  # checked above
        ok, may_be_absent = storm.acceptable(key)
        try:
            data = c.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except Exception as e:  # noqa: BLE001
            problems.append(f"{key}: listed but GET failed: {e}")
            continue
        m = hashlib.md5(data).hexdigest()
        same = [v for v in ok if v.md5 == m]
        if len(data) != size or (m != etag and not any(v.etag == etag for v in same)):
            problems.append(f"{key}: listed ETag {etag}/{size} B but read md5 {m}/{len(data)} B (partial?)")
        if key not in storm.versions:
            problems.append(f"{key}: listed but never written")
        elif not any(v.md5 == m for v in ok):
            problems.append(f"{key}: holds a version that was rejected or never sent")
    # Objects that are readable but not listed (e.g. an index out of step).
    for key, vs in storm.versions.items():
        if key in listed or key in acked_keys:
            continue
        try:
            c.head_object(Bucket=BUCKET, Key=key)
            problems.append(f"{key}: readable but not listed")
        except ClientError as e:
            if e.response["ResponseMetadata"]["HTTPStatusCode"] != 404:
                problems.append(f"{key}: HEAD {e}")
    unknown_present = sum(1 for k, vs in storm.versions.items()
                          if k in listed and not any(v.state == "acked" for v in vs))
    n_mp = sum(1 for k in acked_keys if storm.versions[k][-1].etag != storm.versions[k][-1].md5)
    print(f"[{label}] {len(acked_keys)} acknowledged keys ({n_mp} multipart), {len(listed)} listed, "
          f"{unknown_present} unacknowledged-but-complete, {len(problems)} problems", flush=True)
    assert not problems, f"{len(problems)} problems after {label}:\n  " + "\n  ".join(problems[:30])


def main():
    args = H.parse_args()
    runner = H.Runner("crash")
    print(f"STRATA_CRASH_SEED={SEED}", flush=True)
    srv = H.StrataServer(args.strata)
    storm = Storm()
    try:
        srv.start()
        srv.client().create_bucket(Bucket=BUCKET)
        for rnd, flags in enumerate(ROUNDS, 1):
            def one_round(rnd=rnd, flags=flags):
                if flags:
                    srv.stop()
                    srv.extra_args = flags
                    srv.start()
                stop, killed = threading.Event(), threading.Event()
                storm.unexpected.clear()
                acks0 = storm.acks
                threads = [threading.Thread(target=storm.writer, args=(srv, t, rnd, stop, killed), daemon=True)
                           for t in range(THREADS)]
                threads.append(threading.Thread(target=storm.mp_writer, args=(srv, rnd, stop, killed), daemon=True))
                for t in threads:
                    t.start()
                target = rng.randint(60, 120)
                deadline = time.time() + 60
                while storm.acks - acks0 < target and time.time() < deadline:
                    assert srv.alive(), f"server died during the storm:\n{srv.log_tail()}"
                    if not any(t.is_alive() for t in threads):
                        break  # every writer stopped: reported below
                    time.sleep(0.02)
                time.sleep(rng.random() * 0.2)
                in_flight = sum(1 for t in threads if t.is_alive())
                killed.set()
                srv.kill9()
                stop.set()
                for t in threads:
                    t.join(60)
                assert not any(t.is_alive() for t in threads), "writer threads hung after the kill"
                print(f"round {rnd} {' '.join(flags) or '(fsync)'}: killed after {storm.acks - acks0} acks "
                      f"with {in_flight} writers running", flush=True)
                assert storm.acks - acks0 >= target, f"only {storm.acks - acks0} acks in 60 s"
                assert not storm.unexpected, f"errors before the kill: {storm.unexpected[:5]}"
                srv.extra_args = []
                srv.start()
                verify(srv, storm, f"kill {rnd}")
                st, body = srv.admin_get("/metrics")
                assert st == 200, f"/metrics -> {st}"
                text = body.decode()
                orphans = [l for l in text.splitlines() if l.startswith("strata_objstore_orphans_removed_at_open")]
                print(f"after kill {rnd}: {orphans}", flush=True)
                assert "strata_objstore_orphans_removed_at_open" in text, text[:500]
                assert "strata_s3_requests_total" in text, "no S3 request counters after restart"

            if not runner.case(f"kill -9 round {rnd}", one_round):
                if not srv.alive():
                    try:
                        srv.extra_args = []
                        srv.start()
                    except Exception as e:  # noqa: BLE001
                        print(f"cannot restart the server: {e}", flush=True)
                        break

        def writable_after_recovery():
            c = srv.client()
            data = b"after recovery" * 10000
            v = Version(hashlib.md5(data).hexdigest(), H.crc32_b64(data), len(data))
            storm.versions["after"] = [v]
            c.put_object(Bucket=BUCKET, Key="after", Body=data, ChecksumAlgorithm="CRC32")
            v.state = "acked"
            assert c.get_object(Bucket=BUCKET, Key="after")["Body"].read() == b"after recovery" * 10000
            rc = srv.stop()
            assert rc == 0, f"server exit code {rc} on SIGTERM"
            srv.start()
            c = srv.client()
            assert c.get_object(Bucket=BUCKET, Key="after")["Body"].read() == b"after recovery" * 10000
            verify(srv, storm, "clean restart")

        def oracle_can_fail():
            """verify() reports a lost and a changed acknowledged object."""
            c = srv.client()
            acked = sorted(k for k, vs in storm.versions.items()
                           if vs[-1].state == "acked" and vs[-1].etag == vs[-1].md5 and k != "after")
            assert len(acked) >= 2, "too few acknowledged keys to self-check"
            lost, changed = acked[0], acked[1]
            saved = {k: c.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in (lost, changed)}
            c.delete_object(Bucket=BUCKET, Key=lost)
            c.put_object(Bucket=BUCKET, Key=changed, Body=saved[changed][:-1] + b"!")
            try:
                verify(srv, storm, "self-check (2 problems expected)")
            except AssertionError as e:
                msg = str(e)
                assert f"{lost}: acknowledged but not listed" in msg, msg
                assert f"{changed}: bytes" in msg, msg
            else:
                raise AssertionError("verify() missed a deleted and a modified object")
            finally:
                for k, v in saved.items():
                    c.put_object(Bucket=BUCKET, Key=k, Body=v, ChecksumAlgorithm="CRC32")
            verify(srv, storm, "after self-check")

        if srv.alive():
            runner.case("writes and clean restart after recovery", writable_after_recovery)
        if srv.alive():
            runner.case("oracle self-check", oracle_can_fail)
    finally:
        print(f"server log tail:\n{srv.log_tail(15)}", flush=True)
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
