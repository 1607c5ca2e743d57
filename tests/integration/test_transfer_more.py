#!/usr/bin/python3
"""`strata head`, `strata presign` and `strata mv` against a real `strata server`,
as s5cmd/awscli users expect them: head prints one JSON object of the object's
metadata (boto3 is the oracle), presigned URLs work from plain urllib and fail
with 403 once expired or tampered with, and mv deletes a source only after its
copy succeeded.

Usage: /usr/bin/python3 test_transfer_more.py --strata build/strata
"""

import datetime
import hashlib
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402
from test_transfer_cli import TransferCliTests, keys, tree_digest, bucket_digest  # noqa: E402

MiB = H.MiB
BUCKET = "more"
BUCKET2 = "more-two"
VBUCKET = "more-versioned"


def parse_iso(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


class TransferMoreTests(TransferCliTests):
    def put(self, key, body, bucket=BUCKET, **kw):
        self.s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)

    def exists(self, key, bucket=BUCKET):
        return key in keys(self.s3, bucket, key)

    # -- cases
    def help(self):
        p = self.run("--help", endpoint=False)
        for sub in ("head", "presign", "mv"):
            assert f"  {sub}" in p.out, f"{sub} missing from strata --help:\n{p.out}"
            h = self.run(sub, "--help", endpoint=False)
            assert "Examples:" in h.out and "Exit codes" in h.out, h.out
        h = self.run("presign", "--help", endpoint=False)
        for flag in ("--expire", "--method", "--endpoint-url"):
            assert flag in h.out, (flag, h.out)
        h = self.run("mv", "--help", endpoint=False)
        for flag in ("--recursive", "--exclude", "--dryrun"):
            assert flag in h.out, (flag, h.out)

    def setup(self):
        self.run("mb", f"s3://{BUCKET}", f"s3://{BUCKET2}", f"s3://{VBUCKET}")
        self.s3.put_bucket_versioning(Bucket=VBUCKET, VersioningConfiguration={"Status": "Enabled"})

    # ---- head
    def head_object(self):
        body = os.urandom(12345)
        self.put("h/obj.bin", body, ContentType="application/x-test", Metadata={"owner": "ann", "Run-Id": "7"},
                 StorageClass="STANDARD_IA")
        p = self.run("head", f"s3://{BUCKET}/h/obj.bin")
        lines = [l for l in p.out.splitlines() if l.strip()]
        assert len(lines) == 1, f"head must print one JSON object, got {p.out!r}"
        j = json.loads(lines[0])
        want = self.s3.head_object(Bucket=BUCKET, Key="h/obj.bin")
        assert j["key"] == "h/obj.bin", j
        assert j["size"] == len(body) == want["ContentLength"], j
        assert j["etag"] == want["ETag"].strip('"') and '"' not in j["etag"], j
        assert j["etag"] == hashlib.md5(body).hexdigest(), j
        lm = parse_iso(j["last_modified"])
        assert lm.tzinfo is not None and abs((lm - want["LastModified"]).total_seconds()) < 1, (j, want["LastModified"])
        assert j["content_type"] == "application/x-test", j
        assert j["storage_class"] == "STANDARD_IA", j
        assert j["metadata"] == {"owner": "ann", "run-id": "7"}, j
        assert "version_id" not in j, f"an unversioned object has no version_id: {j}"
        # STANDARD is what S3 means when it sends no storage class.
        self.put("h/plain.txt", b"plain")
        j = json.loads(self.run("head", f"s3://{BUCKET}/h/plain.txt").out)
        assert j["storage_class"] == "STANDARD" and j["metadata"] == {} and j["size"] == 5, j

    def head_versioned(self):
        r1 = self.s3.put_object(Bucket=VBUCKET, Key="v.txt", Body=b"one")
        r2 = self.s3.put_object(Bucket=VBUCKET, Key="v.txt", Body=b"second")
        assert r1["VersionId"] != r2["VersionId"]
        j = json.loads(self.run("head", f"s3://{VBUCKET}/v.txt").out)
        assert j["version_id"] == r2["VersionId"] and j["size"] == 6, (j, r2)

    def head_missing(self):
        p = self.run("head", f"s3://{BUCKET}/h/no-such-key", expect=3)
        assert p.out.strip() == "", f"nothing on stdout for a missing key: {p.out!r}"
        assert "h/no-such-key" in p.err and "not exist" in p.err, p.err
        p = self.run("head", "s3://no-such-bucket-here/k", expect=3)
        assert "no-such-bucket-here" in p.err and "bucket" in p.err, p.err
        # A bucket on its own: exists or not.
        self.run("head", f"s3://{BUCKET}")
        self.run("head", "s3://no-such-bucket-here", expect=3)
        self.run("head", f"s3://{BUCKET}/h/*.bin", expect=2)
        self.run("head", "/etc/passwd", expect=2)
        # Wrong credentials: access denied, not "not found".
        env = dict(self.env, AWS_SECRET_ACCESS_KEY="wrong-secret")
        self.run("head", f"s3://{BUCKET}/h/obj.bin", env=env, expect=4)

    # ---- presign
    def presign_get(self):
        body = os.urandom(70000)
        key = "p/s p\u00e4ce+&=.bin"
        self.put(key, body)
        url = self.run("presign", f"s3://{BUCKET}/{key}").out.strip()
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        assert q["X-Amz-Expires"] == ["3600"], f"default expiry is 1h as s5cmd's: {url}"
        assert q["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and "X-Amz-Signature" in q, url
        assert url.startswith(self.srv.endpoint), url
        r = H.url_request(url)
        assert r.status == 200 and r.body == body, (r.status, r.body[:200])
        # The method is signed: a GET URL does not upload.
        r = H.url_request(url, method="PUT", data=b"overwrite")
        assert r.status == 403, r.status
        assert self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == body
        # Durations.
        for expire, secs in (("90s", 90), ("15m", 900), ("1h30m", 5400), ("7d", 604800), ("604800", 604800),
                             ("2d", 172800)):
            url = self.run("presign", "--expire", expire, f"s3://{BUCKET}/{key}").out.strip()
            got = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["X-Amz-Expires"]
            assert got == [str(secs)], (expire, got)
        assert H.url_request(url).body == body
        # awscli's spelling, in seconds.
        url = self.run("presign", "--expires-in", "300", f"s3://{BUCKET}/{key}").out.strip()
        assert urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["X-Amz-Expires"] == ["300"], url
        # A URL for an object that does not exist yet is fine; fetching it is a 404.
        url = self.run("presign", f"s3://{BUCKET}/p/not-yet").out.strip()
        assert H.url_request(url).status == 404

    def presign_put(self):
        url = self.run("presign", "--method", "PUT", "--expire", "10m", f"s3://{BUCKET}/p/uploaded.bin").out.strip()
        data = os.urandom(54321)
        r = H.url_request(url, method="PUT", data=data)
        assert r.status == 200, (r.status, r.body[:300])
        assert self.s3.get_object(Bucket=BUCKET, Key="p/uploaded.bin")["Body"].read() == data
        # Lower case is the same method.
        url = self.run("presign", "--method", "put", f"s3://{BUCKET}/p/lower.bin").out.strip()
        assert H.url_request(url, method="PUT", data=b"x").status == 200

    def presign_refused(self):
        self.put("p/secret.txt", b"secret")
        url = self.run("presign", "--expire", "1s", f"s3://{BUCKET}/p/secret.txt").out.strip()
        time.sleep(2.5)
        r = H.url_request(url)
        assert r.status == 403 and b"secret" != r.body, (r.status, r.body[:300])
        url = self.run("presign", f"s3://{BUCKET}/p/secret.txt").out.strip()
        assert H.url_request(url).status == 200
        # Tampered: another key, a longer lifetime, a changed signature.
        for bad in (url.replace("secret.txt", "p/other.txt"),
                    url.replace("X-Amz-Expires=3600", "X-Amz-Expires=7200"),
                    url[:-1] + ("0" if url[-1] != "0" else "1")):
            assert bad != url
            r = H.url_request(bad)
            assert r.status == 403, (bad, r.status)
        # Signed with a secret the server does not know.
        env = dict(self.env, AWS_SECRET_ACCESS_KEY="wrong-secret")
        bad = self.run("presign", f"s3://{BUCKET}/p/secret.txt", env=env).out.strip()
        assert H.url_request(bad).status == 403

    def presign_usage(self):
        target = f"s3://{BUCKET}/p/secret.txt"
        for args in (("--expire", "8d"), ("--expire", "604801"), ("--expire", "0"), ("--expire", "abc"),
                     ("--expire", "1h30"), ("--expire", "-5m"), ("--method", "DELETE")):
            p = self.run("presign", *args, target, expect=2)
            assert p.out.strip() == "", p.out
        p = self.run("presign", "--expire", "8d", target, expect=2)
        assert "7d" in p.err, p.err
        self.run("presign", f"s3://{BUCKET}", expect=2)
        self.run("presign", f"s3://{BUCKET}/p/*.txt", expect=2)
        # No credentials at all: exit 4, and says what to set.
        env = {k: v for k, v in self.env.items() if not k.startswith("AWS_SECRET") and k != "AWS_ACCESS_KEY_ID"}
        p = self.run("presign", target, env=env, expect=4)
        assert "AWS_ACCESS_KEY_ID" in p.err, p.err

    # ---- mv
    def mv_single(self):
        # local -> S3
        path = self.file("mv/one.txt", 1000)
        data = open(path, "rb").read()
        p = self.run("mv", path, f"s3://{BUCKET}/mv/one.txt")
        assert "move:" in p.out, p.out
        assert not os.path.exists(path), "the local source must be gone after mv"
        assert self.s3.get_object(Bucket=BUCKET, Key="mv/one.txt")["Body"].read() == data
        # S3 -> S3 (server-side), into a "directory" destination.
        self.run("mv", f"s3://{BUCKET}/mv/one.txt", f"s3://{BUCKET2}/moved/")
        assert not self.exists("mv/one.txt")
        assert self.s3.get_object(Bucket=BUCKET2, Key="moved/one.txt")["Body"].read() == data
        # S3 -> local
        out = os.path.join(self.work, "mv-out", "one.txt")
        self.run("mv", f"s3://{BUCKET2}/moved/one.txt", out)
        assert open(out, "rb").read() == data
        assert not self.exists("moved/one.txt", BUCKET2)
        # Multipart: a large file moved keeps its bytes.
        big = self.file("mv/big.bin", 20 * MiB + 11, seed=5)
        digest = H.sha256_file(big)
        self.run("mv", big, f"s3://{BUCKET}/mv/big.bin")
        assert not os.path.exists(big)
        self.run("mv", f"s3://{BUCKET}/mv/big.bin", f"s3://{BUCKET}/mv/big2.bin")
        body = self.s3.get_object(Bucket=BUCKET, Key="mv/big2.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == digest and not self.exists("mv/big.bin")

    def mv_recursive_and_wildcards(self):
        tree = os.path.join(self.src, "mvtree")
        for i in range(25):
            self.file(os.path.join("mvtree", f"d{i % 3}", f"f{i}.dat"), 500 + i)
        want = tree_digest(tree)
        self.run("mv", "--recursive", tree, f"s3://{BUCKET}/mvtree")
        assert bucket_digest(self.s3, BUCKET, "mvtree/") == want
        assert tree_digest(tree) == {}, "every moved file is deleted"
        # S3 -> S3 recursive
        self.run("mv", "--recursive", f"s3://{BUCKET}/mvtree/", f"s3://{BUCKET2}/mvtree2/")
        assert keys(self.s3, BUCKET, "mvtree/") == []
        assert bucket_digest(self.s3, BUCKET2, "mvtree2/") == want
        # Wildcard S3 -> local: only the matches move.
        out = os.path.join(self.work, "mv-wild")
        self.run("mv", f"s3://{BUCKET2}/mvtree2/d1/*.dat", out + "/")
        moved = sorted(os.listdir(out))
        assert moved == sorted(os.path.basename(k) for k in want if k.startswith("d1/")), moved
        left = keys(self.s3, BUCKET2, "mvtree2/")
        assert sorted(left) == sorted("mvtree2/" + k for k in want if not k.startswith("d1/")), left
        # --exclude keeps what it excludes.
        back = os.path.join(self.work, "mv-back")
        self.run("mv", "--recursive", "--exclude", "d0/*", f"s3://{BUCKET2}/mvtree2/", back)
        assert sorted(keys(self.s3, BUCKET2, "mvtree2/")) == sorted("mvtree2/" + k for k in want if k.startswith("d0/"))
        # --dryrun changes nothing.
        before = keys(self.s3, BUCKET2, "mvtree2/")
        p = self.run("mv", "--dryrun", "--recursive", f"s3://{BUCKET2}/mvtree2/", back)
        assert "(dryrun)" in p.out and "move" in p.out, p.out
        assert keys(self.s3, BUCKET2, "mvtree2/") == before
        # A pattern that matches nothing: not found, nothing moved.
        self.run("mv", f"s3://{BUCKET2}/mvtree2/*.nothing", back, expect=3)

    def mv_failed_copy_deletes_nothing(self):
        # local -> a bucket that does not exist: the file stays.
        path = self.file("mvfail/a.txt", 300)
        p = self.run("mv", path, "s3://no-such-bucket-mv/a.txt", check=False)
        assert p.returncode != 0 and os.path.exists(path), (p.returncode, p.err)
        # S3 -> S3 into a missing bucket: the source stays.
        self.put("mvfail/src.txt", b"keep me")
        p = self.run("mv", f"s3://{BUCKET}/mvfail/src.txt", "s3://no-such-bucket-mv/x.txt", check=False)
        assert p.returncode != 0 and self.exists("mvfail/src.txt"), p.err
        # S3 -> local where one destination cannot be written: that one object
        # stays, the others move, and the exit code says some failed.
        for n in ("a", "b", "c"):
            self.put(f"mvpart/{n}.txt", n.encode() * 10)
        out = os.path.join(self.work, "mvpart-out")
        os.makedirs(os.path.join(out, "b.txt", "occupied"))  # a directory where b.txt would go
        p = self.run("mv", "--recursive", f"s3://{BUCKET}/mvpart/", out, check=False)
        assert p.returncode == 1, (p.returncode, p.err)
        assert keys(self.s3, BUCKET, "mvpart/") == ["mvpart/b.txt"], keys(self.s3, BUCKET, "mvpart/")
        assert open(os.path.join(out, "a.txt"), "rb").read() == b"a" * 10
        # Onto itself: refused, and the object is still there.
        p = self.run("mv", f"s3://{BUCKET}/mvfail/src.txt", f"s3://{BUCKET}/mvfail/src.txt", check=False)
        assert p.returncode == 2 and "same" in p.err, (p.returncode, p.err)
        assert self.s3.get_object(Bucket=BUCKET, Key="mvfail/src.txt")["Body"].read() == b"keep me"
        # Unreachable endpoint: nothing deleted locally.
        p = self.run("mv", "--s3-option", "max_retries=0", "--endpoint-url", "http://127.0.0.1:1", path,
                     f"s3://{BUCKET}/x.txt", check=False, endpoint=False)
        assert p.returncode == 6 and os.path.exists(path), (p.returncode, p.err)

    def mv_usage(self):
        path = self.file("mvusage/a.txt", 10)
        self.run("mv", "-", f"s3://{BUCKET}/x", expect=2)
        self.run("mv", f"s3://{BUCKET}/mvfail/src.txt", "-", expect=2)
        self.run("mv", path, os.path.join(self.work, "local-copy"), expect=2)
        self.run("mv", path, expect=2)
        assert os.path.exists(path)


def main():
    args = H.parse_args()
    runner = H.Runner("transfer_more")
    srv = H.StrataServer(args.strata, extra_args=["--no-fsync"])
    try:
        srv.start()
        with H.tempdir() as work:
            t = TransferMoreTests(srv, os.path.abspath(args.strata), work)
            order = ["help", "setup", "head_object", "head_versioned", "head_missing", "presign_get", "presign_put",
                     "presign_refused", "presign_usage", "mv_single", "mv_recursive_and_wildcards",
                     "mv_failed_copy_deletes_nothing", "mv_usage"]
            for name in order:
                if not runner.case(name, getattr(t, name)) and name == "setup":
                    break
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
