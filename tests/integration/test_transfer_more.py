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
from test_transfer_cli import TransferCliTests, keys, tree_digest, bucket_digest, json_lines  # noqa: E402

MiB = H.MiB
BUCKET = "more"
BUCKET2 = "more-two"
VBUCKET = "more-versioned"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


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

    # ---- upload flags: what uploads and copies store with each object
    def acl_grants(self, key, bucket=BUCKET):
        acl = self.s3.get_object_acl(Bucket=bucket, Key=key)
        return {(g["Grantee"].get("URI", g["Grantee"].get("ID")), g["Permission"]) for g in acl["Grants"]}

    def upload_headers(self):
        h = self.run("cp", "--help", endpoint=False).out
        for flag in ("--storage-class", "--cache-control", "--expires", "--content-encoding",
                     "--content-disposition", "--acl", "--no-clobber", "--if-size-differ", "--if-source-newer"):
            assert flag in h, (flag, h)
        small = self.file("hdr/small.txt", 2000)
        big = self.file("hdr/big.bin", 20 * MiB + 3, seed=9)  # above the 16 MiB multipart threshold
        flags = ["--storage-class", "STANDARD_IA", "--cache-control", "max-age=600",
                 "--expires", "2031-02-03T04:05:06Z", "--content-encoding", "gzip",
                 "--content-disposition", "attachment; filename=x.txt", "--content-type", "text/x-test"]
        for path, key in ((small, "hdr/small.txt"), (big, "hdr/big.bin")):
            self.run("cp", *flags, path, f"s3://{BUCKET}/{key}")
            hd = self.s3.head_object(Bucket=BUCKET, Key=key)
            assert hd.get("StorageClass") == "STANDARD_IA", (key, hd)
            assert hd["CacheControl"] == "max-age=600", (key, hd)
            assert hd["ContentEncoding"] == "gzip", (key, hd)
            assert hd["ContentDisposition"] == "attachment; filename=x.txt", (key, hd)
            assert hd["ContentType"] == "text/x-test", (key, hd)
            exp = hd.get("Expires") or hd.get("ExpiresString")
            if isinstance(exp, datetime.datetime):
                assert exp == datetime.datetime(2031, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc), (key, exp)
            else:
                assert exp == "Mon, 03 Feb 2031 04:05:06 GMT", (key, hd)
        # Every class the server offers, single PUT and multipart.
        for sc in ("STANDARD", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "REDUCED_REDUNDANCY"):
            self.run("cp", "--storage-class", sc, small, f"s3://{BUCKET}/hdr/sc-{sc}")
            got = self.s3.head_object(Bucket=BUCKET, Key=f"hdr/sc-{sc}").get("StorageClass", "STANDARD")
            assert got == sc, (sc, got)
        self.run("cp", "--storage-class", "ONEZONE_IA", big, f"s3://{BUCKET}/hdr/big-oz.bin")
        assert self.s3.head_object(Bucket=BUCKET, Key="hdr/big-oz.bin")["StorageClass"] == "ONEZONE_IA"
        # Recursive uploads and sync carry them too.
        tree = os.path.join(self.src, "hdrtree")
        for i in range(3):
            self.file(os.path.join("hdrtree", f"f{i}.txt"), 100 + i)
        self.run("cp", "-r", "--storage-class", "STANDARD_IA", "--cache-control", "no-cache", tree,
                 f"s3://{BUCKET}/hdrtree/")
        self.run("sync", "--storage-class", "ONEZONE_IA", "--acl", "public-read", tree, f"s3://{BUCKET}/hdrsync/")
        for i in range(3):
            hd = self.s3.head_object(Bucket=BUCKET, Key=f"hdrtree/f{i}.txt")
            assert hd["StorageClass"] == "STANDARD_IA" and hd["CacheControl"] == "no-cache", hd
            assert self.s3.head_object(Bucket=BUCKET, Key=f"hdrsync/f{i}.txt")["StorageClass"] == "ONEZONE_IA"
            assert (ALL_USERS, "READ") in self.acl_grants(f"hdrsync/f{i}.txt")

    def upload_acl(self):
        all_users = ALL_USERS
        small = self.file("acl/a.txt", 500)
        big = self.file("acl/big.bin", 17 * MiB, seed=4)
        self.run("cp", small, f"s3://{BUCKET}/acl/private.txt")
        assert (all_users, "READ") not in self.acl_grants("acl/private.txt")
        for path, key in ((small, "acl/pub.txt"), (big, "acl/pub.bin")):
            self.run("cp", "--acl", "public-read", path, f"s3://{BUCKET}/{key}")
            assert (all_users, "READ") in self.acl_grants(key), self.acl_grants(key)
        # Server-side copy: --acl alone keeps the source's metadata.
        self.put("acl/src.txt", b"copy me", ContentType="text/x-src", Metadata={"k": "v"})
        self.run("cp", "--acl", "public-read", "--storage-class", "STANDARD_IA",
                 f"s3://{BUCKET}/acl/src.txt", f"s3://{BUCKET2}/acl/dst.txt")
        hd = self.s3.head_object(Bucket=BUCKET2, Key="acl/dst.txt")
        assert hd["ContentType"] == "text/x-src" and hd["Metadata"] == {"k": "v"}, hd
        assert hd["StorageClass"] == "STANDARD_IA", hd
        assert (all_users, "READ") in self.acl_grants("acl/dst.txt", BUCKET2)
        # A canned ACL the server does not know: refused, non-zero.
        p = self.run("cp", "--acl", "world-writable-please", small, f"s3://{BUCKET}/acl/bad.txt", check=False)
        assert p.returncode != 0 and p.err.strip(), (p.returncode, p.err)
        assert not self.exists("acl/bad.txt")

    def copy_headers(self):
        # S3 -> S3 with a metadata flag: REPLACE (the copy gets only what was given), small and multipart.
        self.put("cph/src.txt", b"x" * 3000, ContentType="text/x-src", Metadata={"old": "1"},
                 CacheControl="max-age=1")
        big = self.file("cph/big.bin", 20 * MiB + 1, seed=3)
        self.run("cp", "--content-type", "text/x-src", "--metadata", "old=1", big, f"s3://{BUCKET}/cph/big.bin")
        for key in ("cph/src.txt", "cph/big.bin"):
            dst = key.replace("cph/", "cph-out/")
            self.run("cp", "--cache-control", "max-age=99", "--content-disposition", "inline",
                     "--storage-class", "STANDARD_IA", f"s3://{BUCKET}/{key}", f"s3://{BUCKET2}/{dst}")
            hd = self.s3.head_object(Bucket=BUCKET2, Key=dst)
            assert hd["CacheControl"] == "max-age=99" and hd["ContentDisposition"] == "inline", (key, hd)
            assert hd["StorageClass"] == "STANDARD_IA", (key, hd)
            assert hd["Metadata"] == {}, f"REPLACE drops the source's metadata: {hd}"
            assert hd["ContentType"] != "text/x-src", hd
        # --storage-class alone keeps the source's metadata and headers (COPY).
        for key in ("cph/src.txt", "cph/big.bin"):
            dst = key.replace("cph/", "cph-keep/")
            self.run("cp", "--storage-class", "GLACIER_IR", f"s3://{BUCKET}/{key}", f"s3://{BUCKET2}/{dst}")
            hd = self.s3.head_object(Bucket=BUCKET2, Key=dst)
            assert hd["StorageClass"] == "GLACIER_IR" and hd["Metadata"] == {"old": "1"}, (key, hd)
            assert hd["ContentType"] == "text/x-src", (key, hd)
        assert self.s3.head_object(Bucket=BUCKET2, Key="cph-keep/src.txt")["CacheControl"] == "max-age=1"

    def storage_class_refused(self):
        small = self.file("refuse/a.txt", 100)
        big = self.file("refuse/big.bin", 17 * MiB, seed=8)
        self.put("refuse/src.txt", b"src")
        for sc in ("GLACIER", "DEEP_ARCHIVE"):
            for args in ((small, f"s3://{BUCKET}/refuse/{sc}.txt"), (big, f"s3://{BUCKET}/refuse/{sc}.bin"),
                         (f"s3://{BUCKET}/refuse/src.txt", f"s3://{BUCKET2}/refuse/{sc}.txt")):
                p = self.run("cp", "--storage-class", sc, *args, check=False)
                assert p.returncode not in (0, 2), (sc, args, p.returncode, p.err)
                assert "failed" in p.err and p.err.count("\n") < 20, (sc, p.err)
        assert keys(self.s3, BUCKET, "refuse/") == ["refuse/src.txt"], keys(self.s3, BUCKET, "refuse/")
        assert keys(self.s3, BUCKET2, "refuse/") == []
        # Flags that describe S3 objects are refused for a local destination, not dropped.
        for flag in (["--storage-class", "STANDARD_IA"], ["--acl", "private"], ["--cache-control", "x"]):
            self.run("cp", *flag, f"s3://{BUCKET}/refuse/src.txt", os.path.join(self.work, "x.txt"), expect=2)
        self.run("cp", "--expires", "next tuesday", small, f"s3://{BUCKET}/refuse/x", expect=2)

    # ---- overwrite policy (s5cmd)
    def no_clobber(self):
        a = self.file("nc/a.txt", 100)
        self.put("nc/a.txt", b"old")
        self.put("nc/b.txt", b"keep")
        b = self.file("nc/b.txt", 200)
        c = self.file("nc/c.txt", 300)
        p = self.run("cp", "-n", "-r", os.path.join(self.src, "nc"), f"s3://{BUCKET}/nc/")
        assert p.out.count("skip:") == 2 and "upload:" in p.out, p.out
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/a.txt")["Body"].read() == b"old"
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/b.txt")["Body"].read() == b"keep"
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/c.txt")["Body"].read() == open(c, "rb").read()
        # JSON: a skipped record and the summary's count.
        p = self.run("cp", "--no-clobber", "--json", a, f"s3://{BUCKET}/nc/a.txt")
        recs, summary = json_lines(p.out)
        assert any(r.get("skipped") for r in recs) and summary["skipped"] == 1, (recs, summary)
        # Download onto an existing file, S3 -> S3 onto an existing object.
        out = os.path.join(self.work, "nc-out.txt")
        with open(out, "wb") as f:
            f.write(b"local")
        self.run("cp", "-n", f"s3://{BUCKET}/nc/a.txt", out)
        assert open(out, "rb").read() == b"local"
        self.run("cp", "-n", f"s3://{BUCKET}/nc/a.txt", f"s3://{BUCKET}/nc/b.txt")
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/b.txt")["Body"].read() == b"keep"
        # mv --no-clobber keeps a skipped source.
        self.run("mv", "-n", b, f"s3://{BUCKET}/nc/b.txt")
        assert os.path.exists(b)
        # stdin: the server refuses the replace.
        p = self.run("cp", "-n", "-", f"s3://{BUCKET}/nc/a.txt", input=b"from stdin")
        assert "skip:" in p.out, p.out
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/a.txt")["Body"].read() == b"old"
        self.run("cp", "-n", "-", f"s3://{BUCKET}/nc/new.txt", input=b"from stdin")
        assert self.s3.get_object(Bucket=BUCKET, Key="nc/new.txt")["Body"].read() == b"from stdin"

    def if_size_differ_and_newer(self):
        same = self.file("cond/same.txt", 3)
        diff = self.file("cond/diff.txt", 10)
        self.put("cond/same.txt", b"abc")
        self.put("cond/diff.txt", b"abc")
        p = self.run("cp", "--if-size-differ", "-r", os.path.join(self.src, "cond"), f"s3://{BUCKET}/cond/")
        assert "skip:" in p.out and "same.txt" in p.out.split("skip:")[1].split("\n")[0], p.out
        assert self.s3.get_object(Bucket=BUCKET, Key="cond/same.txt")["Body"].read() == b"abc"
        assert self.s3.get_object(Bucket=BUCKET, Key="cond/diff.txt")["Body"].read() == open(diff, "rb").read()
        # --if-source-newer: a file older than the object is skipped, a newer one is sent.
        old = self.file("newer/old.txt", 50)
        new = self.file("newer/new.txt", 60)
        self.put("newer/old.txt", b"server")
        self.put("newer/new.txt", b"server")
        now = time.time()
        os.utime(old, (now - 3600, now - 3600))
        os.utime(new, (now + 3600, now + 3600))
        p = self.run("cp", "--if-source-newer", old, f"s3://{BUCKET}/newer/old.txt")
        assert "skip:" in p.out, p.out
        self.run("cp", "--if-source-newer", new, f"s3://{BUCKET}/newer/new.txt")
        assert self.s3.get_object(Bucket=BUCKET, Key="newer/old.txt")["Body"].read() == b"server"
        assert self.s3.get_object(Bucket=BUCKET, Key="newer/new.txt")["Body"].read() == open(new, "rb").read()
        # Download: the local file newer than the object stays; an older one is replaced.
        out = os.path.join(self.work, "newer-out.txt")
        with open(out, "wb") as f:
            f.write(b"mine")
        os.utime(out, (now + 3600, now + 3600))
        self.run("cp", "--if-source-newer", f"s3://{BUCKET}/newer/old.txt", out)
        assert open(out, "rb").read() == b"mine"
        os.utime(out, (now - 7200, now - 7200))
        self.run("cp", "--if-source-newer", f"s3://{BUCKET}/newer/old.txt", out)
        assert open(out, "rb").read() == b"server"
        # A missing destination is always written; stdin cannot be compared.
        self.run("cp", "--if-size-differ", "--if-source-newer", old, f"s3://{BUCKET}/newer/fresh.txt")
        assert self.exists("newer/fresh.txt")
        self.run("cp", "--if-size-differ", "-", f"s3://{BUCKET}/newer/x", input=b"x", expect=2)


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
                     "mv_failed_copy_deletes_nothing", "mv_usage", "upload_headers", "upload_acl", "copy_headers",
                     "storage_class_refused", "no_clobber", "if_size_differ_and_newer"]
            for name in order:
                if not runner.case(name, getattr(t, name)) and name == "setup":
                    break
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
