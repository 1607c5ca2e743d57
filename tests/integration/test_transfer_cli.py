#!/usr/bin/python3
"""The transfer subcommands (`strata ls|cp|sync|rm|cat|mb|rb|du`) against a real
`strata server`: large files byte for byte, recursion and wildcards, server-side
copies, sync semantics, batched deletes, exit codes, --json, resuming an
interrupted multipart upload, and transfers through injected 503s and dropped
connections. boto3 is the oracle for what the server holds.

Usage: /usr/bin/python3 test_transfer_cli.py --strata build/strata
"""

import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
BUCKET = "xfer"
BUCKET2 = "xfer-two"


def tree_digest(root):
    """{relative path: sha256} of every file under root."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = H.sha256_file(p)
    return out


def bucket_digest(client, bucket, prefix=""):
    """{key relative to prefix: sha256} of every object under prefix (boto3)."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            out[o["Key"][len(prefix):]] = hashlib.sha256(body).hexdigest()
    return out


def keys(client, bucket, prefix=""):
    out = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", [])]
    return out


def json_lines(text):
    lines = [json.loads(l) for l in text.splitlines() if l.strip()]
    assert lines and lines[-1].get("summary"), f"no JSON summary line in {text[-500:]!r}"
    return lines[:-1], lines[-1]


class TransferCliTests:
    def __init__(self, srv, strata, work):
        self.srv = srv
        self.strata = strata
        self.work = work
        self.s3 = srv.client()
        self.env = H.clean_env({
            "HOME": work,
            "XDG_CACHE_HOME": os.path.join(work, "cache"),
            "AWS_ACCESS_KEY_ID": srv.access_key,
            "AWS_SECRET_ACCESS_KEY": srv.secret_key,
            "AWS_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.path.join(work, "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": os.path.join(work, "no-aws-credentials"),
        })
        self.src = os.path.join(work, "src")
        os.makedirs(self.src)

    # -- helpers
    def run(self, *args, check=True, expect=None, env=None, input=None, timeout=240, endpoint=True):
        cmd = [self.strata, *args]
        if endpoint:
            cmd[2:2] = ["--endpoint-url", self.srv.endpoint]
        print("$", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env or self.env, capture_output=True, timeout=timeout, input=input)
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        shown = (out + err).splitlines()
        if len(shown) > 40:
            shown = shown[:15] + [f"... ({len(shown) - 30} lines)"] + shown[-15:]
        if shown:
            print("\n".join("  | " + l for l in shown), flush=True)
        p.out, p.err = out, err
        if expect is not None:
            assert p.returncode == expect, f"expected exit {expect}, got {p.returncode}: {err[-1500:]}"
        elif check and p.returncode != 0:
            raise AssertionError(f"strata {args[0]} exited {p.returncode}: {err[-2000:]}")
        return p

    def file(self, rel, size, seed=None):
        p = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if size >= MiB:
            H.write_random_file(p, size, seed)
        else:
            with open(p, "wb") as f:
                f.write(os.urandom(size))
        return p

    # -- cases
    def help(self):
        p = self.run("--help", endpoint=False)
        for sub in ("ls", "cp", "sync", "rm", "cat", "mb", "rb", "du"):
            assert f"  {sub}" in p.out, f"{sub} missing from strata --help:\n{p.out}"
        for sub in ("ls", "cp", "sync", "rm", "cat", "mb", "rb", "du"):
            p = self.run(sub, "--help", endpoint=False)
            assert "Examples:" in p.out and "Exit codes" in p.out, p.out
        p = self.run("cp", "--help", endpoint=False)
        for flag in ("--recursive", "--concurrency", "--part-size", "--multipart-threshold", "--endpoint-url",
                     "--profile", "--region", "--json", "--exclude"):
            assert flag in p.out, f"{flag} missing from cp --help"

    def usage_errors(self):
        self.run("cp", "only-one-arg", expect=2)
        self.run("cp", "a", "b", expect=2)  # local to local
        self.run("cp", "--part-size", "1MiB", "x", f"s3://{BUCKET}/x", expect=2)
        self.run("frobnicate", expect=2, endpoint=False)

    def mb_ls(self):
        self.run("mb", f"s3://{BUCKET}", f"s3://{BUCKET2}")
        p = self.run("ls")
        assert BUCKET in p.out and BUCKET2 in p.out, p.out
        # The server is in us-east-1, where S3 answers 200 to re-creating a bucket
        # you own (AWS's legacy behaviour; `aws s3 mb` succeeds there too).
        p = self.run("mb", f"s3://{BUCKET}", check=False)
        assert p.returncode == 0, f"mb of an existing own bucket in us-east-1: exit {p.returncode}"
        # Bucket names via the env endpoint instead of the flag.
        env = dict(self.env, AWS_ENDPOINT_URL=self.srv.endpoint)
        p = self.run("ls", "--json", env=env, endpoint=False)
        names = {json.loads(l)["bucket"] for l in p.out.splitlines()}
        assert {BUCKET, BUCKET2} <= names, names

    def small_up_down(self):
        f = self.file("one.txt", 12345)
        self.run("cp", f, f"s3://{BUCKET}/single/one.txt")
        self.run("cp", f, f"s3://{BUCKET}/dir/")  # trailing slash: keeps the name
        got = self.s3.get_object(Bucket=BUCKET, Key="dir/one.txt")["Body"].read()
        assert got == open(f, "rb").read()
        out = os.path.join(self.work, "dl")
        os.makedirs(out)
        self.run("cp", f"s3://{BUCKET}/single/one.txt", out)  # into a directory
        assert open(os.path.join(out, "one.txt"), "rb").read() == got
        self.run("cp", f"s3://{BUCKET}/single/one.txt", os.path.join(out, "renamed.txt"))
        assert open(os.path.join(out, "renamed.txt"), "rb").read() == got
        head = self.s3.head_object(Bucket=BUCKET, Key="single/one.txt")
        assert "-" not in head["ETag"], head["ETag"]

    def large_up_down(self):
        big = self.file("big/large.bin", 100 * MiB + 12345, seed=1)
        p = self.run("cp", "--json", big, f"s3://{BUCKET}/big/large.bin")
        objs, summary = json_lines(p.out)
        assert summary["ok"] == 1 and summary["failed"] == 0 and summary["bytes"] == 100 * MiB + 12345, summary
        assert objs[0]["op"] == "upload" and objs[0]["ok"], objs
        head = self.s3.head_object(Bucket=BUCKET, Key="big/large.bin")
        assert head["ContentLength"] == 100 * MiB + 12345
        assert head["ETag"].strip('"').endswith("-13"), f"expected 13 parts of 8 MiB: {head['ETag']}"
        body = self.s3.get_object(Bucket=BUCKET, Key="big/large.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == H.sha256_file(big)
        out = os.path.join(self.work, "large.back")
        self.run("cp", "--part-size", "5MiB", "--concurrency", "8", "--fsync", f"s3://{BUCKET}/big/large.bin", out)
        assert H.sha256_file(out) == H.sha256_file(big), "downloaded bytes differ"
        # Downloads carry the object's LastModified as mtime.
        lm = head["LastModified"].timestamp()
        assert abs(os.stat(out).st_mtime - lm) < 2, (os.stat(out).st_mtime, lm)
        assert not glob.glob(os.path.join(self.work, "*.strata-tmp-*")), "temporary file left behind"

    def stdin_stdout_cat(self):
        data = os.urandom(3 * MiB + 7)
        self.run("cp", "-", f"s3://{BUCKET}/stream/piped.bin", input=data)
        assert self.s3.get_object(Bucket=BUCKET, Key="stream/piped.bin")["Body"].read() == data
        p = subprocess.run([self.strata, "cat", "--endpoint-url", self.srv.endpoint, f"s3://{BUCKET}/stream/piped.bin"],
                           env=self.env, capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stdout == data, (p.returncode, len(p.stdout), p.stderr[-500:])
        p = subprocess.run([self.strata, "cp", "--endpoint-url", self.srv.endpoint, f"s3://{BUCKET}/stream/piped.bin", "-"],
                           env=self.env, capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stdout == data

    def recursive(self):
        tree = os.path.join(self.src, "tree")
        sizes = {}
        for i in range(40):
            rel = f"d{i % 3}/e{i % 2}/f{i}.dat" if i % 4 else f"top{i}.txt"
            sizes[rel] = 1000 + 37 * i
        sizes["d0/mid.bin"] = 20 * MiB + 3      # multipart inside a tree
        sizes["space dir/\u00fcnicode +&.txt"] = 55
        for rel, size in sizes.items():
            self.file(os.path.join("tree", rel), size)
        self.run("cp", "--recursive", tree, f"s3://{BUCKET}/tree")
        assert bucket_digest(self.s3, BUCKET, "tree/") == tree_digest(tree)
        back = os.path.join(self.work, "tree.back")
        self.run("cp", "--recursive", f"s3://{BUCKET}/tree/", back)
        assert tree_digest(back) == tree_digest(tree)
        # --exclude/--include, in command-line order.
        self.run("cp", "--recursive", "--exclude", "*", "--include", "d1/*", tree, f"s3://{BUCKET}/filtered")
        got = set(keys(self.s3, BUCKET, "filtered/"))
        want = {"filtered/" + r for r in sizes if r.startswith("d1/")}
        assert got == want, got ^ want
        # A directory without --recursive is an error that says what to do.
        p = self.run("cp", tree, f"s3://{BUCKET}/nope", check=False)
        assert p.returncode != 0 and "--recursive" in p.err, p.err

    def wildcards(self):
        shards = os.path.join(self.src, "shards")
        for i in range(12):
            self.file(os.path.join("shards", f"shard-{i:03}.tar"), 4096 + i)
            self.file(os.path.join("shards", f"shard-{i:03}.idx"), 100 + i)
        # A quoted local glob (strata expands it).
        self.run("cp", os.path.join(shards, "*.tar"), f"s3://{BUCKET}/shards/")
        assert sorted(keys(self.s3, BUCKET, "shards/")) == [f"shards/shard-{i:03}.tar" for i in range(12)]
        self.run("cp", os.path.join(shards, "shard-00[0-2].idx"), f"s3://{BUCKET}/shards/")
        assert len(keys(self.s3, BUCKET, "shards/")) == 15
        # An S3 wildcard.
        out = os.path.join(self.work, "shards.back")
        self.run("cp", f"s3://{BUCKET}/shards/*.tar", out + "/")
        assert sorted(os.listdir(out)) == [f"shard-{i:03}.tar" for i in range(12)]
        for n in os.listdir(out):
            assert H.sha256_file(os.path.join(out, n)) == H.sha256_file(os.path.join(shards, n))
        p = self.run("cp", f"s3://{BUCKET}/shards/*.nothing", out, check=False)
        assert p.returncode == 3, p.returncode
        # Several sources at once, as a shell expands them.
        srcs = sorted(glob.glob(os.path.join(shards, "shard-01*.idx")))
        self.run("cp", *srcs, f"s3://{BUCKET}/multi/")
        assert sorted(keys(self.s3, BUCKET, "multi/")) == [f"multi/{os.path.basename(s)}" for s in srcs]

    def server_side_copy(self):
        self.run("cp", f"s3://{BUCKET}/single/one.txt", f"s3://{BUCKET2}/copied/one.txt")
        a = self.s3.get_object(Bucket=BUCKET, Key="single/one.txt")["Body"].read()
        assert self.s3.get_object(Bucket=BUCKET2, Key="copied/one.txt")["Body"].read() == a
        # Above the threshold: UploadPartCopy in parallel parts.
        self.run("cp", "--multipart-threshold", "16MiB", "--part-size", "8MiB",
                 f"s3://{BUCKET}/big/large.bin", f"s3://{BUCKET2}/copied/large.bin")
        head = self.s3.head_object(Bucket=BUCKET2, Key="copied/large.bin")
        assert head["ETag"].strip('"').endswith("-13"), head["ETag"]
        body = self.s3.get_object(Bucket=BUCKET2, Key="copied/large.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == H.sha256_file(os.path.join(self.src, "big/large.bin"))
        self.run("cp", "--recursive", f"s3://{BUCKET}/tree/", f"s3://{BUCKET2}/tree-copy/")
        assert bucket_digest(self.s3, BUCKET2, "tree-copy/") == bucket_digest(self.s3, BUCKET, "tree/")

    def sync(self):
        d = os.path.join(self.src, "syncdir")
        for i in range(30):
            self.file(os.path.join("syncdir", f"s{i % 3}", f"f{i}.bin"), 2000 + i)
        self.file(os.path.join("syncdir", "big.bin"), 18 * MiB, seed=5)
        dst = f"s3://{BUCKET}/sync"
        p = self.run("sync", "--json", d, dst)
        objs, summary = json_lines(p.out)
        assert summary["ok"] == 31 and summary["failed"] == 0, summary
        assert bucket_digest(self.s3, BUCKET, "sync/") == tree_digest(d)
        # Nothing changed: nothing moves.
        p = self.run("sync", "--json", d, dst)
        objs, summary = json_lines(p.out)
        assert summary["ok"] == 0 and not objs, (objs, summary)
        # A changed size and a newer mtime move; nothing else.
        time.sleep(1.1)
        with open(os.path.join(d, "s0", "f0.bin"), "ab") as f:
            f.write(b"more")
        with open(os.path.join(d, "s1", "f1.bin"), "r+b") as f:
            f.write(b"X")  # same size, newer mtime
        os.remove(os.path.join(d, "s2", "f2.bin"))
        p = self.run("sync", "--json", d, dst)
        objs, _ = json_lines(p.out)
        moved = sorted(o["source"] for o in objs)
        assert moved == sorted([os.path.join(d, "s0", "f0.bin"), os.path.join(d, "s1", "f1.bin")]), moved
        assert "sync/s2/f2.bin" in keys(self.s3, BUCKET, "sync/"), "deleted without --delete"
        p = self.run("sync", "--delete", "--json", d, dst)
        objs, _ = json_lines(p.out)
        assert [(o["op"], o["source"]) for o in objs] == [("delete", f"s3://{BUCKET}/sync/s2/f2.bin")], objs
        assert bucket_digest(self.s3, BUCKET, "sync/") == tree_digest(d)

        # --checksum: same size and an older mtime, different bytes.
        f3 = os.path.join(d, "s0", "f3.bin")
        data = bytearray(open(f3, "rb").read())
        data[0] ^= 0xFF
        st = os.stat(f3)
        with open(f3, "wb") as f:
            f.write(data)
        os.utime(f3, (st.st_atime, st.st_mtime - 3600))
        p = self.run("sync", "--json", d, dst)
        objs, _ = json_lines(p.out)
        assert not objs, f"size+mtime sync should not see the change: {objs}"
        p = self.run("sync", "--checksum", "--json", d, dst)
        objs, _ = json_lines(p.out)
        assert [o["source"] for o in objs] == [f3], objs
        p = self.run("sync", "--checksum", "--json", d, dst)  # multipart big.bin compares equal via its CRC
        objs, _ = json_lines(p.out)
        assert not objs, objs

        # S3 -> local, twice, then --delete.
        local = os.path.join(self.work, "sync.back")
        self.run("sync", dst, local)
        assert tree_digest(local) == tree_digest(d)
        p = self.run("sync", "--json", dst, local)
        objs, summary = json_lines(p.out)
        assert not objs, f"second download sync moved {objs}"
        with open(os.path.join(local, "stray.txt"), "w") as f:
            f.write("not in s3")
        self.s3.put_object(Bucket=BUCKET, Key="sync/new.txt", Body=b"fresh")
        p = self.run("sync", "--delete", "--json", dst, local)
        objs, _ = json_lines(p.out)
        assert sorted(o["op"] for o in objs) == ["delete", "download"], objs
        assert not os.path.exists(os.path.join(local, "stray.txt"))
        assert open(os.path.join(local, "new.txt"), "rb").read() == b"fresh"
        # S3 -> S3
        self.run("sync", dst, f"s3://{BUCKET2}/sync-copy")
        assert bucket_digest(self.s3, BUCKET2, "sync-copy/") == bucket_digest(self.s3, BUCKET, "sync/")
        p = self.run("sync", "--json", dst, f"s3://{BUCKET2}/sync-copy")
        objs, _ = json_lines(p.out)
        assert not objs, objs
        # --dryrun changes nothing.
        os.remove(os.path.join(d, "s0", "f6.bin"))
        p = self.run("sync", "--dryrun", "--delete", d, dst)
        assert "(dryrun) delete" in p.out, p.out
        assert "sync/s0/f6.bin" in keys(self.s3, BUCKET, "sync/")

    def ls_du(self):
        p = self.run("ls", f"s3://{BUCKET}/")
        assert "PRE tree/" in p.out and "PRE shards/" in p.out, p.out
        p = self.run("ls", f"s3://{BUCKET}/shards/")
        assert "shard-000.tar" in p.out and "shards/shard-000.tar" not in p.out, p.out
        p = self.run("ls", "--recursive", "--summarize", f"s3://{BUCKET}/shards/")
        assert "shards/shard-000.tar" in p.out and "Total Objects: 15" in p.out, p.out
        p = self.run("ls", f"s3://{BUCKET}/no-such-prefix/", check=False)
        assert p.returncode == 3, p.returncode
        p = self.run("du", "--json", f"s3://{BUCKET}/shards/")
        j = json.loads(p.out)
        want = sum(4096 + i for i in range(12)) + sum(100 + i for i in range(3))
        assert j["objects"] == 15 and j["bytes"] == want, j
        p = self.run("du", "-H", f"s3://{BUCKET}/big/")
        assert "100.0 MiB" in p.out, p.out

    def rm_batches(self):
        many = os.path.join(self.src, "many")
        os.makedirs(many)
        for i in range(1100):
            with open(os.path.join(many, f"k{i:05}"), "wb") as f:
                f.write(b"x" * (i % 7))
        self.run("cp", "--recursive", "--quiet", many, f"s3://{BUCKET}/many")
        assert len(keys(self.s3, BUCKET, "many/")) == 1100
        self.run("rm", f"s3://{BUCKET}/many/k00000")
        assert len(keys(self.s3, BUCKET, "many/")) == 1099
        self.run("rm", f"s3://{BUCKET}/many/k0001*")  # k00010..k00019 and k0001
        assert len(keys(self.s3, BUCKET, "many/")) == 1089
        p = self.run("rm", "--recursive", "--json", f"s3://{BUCKET}/many/")
        objs, summary = json_lines(p.out)
        assert summary["ok"] == 1089 and summary["failed"] == 0, summary
        assert keys(self.s3, BUCKET, "many/") == []

    def exit_codes(self):
        p = self.run("cp", f"s3://{BUCKET}/no/such/key", os.path.join(self.work, "x"), check=False)
        assert p.returncode == 3, p.returncode
        assert "no/such/key" in p.err, p.err
        p = self.run("cp", os.path.join(self.work, "no-such-file"), f"s3://{BUCKET}/x", check=False)
        assert p.returncode == 3, p.returncode
        p = self.run("ls", "s3://no-such-bucket-here/", check=False)
        assert p.returncode == 3, p.returncode
        bad = dict(self.env, AWS_SECRET_ACCESS_KEY="wrong-secret")
        p = self.run("ls", f"s3://{BUCKET}", env=bad, check=False)
        assert p.returncode == 4, p.returncode
        nocreds = {k: v for k, v in self.env.items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")}
        p = self.run("cp", f"s3://{BUCKET}/single/one.txt", os.path.join(self.work, "x"), env=nocreds, check=False)
        assert p.returncode == 4 and "credentials" in p.err, (p.returncode, p.err)
        p = subprocess.run([self.strata, "ls", "--endpoint-url", f"http://127.0.0.1:{H.free_port()}",
                            "--s3-option", "max_retries=0", "--s3-option", "connect_timeout_ms=2000",
                            f"s3://{BUCKET}"], env=self.env, capture_output=True, timeout=60)
        assert p.returncode == 6, (p.returncode, p.stderr)
        # rb of a non-empty bucket: 5, and the hint; --force empties it.
        p = self.run("rb", f"s3://{BUCKET2}", check=False)
        assert p.returncode == 5 and "--force" in p.err, (p.returncode, p.err)

    def faults(self):
        """5% 503s and 5% dropped connections: every byte still arrives."""
        d = os.path.join(self.src, "faulty")
        os.makedirs(d)
        for i in range(40):
            self.file(os.path.join("faulty", f"small{i}.bin"), 50_000 + i)
        self.file(os.path.join("faulty", "big.bin"), 100 * MiB, seed=9)
        flt = ["--s3-option", "fault_error_rate=0.05", "--s3-option", "fault_drop_rate=0.05",
               "--s3-option", "fault_seed=7"]
        self.run("cp", "--recursive", *flt, d, f"s3://{BUCKET}/faulty")
        assert bucket_digest(self.s3, BUCKET, "faulty/") == tree_digest(d)
        back = os.path.join(self.work, "faulty.back")
        self.run("cp", "--recursive", *flt, f"s3://{BUCKET}/faulty", back)
        assert tree_digest(back) == tree_digest(d)
        self.run("sync", "--delete", *flt, d, f"s3://{BUCKET}/faulty")

    def resume(self):
        """A multipart upload that failed part-way resumes: only missing parts are sent."""
        big = self.file("resume/big.bin", 60 * MiB, seed=11)
        state_dir = os.path.join(self.work, "cache", "strata", "uploads")
        key = f"s3://{BUCKET}/resume/big.bin"
        left = None
        for seed in range(1, 30):
            # One request at a time, so the injected faults hit the same requests on every run.
            p = self.run("cp", "--concurrency", "1", "--part-size", "5MiB",
                         "--s3-option", "fault_error_rate=0.6", "--s3-option", "max_retries=0",
                         "--s3-option", f"fault_seed={seed}", big, key, check=False)
            if p.returncode != 0 and os.path.isdir(state_dir) and os.listdir(state_dir):
                left = p
                break
        assert left is not None, "no seed left an interrupted upload behind"
        assert left.returncode == 6 and "resume" in left.err, (left.returncode, left.err[-800:])
        uploads = self.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
        assert len(uploads) == 1, uploads
        stored = len(self.s3.list_parts(Bucket=BUCKET, Key="resume/big.bin",
                                        UploadId=uploads[0]["UploadId"]).get("Parts", []))
        assert 1 <= stored < 12, stored
        p = self.run("cp", "--part-size", "5MiB", big, key)
        assert "resuming" in p.err and f"{stored} of 12 parts" in p.err, p.err
        assert not os.listdir(state_dir), os.listdir(state_dir)
        assert self.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
        body = self.s3.get_object(Bucket=BUCKET, Key="resume/big.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == H.sha256_file(big)

    def atomic_download(self):
        """A download that fails after some ranges landed leaves the existing file as it was."""
        target = os.path.join(self.work, "keep.bin")
        with open(target, "wb") as f:
            f.write(b"precious")
        failed = None
        for seed in range(1, 40):
            # One request at a time: the HEAD passes, a later ranged GET fails for good.
            p = self.run("cp", "--concurrency", "1", "--part-size", "5MiB",
                         "--s3-option", "fault_error_rate=0.35", "--s3-option", "max_retries=0",
                         "--s3-option", f"fault_seed={seed}", f"s3://{BUCKET}/big/large.bin", target, check=False)
            if p.returncode != 0 and "HEAD" not in p.err:
                failed = p
                break
            if p.returncode == 0:
                with open(target, "wb") as f:
                    f.write(b"precious")
        assert failed is not None, "no seed made a ranged GET fail"
        assert "GET" in failed.err, failed.err
        assert open(target, "rb").read() == b"precious"
        assert not glob.glob(target + ".strata-tmp-*"), glob.glob(target + ".strata-tmp-*")
        # Ranges that landed stay for a rerun, under another name; a download
        # that got no whole range keeps nothing.
        kept = "run the same command again to resume" in failed.err
        assert os.path.exists(target + ".strata-partial") == kept, (failed.err, glob.glob(target + "*"))

    def interrupt(self):
        """Ctrl-C mid-download (exit 130) leaves no file under the destination's
        name and keeps the bytes so far in DST.strata-partial, from which the
        next run resumes; Ctrl-C mid-upload keeps the resume state, and the next
        run resumes."""
        target = os.path.join(self.work, "interrupted.bin")
        caught = False
        for _ in range(20):
            p = subprocess.Popen([self.strata, "cp", "--endpoint-url", self.srv.endpoint, "--concurrency", "1",
                                  "--part-size", "5MiB", f"s3://{BUCKET}/big/large.bin", target],
                                 env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            while p.poll() is None and not os.path.exists(target + ".strata-partial.state"):
                time.sleep(0.001)
            if p.poll() is None:
                time.sleep(0.02)
                p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
            if p.returncode == 130:
                caught = True
                assert b"interrupted" in err, err
                break
            assert p.returncode == 0, (p.returncode, err)
            os.remove(target)
        assert caught, "the download always finished before SIGINT"
        time.sleep(0.1)
        assert not glob.glob(target + ".strata-tmp-*"), glob.glob(target + "*")
        assert not os.path.exists(target)
        assert os.path.exists(target + ".strata-partial"), glob.glob(target + "*")
        self.run("cp", "--part-size", "5MiB", f"s3://{BUCKET}/big/large.bin", target)
        want = hashlib.sha256(self.s3.get_object(Bucket=BUCKET, Key="big/large.bin")["Body"].read()).hexdigest()
        assert H.sha256_file(target) == want
        assert not glob.glob(target + ".strata-*"), glob.glob(target + "*")

        big = self.file("interrupt/up.bin", 200 * MiB, seed=21)
        state_dir = os.path.join(self.work, "cache", "strata", "uploads")
        key = f"s3://{BUCKET}/interrupt/up.bin"
        caught = False
        for _ in range(20):
            p = subprocess.Popen([self.strata, "cp", "--endpoint-url", self.srv.endpoint, "--concurrency", "1",
                                  "--part-size", "5MiB", big, key],
                                 env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            while p.poll() is None and not (os.path.isdir(state_dir) and os.listdir(state_dir)):
                time.sleep(0.001)
            if p.poll() is None:
                time.sleep(0.05)
                p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
            if p.returncode == 130:
                caught = True
                break
            assert p.returncode == 0, (p.returncode, err)
        assert caught, "the upload always finished before SIGINT"
        p = self.run("cp", "--part-size", "5MiB", big, key)
        assert "resuming" in p.err, p.err
        body = self.s3.get_object(Bucket=BUCKET, Key="interrupt/up.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == H.sha256_file(big)
        assert not os.listdir(state_dir)

    def rb(self):
        self.run("rb", "--force", f"s3://{BUCKET2}")
        p = self.run("ls")
        assert BUCKET2 not in p.out.split(), p.out


def main():
    args = H.parse_args()
    runner = H.Runner("transfer_cli")
    srv = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    try:
        srv.start()
        with H.tempdir() as work:
            t = TransferCliTests(srv, os.path.abspath(args.strata), work)
            order = ["help", "usage_errors", "mb_ls", "small_up_down", "large_up_down", "stdin_stdout_cat",
                     "recursive", "wildcards", "server_side_copy", "sync", "ls_du", "rm_batches", "exit_codes",
                     "faults", "resume", "atomic_download", "interrupt", "rb"]
            for name in order:
                if not runner.case(name, getattr(t, name)) and name == "mb_ls":
                    break
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
