#!/usr/bin/python3
"""The s5cmd/rclone/awscli flags of `strata cp/mv/sync/ls/du/rb` against a real
`strata server`: --metadata-directive (awscli), --flatten, ls --etag
--all-versions --show-fullpath, du --group, rb --force (s5cmd),
--exclude-from/--include-from, --max-age/--min-age (rclone), and server-side
encryption --sse AES256 / aws:kms / --sse-c-key round trips. boto3 is the
oracle for what the server holds.

Usage: /usr/bin/python3 test_transfer_flags.py --strata build/strata
"""

import base64
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
from test_transfer_cli import TransferCliTests, keys  # noqa: E402

MiB = H.MiB
BUCKET = "flags"
VBUCKET = "flags-versioned"
SSE_KEY = bytes(range(32))
SSE_KEY_B64 = base64.b64encode(SSE_KEY).decode()


class TransferFlagTests(TransferCliTests):
    def put(self, key, body, bucket=BUCKET, **kw):
        self.s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)

    def body(self, key, bucket=BUCKET, **kw):
        return self.s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()

    def setup(self):
        self.run("mb", f"s3://{BUCKET}", f"s3://{VBUCKET}")
        self.s3.put_bucket_versioning(Bucket=VBUCKET, VersioningConfiguration={"Status": "Enabled"})

    # ---- --metadata-directive (awscli: COPY keeps the source's, REPLACE takes the flags')
    def metadata_directive(self):
        self.put("md/src.txt", b"meta", ContentType="text/x-src", Metadata={"owner": "ann"})
        self.run("cp", "--metadata-directive", "REPLACE", f"s3://{BUCKET}/md/src.txt", f"s3://{BUCKET}/md/replaced.txt")
        h = self.s3.head_object(Bucket=BUCKET, Key="md/replaced.txt")
        assert h["Metadata"] == {}, f"REPLACE without metadata flags drops the source's metadata: {h['Metadata']}"
        self.run("cp", "--metadata-directive", "REPLACE", "--metadata", "k=v", f"s3://{BUCKET}/md/src.txt",
                 f"s3://{BUCKET}/md/replaced2.txt")
        assert self.s3.head_object(Bucket=BUCKET, Key="md/replaced2.txt")["Metadata"] == {"k": "v"}
        self.run("cp", "--metadata-directive", "COPY", f"s3://{BUCKET}/md/src.txt", f"s3://{BUCKET}/md/copied.txt")
        h = self.s3.head_object(Bucket=BUCKET, Key="md/copied.txt")
        assert h["Metadata"] == {"owner": "ann"} and h["ContentType"] == "text/x-src", h
        # Refused, not ignored: COPY with new metadata, a bad value, an upload.
        self.run("cp", "--metadata-directive", "COPY", "--metadata", "k=v", f"s3://{BUCKET}/md/src.txt",
                 f"s3://{BUCKET}/md/x.txt", expect=2)
        self.run("cp", "--metadata-directive", "MERGE", f"s3://{BUCKET}/md/src.txt", f"s3://{BUCKET}/md/x.txt",
                 expect=2)
        f = self.file("md/up.txt", 10)
        self.run("cp", "--metadata-directive", "REPLACE", f, f"s3://{BUCKET}/md/up.txt", expect=2)
        assert keys(self.s3, BUCKET, "md/x") == [] and keys(self.s3, BUCKET, "md/up") == []

    # ---- --flatten (s5cmd)
    def flatten(self):
        a = self.file("fl/a/x.txt", 11)
        b = self.file("fl/b/c/y.txt", 12)
        self.run("cp", "-r", "--flatten", os.path.join(self.src, "fl"), f"s3://{BUCKET}/flat/")
        assert sorted(keys(self.s3, BUCKET, "flat/")) == ["flat/x.txt", "flat/y.txt"], keys(self.s3, BUCKET, "flat/")
        assert self.body("flat/y.txt") == open(b, "rb").read()
        # Download with a wildcard, flattened.
        out = os.path.join(self.work, "flat-out")
        self.run("cp", "-r", f"s3://{BUCKET}/flat/", f"s3://{BUCKET}/flat2/deep/")
        self.run("cp", "--flatten", f"s3://{BUCKET}/flat2/*", out + "/")
        assert sorted(os.listdir(out)) == ["x.txt", "y.txt"], os.listdir(out)
        assert open(os.path.join(out, "x.txt"), "rb").read() == open(a, "rb").read()
        # Two sources with one base name: the second is an error, the first lands.
        self.file("fl2/one/same.txt", 5)
        self.file("fl2/two/same.txt", 6)
        p = self.run("cp", "-r", "--flatten", os.path.join(self.src, "fl2"), f"s3://{BUCKET}/flat3/", expect=1)
        assert "--flatten" in p.err, p.err
        assert keys(self.s3, BUCKET, "flat3/") == ["flat3/same.txt"]

    # ---- --exclude-from / --include-from (rclone)
    def filter_files(self):
        for rel in ("ff/keep.txt", "ff/skip.tmp", "ff/sub/also.log", "ff/sub/k2.txt"):
            self.file(rel, 7)
        ex = os.path.join(self.work, "exclude.txt")
        with open(ex, "w") as f:
            f.write("# temporary files\n*.tmp\n\n  *.log  \n")
        self.run("cp", "-r", "--exclude-from", ex, os.path.join(self.src, "ff"), f"s3://{BUCKET}/ff/")
        assert sorted(keys(self.s3, BUCKET, "ff/")) == ["ff/keep.txt", "ff/sub/k2.txt"], keys(self.s3, BUCKET, "ff/")
        inc = os.path.join(self.work, "include.txt")
        with open(inc, "w") as f:
            f.write("# only logs\n*.log\n")
        self.run("sync", "--exclude", "*", "--include-from", inc, os.path.join(self.src, "ff"), f"s3://{BUCKET}/ff2/")
        assert keys(self.s3, BUCKET, "ff2/") == ["ff2/sub/also.log"], keys(self.s3, BUCKET, "ff2/")
        self.run("cp", "-r", "--exclude-from", os.path.join(self.work, "missing.txt"), os.path.join(self.src, "ff"),
                 f"s3://{BUCKET}/ff3/", expect=2)
        assert keys(self.s3, BUCKET, "ff3/") == []

    # ---- --max-age / --min-age (rclone)
    def ages(self):
        old = self.file("age/old.txt", 20)
        new = self.file("age/new.txt", 21)
        now = time.time()
        os.utime(old, (now - 3 * 86400, now - 3 * 86400))
        self.run("cp", "-r", "--max-age", "1d", os.path.join(self.src, "age"), f"s3://{BUCKET}/age-young/")
        assert keys(self.s3, BUCKET, "age-young/") == ["age-young/new.txt"], keys(self.s3, BUCKET, "age-young/")
        self.run("cp", "-r", "--min-age", "1d12h", os.path.join(self.src, "age"), f"s3://{BUCKET}/age-old/")
        assert keys(self.s3, BUCKET, "age-old/") == ["age-old/old.txt"], keys(self.s3, BUCKET, "age-old/")
        date = time.strftime("%Y-%m-%d", time.gmtime(now - 86400))
        self.run("sync", "--max-age", date, os.path.join(self.src, "age"), f"s3://{BUCKET}/age-sync/")
        assert keys(self.s3, BUCKET, "age-sync/") == ["age-sync/new.txt"], keys(self.s3, BUCKET, "age-sync/")
        # sync --delete does not delete what the age filter left out on either side.
        self.run("sync", "--delete", "--min-age", "2d", os.path.join(self.src, "age"), f"s3://{BUCKET}/age-sync/")
        assert sorted(keys(self.s3, BUCKET, "age-sync/")) == ["age-sync/new.txt", "age-sync/old.txt"]
        # Downloads use the object's LastModified: everything is younger than a day.
        out = os.path.join(self.work, "age-out")
        self.run("cp", "-r", "--min-age", "1h", f"s3://{BUCKET}/age-young/", out + "/")
        assert not os.path.exists(out) or os.listdir(out) == [], os.listdir(out)
        self.run("cp", "-r", "--max-age", "1h", f"s3://{BUCKET}/age-young/", out + "/")
        assert os.listdir(out) == ["new.txt"]
        self.run("cp", "-r", "--max-age", "yesterday", os.path.join(self.src, "age"), f"s3://{BUCKET}/x/", expect=2)

    # ---- ls --etag --show-fullpath --all-versions (s5cmd)
    def ls_flags(self):
        body = b"etag body"
        self.put("ls/a.txt", body)
        p = self.run("ls", "--etag", f"s3://{BUCKET}/ls/")
        assert hashlib.md5(body).hexdigest() in p.out and "a.txt" in p.out, p.out
        p = self.run("ls", "-r", "--show-fullpath", f"s3://{BUCKET}/ls/")
        assert p.out.split() == [f"s3://{BUCKET}/ls/a.txt"], p.out
        r1 = self.s3.put_object(Bucket=VBUCKET, Key="v/k.txt", Body=b"one")
        r2 = self.s3.put_object(Bucket=VBUCKET, Key="v/k.txt", Body=b"second")
        d = self.s3.delete_object(Bucket=VBUCKET, Key="v/k.txt")
        p = self.run("ls", "--all-versions", "--json", f"s3://{VBUCKET}/v/")
        recs = [json.loads(l) for l in p.out.splitlines() if l.strip()]
        ids = [r["version_id"] for r in recs]
        assert ids == [d["VersionId"], r2["VersionId"], r1["VersionId"]], (ids, recs)
        assert recs[0]["delete_marker"] and recs[0]["is_latest"], recs[0]
        assert recs[1]["size"] == 6 and recs[2]["size"] == 3 and not recs[1]["is_latest"], recs
        p = self.run("ls", "--all-versions", f"s3://{VBUCKET}/v/")
        for vid in ids:
            assert vid in p.out, (vid, p.out)
        # A listing of the current objects does not show the deleted key.
        self.run("ls", f"s3://{VBUCKET}/v/", expect=3)

    # ---- du --group (s5cmd: by storage class)
    def du_group(self):
        self.put("du/a", b"x" * 100)
        self.put("du/b", b"x" * 50)
        self.put("du/c", b"x" * 7, StorageClass="STANDARD_IA")
        p = self.run("du", "--group", "--json", f"s3://{BUCKET}/du/")
        recs = {r["storage_class"]: r for r in (json.loads(l) for l in p.out.splitlines() if l.strip())}
        assert set(recs) == {"STANDARD", "STANDARD_IA"}, recs
        assert recs["STANDARD"]["objects"] == 2 and recs["STANDARD"]["bytes"] == 150, recs
        assert recs["STANDARD_IA"]["objects"] == 1 and recs["STANDARD_IA"]["bytes"] == 7, recs
        p = self.run("du", "-g", f"s3://{BUCKET}/du/")
        assert "STANDARD_IA" in p.out and len(p.out.strip().splitlines()) == 2, p.out

    # ---- rb --force: versions, delete markers and multipart uploads in progress
    def rb_force(self):
        b = "flags-rb"
        self.run("mb", f"s3://{b}")
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        for i in range(3):
            self.s3.put_object(Bucket=b, Key="k", Body=b"v%d" % i)
        self.s3.put_object(Bucket=b, Key="gone", Body=b"x")
        self.s3.delete_object(Bucket=b, Key="gone")
        up = self.s3.create_multipart_upload(Bucket=b, Key="big")
        self.s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=b"p" * 1000)
        # Without --force: not empty.
        self.run("rb", f"s3://{b}", expect=5)
        self.run("rb", "--force", f"s3://{b}")
        assert H.client_error_code(self.s3.head_bucket, Bucket=b)[0] == 404
        # An unversioned bucket with an upload in progress.
        b2 = "flags-rb2"
        self.run("mb", f"s3://{b2}")
        self.s3.put_object(Bucket=b2, Key="a", Body=b"a")
        self.s3.create_multipart_upload(Bucket=b2, Key="pending")
        self.run("rb", "--force", f"s3://{b2}")
        assert H.client_error_code(self.s3.head_bucket, Bucket=b2)[0] == 404

    # ---- server-side encryption
    def sse_s3_kms(self):
        f = self.file("sse/small.bin", 5000)
        big = self.file("sse/big.bin", 20 * MiB)
        self.run("cp", "--sse", "AES256", f, f"s3://{BUCKET}/sse/s3.bin")
        assert self.s3.head_object(Bucket=BUCKET, Key="sse/s3.bin")["ServerSideEncryption"] == "AES256"
        self.run("cp", "--sse", "aws:kms", big, f"s3://{BUCKET}/sse/kms-big.bin")
        h = self.s3.head_object(Bucket=BUCKET, Key="sse/kms-big.bin")
        assert h["ServerSideEncryption"] == "aws:kms", h
        assert self.body("sse/kms-big.bin") == open(big, "rb").read()
        # A copy takes the encryption of its flags.
        self.run("cp", "--sse", "aws:kms", f"s3://{BUCKET}/sse/s3.bin", f"s3://{BUCKET}/sse/copy-kms.bin")
        assert self.s3.head_object(Bucket=BUCKET, Key="sse/copy-kms.bin")["ServerSideEncryption"] == "aws:kms"
        # Modes and keys the server refuses fail the object clearly; nothing is written.
        p = self.run("cp", "--sse", "aws:kms", "--sse-kms-key-id", "no-such-key", f, f"s3://{BUCKET}/sse/bad1",
                     check=False)
        assert p.returncode != 0 and "KMS" in p.err, (p.returncode, p.err)
        p = self.run("cp", "--sse", "aws:kms:dsse", f, f"s3://{BUCKET}/sse/bad2", check=False)
        assert p.returncode != 0 and "NotImplemented" in p.err, (p.returncode, p.err)
        assert keys(self.s3, BUCKET, "sse/bad") == []
        self.run("cp", "--sse-kms-key-id", "k", f, f"s3://{BUCKET}/sse/bad3", expect=2)
        self.run("cp", "--sse", "AES256", "--sse-c-key", SSE_KEY_B64, f, f"s3://{BUCKET}/sse/bad4", expect=2)

    def sse_c(self):
        small = self.file("ssec/small.bin", 3000)
        big = self.file("ssec/big.bin", 20 * MiB)
        kw = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": SSE_KEY}
        for f, key in ((small, "ssec/small.bin"), (big, "ssec/big.bin")):
            self.run("cp", "--sse-c-key", SSE_KEY_B64, f, f"s3://{BUCKET}/{key}")
            code = H.client_error_code(self.s3.get_object, Bucket=BUCKET, Key=key)
            assert code[0] == 400, f"an SSE-C object needs its key: {code}"
            assert self.body(key, **kw) == open(f, "rb").read()
            out = os.path.join(self.work, "ssec-" + os.path.basename(f))
            self.run("cp", "--sse-c-key", SSE_KEY_B64, f"s3://{BUCKET}/{key}", out)
            assert open(out, "rb").read() == open(f, "rb").read()
            p = self.run("cp", f"s3://{BUCKET}/{key}", out + ".nokey", check=False)
            assert p.returncode != 0 and not os.path.exists(out + ".nokey"), p.returncode
        # head and cat with the key; the raw 32-byte form of the key works too.
        j = json.loads(self.run("head", "--sse-c-key", SSE_KEY_B64, f"s3://{BUCKET}/ssec/small.bin").out)
        assert j["size"] == 3000, j
        raw = SSE_KEY.decode("latin-1")
        if all(0x20 < ord(c) < 0x7f for c in raw):
            self.run("head", "--sse-c-key", raw, f"s3://{BUCKET}/ssec/small.bin")
        p = self.run("cat", "--sse-c-key", SSE_KEY_B64, f"s3://{BUCKET}/ssec/small.bin")
        assert p.stdout == open(small, "rb").read()
        # S3 -> S3 copies of SSE-C objects (single CopyObject and UploadPartCopy parts).
        self.run("cp", "--sse-c-key", SSE_KEY_B64, "-r", f"s3://{BUCKET}/ssec/", f"s3://{BUCKET}/ssec-copy/")
        assert self.body("ssec-copy/big.bin", **kw) == open(big, "rb").read()
        assert self.body("ssec-copy/small.bin", **kw) == open(small, "rb").read()
        # A wrong key is refused.
        wrong = base64.b64encode(b"w" * 32).decode()
        p = self.run("cp", "--sse-c-key", wrong, f"s3://{BUCKET}/ssec/small.bin", out + ".wrong", check=False)
        assert p.returncode == 4, (p.returncode, p.err)
        self.run("cp", "--sse-c-key", "too-short", small, f"s3://{BUCKET}/ssec/x", expect=2)

    # ---- run FILE / run - (s5cmd: one command a line, in parallel)
    def run_batch(self):
        files = [self.file(f"run/f{i}.bin", 1000 + i) for i in range(20)]
        self.put("run/old.txt", b"old")
        self.put("run/move-me.txt", b"moved")
        batch = os.path.join(self.work, "batch.txt")
        with open(batch, "w") as f:
            f.write("# uploads, one a line\n\n")
            for i, p in enumerate(files):
                f.write(f"cp '{p}' s3://{BUCKET}/run/up/f{i}.bin\n")
            f.write(f"rm s3://{BUCKET}/run/old.txt\n")
            f.write(f"mv s3://{BUCKET}/run/move-me.txt s3://{BUCKET}/run/moved.txt\n")
        p = self.run("run", "--concurrency", "8", batch)
        assert p.out.count("upload:") == 20, p.out
        got = keys(self.s3, BUCKET, "run/")
        assert sorted(k for k in got if k.startswith("run/up/")) == sorted(f"run/up/f{i}.bin" for i in range(20)), got
        assert "run/old.txt" not in got and "run/move-me.txt" not in got and "run/moved.txt" in got, got
        assert self.body("run/up/f7.bin") == open(files[7], "rb").read()
        # stdin; a failing line: the others still run, its errors carry its line number, exit non-zero.
        script = (f"cp {files[0]} s3://{BUCKET}/run/stdin.bin\n"
                  f"cp s3://{BUCKET}/run/no-such-key {self.work}/nothing\n"
                  f"ls s3://{BUCKET}/run/up/\n")
        p = self.run("run", "-", input=script.encode(), check=False)
        assert p.returncode != 0, p.returncode
        assert "line 2:" in p.err and "no-such-key" in p.err and "line 1:" not in p.err, p.err
        assert "f19.bin" in p.out, p.out
        assert "run/stdin.bin" in keys(self.s3, BUCKET, "run/")
        # A line that cannot be parsed runs nothing.
        script = f"cp {files[1]} s3://{BUCKET}/run/never.bin\ncp 'unterminated\n"
        p = self.run("run", "-", input=script.encode(), expect=2)
        assert "line 2" in p.err, p.err
        assert "run/never.bin" not in keys(self.s3, BUCKET, "run/")
        self.run("run", "-", input=b"run other.txt\n", expect=2)
        self.run("run", os.path.join(self.work, "no-such-batch.txt"), expect=3)

    # ---- S3 -> S3 between two servers (--source-endpoint-url)
    def two_endpoints(self):
        s3b = self.srv2.client()
        s3b.create_bucket(Bucket="remote")
        big = os.urandom(12 * MiB + 12345)
        self.put("x2/big.bin", big, ContentType="application/x-big", Metadata={"run": "7"})
        self.put("x2/sub/small.txt", b"small one")
        ends = ["--source-endpoint-url", self.srv.endpoint, "--endpoint-url", self.srv2.endpoint]
        self.run("cp", *ends, "-r", "--multipart-threshold", "5MiB", "--part-size", "5MiB",
                 f"s3://{BUCKET}/x2/", "s3://remote/in/", endpoint=False)
        assert s3b.get_object(Bucket="remote", Key="in/big.bin")["Body"].read() == big
        h = s3b.head_object(Bucket="remote", Key="in/big.bin")
        assert h["ContentType"] == "application/x-big" and h["Metadata"] == {"run": "7"}, h
        assert h["ETag"].strip('"').endswith("-3"), f"12 MiB in 5 MiB parts is a 3-part upload: {h['ETag']}"
        assert s3b.get_object(Bucket="remote", Key="in/sub/small.txt")["Body"].read() == b"small one"
        # The source server holds no copy; the destination never had the source bucket.
        assert keys(self.s3, BUCKET, "in/") == []
        # mv: the source is deleted on its own server once copied.
        self.run("mv", *ends, f"s3://{BUCKET}/x2/sub/small.txt", "s3://remote/moved.txt", endpoint=False)
        assert s3b.get_object(Bucket="remote", Key="moved.txt")["Body"].read() == b"small one"
        assert keys(self.s3, BUCKET, "x2/sub/") == []
        # Metadata flags apply as for one service.
        self.run("cp", *ends, "--metadata-directive", "REPLACE", f"s3://{BUCKET}/x2/big.bin",
                 "s3://remote/replaced.bin", endpoint=False)
        assert s3b.head_object(Bucket="remote", Key="replaced.bin")["Metadata"] == {}
        # Missing source: exit 3; a local side is refused.
        self.run("cp", *ends, f"s3://{BUCKET}/x2/none", "s3://remote/none", endpoint=False, expect=3)
        f = self.file("x2/local.txt", 10)
        self.run("cp", *ends, f, "s3://remote/local.txt", endpoint=False, expect=2)


def main():
    args = H.parse_args()
    runner = H.Runner("transfer_flags")
    srv = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    srv2 = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    try:
        srv.start()
        srv2.start()
        with H.tempdir() as work:
            t = TransferFlagTests(srv, os.path.abspath(args.strata), work)
            t.srv2 = srv2
            order = ["setup", "metadata_directive", "flatten", "filter_files", "ages", "ls_flags", "du_group",
                     "rb_force", "sse_s3_kms", "sse_c", "run_batch", "two_endpoints"]
            for name in order:
                if not runner.case(name, getattr(t, name)) and name == "setup":
                    break
    finally:
        srv.cleanup()
        srv2.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
