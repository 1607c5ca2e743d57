#!/usr/bin/python3
"""boto3 (Debian boto3 1.26 / botocore 1.29) against a real `strata server`.

test_boto3_modern.py runs the same cases with a current boto3 (>= 1.36: default
CRC checksums) as well.

Usage: /usr/bin/python3 test_boto3.py --strata build/strata
"""

import concurrent.futures
import datetime
import hashlib
import os
import random
import sys
import threading
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

from boto3.s3.transfer import TransferConfig  # noqa: E402

MiB = H.MiB
B = "boto3-main"


def post_form(url, fields, filename, data, content_type="application/octet-stream"):
    """A browser-style multipart/form-data POST (fields first, the file last);
    returns H.Response. No redirects are followed."""
    import requests
    r = requests.post(url, data=fields, files={"file": (filename, data, content_type)},
                      allow_redirects=False, timeout=30)
    return H.Response(r.status_code, r.reason, {k.lower(): v for k, v in r.headers.items()}, r.content)


def etag_md5(data):
    return '"' + hashlib.md5(data).hexdigest() + '"'


class Boto3Tests:
    def __init__(self, srv, work, bob_keys):
        self.srv = srv
        self.s3 = srv.client()
        self.work = work
        self.bob_keys = bob_keys

    def setup(self):
        self.s3.create_bucket(Bucket=B)

    # ---- transfers
    def transfer_multipart_50mib(self):
        src = os.path.join(self.work, "fifty.bin")
        dst = os.path.join(self.work, "fifty.out")
        H.write_random_file(src, 50 * MiB)
        cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=10)
        self.s3.upload_file(src, B, "big/fifty.bin", Config=cfg)
        head = self.s3.head_object(Bucket=B, Key="big/fifty.bin")
        assert head["ContentLength"] == 50 * MiB, head
        assert head["ETag"].endswith('-7"'), f"expected a 7-part multipart ETag, got {head['ETag']}"
        self.s3.download_file(B, "big/fifty.bin", dst, Config=cfg)
        assert H.sha256_file(src) == H.sha256_file(dst), "downloaded bytes differ from uploaded"
        os.unlink(src)
        os.unlink(dst)

    # ---- listing
    def paginate_2500(self):
        keys = [f"page/{i:05d}" for i in range(2500)]

        def put(k):
            self.s3.put_object(Bucket=B, Key=k, Body=k.encode())

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(put, keys))
        pages = list(self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=B, Prefix="page/", PaginationConfig={"PageSize": 1000}))
        counts = [len(p.get("Contents", [])) for p in pages]
        assert counts == [1000, 1000, 500], f"page sizes {counts}"
        assert [p["IsTruncated"] for p in pages] == [True, True, False], [p["IsTruncated"] for p in pages]
        assert [p["KeyCount"] for p in pages] == [1000, 1000, 500]
        got = [o["Key"] for p in pages for o in p["Contents"]]
        assert got == keys, "keys missing, duplicated or out of order across pages"
        # One page by hand: MaxKeys=1000 gives a continuation token.
        r = self.s3.list_objects_v2(Bucket=B, Prefix="page/", MaxKeys=1000)
        assert r["IsTruncated"] and r.get("NextContinuationToken"), r.get("NextContinuationToken")
        assert r["MaxKeys"] == 1000
        # ListObjects (v1) paginates with markers too.
        pages1 = list(self.s3.get_paginator("list_objects").paginate(
            Bucket=B, Prefix="page/", PaginationConfig={"PageSize": 1000}))
        got1 = [o["Key"] for p in pages1 for o in p.get("Contents", [])]
        assert len(pages1) == 3 and got1 == keys, f"v1: {len(pages1)} pages, {len(got1)} keys"

    def delimiter_listing(self):
        for k in ["d/a/1", "d/a/2", "d/b/1", "d/c", "d/x.txt", "e/1"]:
            self.s3.put_object(Bucket=B, Key=k, Body=b"x")
        r = self.s3.list_objects_v2(Bucket=B, Prefix="d/", Delimiter="/")
        cps = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
        keys = [o["Key"] for o in r.get("Contents", [])]
        assert cps == ["d/a/", "d/b/"], cps
        assert keys == ["d/c", "d/x.txt"], keys
        assert r["KeyCount"] == 4, r["KeyCount"]
        r = self.s3.list_objects_v2(Bucket=B, Delimiter="/", Prefix="")
        top = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
        for p in ["d/", "e/", "page/"]:
            assert p in top, (p, top)
        r1 = self.s3.list_objects(Bucket=B, Prefix="d/", Delimiter="/")
        assert [c["Prefix"] for c in r1.get("CommonPrefixes", [])] == ["d/a/", "d/b/"], r1
        # Paging through common prefixes one at a time.
        pages = list(self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=B, Prefix="d/", Delimiter="/", PaginationConfig={"PageSize": 1}))
        flat = [c["Prefix"] for p in pages for c in p.get("CommonPrefixes", [])] + \
               [o["Key"] for p in pages for o in p.get("Contents", [])]
        assert sorted(flat) == ["d/a/", "d/b/", "d/c", "d/x.txt"], flat

    SPECIAL_KEYS = ["sp ace/file name.txt", "\u00fc/\u00f1/\u65e5\u672c\u8a9e.txt", "plus+sign", "per%cent",
                    "amp&er=sand?q", "star*(paren)'!", "semi;colon,comma:colon@at$dollar", "a//double",
                    "tab\tkey", "new\nline", "trailing/"]

    def special_keys(self):
        """Keys that need URI encoding: SigV4 paths, and listings (boto3 asks for
        encoding-type=url and decodes the keys when the response says <EncodingType>url)."""
        bk = "boto3-keys"
        self.s3.create_bucket(Bucket=bk)
        for k in self.SPECIAL_KEYS:
            self.s3.put_object(Bucket=bk, Key=k, Body=k.encode())
            got = self.s3.get_object(Bucket=bk, Key=k)["Body"].read()
            assert got == k.encode(), (k, got)
        want = sorted(self.SPECIAL_KEYS, key=lambda k: k.encode())
        r = self.s3.list_objects_v2(Bucket=bk)
        got = [o["Key"] for o in r.get("Contents", [])]
        assert got == want, f"ListObjectsV2 (encoding-type=url) keys come back as {got}"
        got1 = [o["Key"] for o in self.s3.list_objects(Bucket=bk).get("Contents", [])]
        assert got1 == want, f"ListObjects (encoding-type=url) keys come back as {got1}"
        r = self.s3.list_objects_v2(Bucket=bk, Delimiter="/")
        cps = [c["Prefix"] for c in r.get("CommonPrefixes", [])]
        assert cps == ["a/", "sp ace/", "trailing/", "\u00fc/"], f"common prefixes {cps}"
        self.s3.copy_object(Bucket=bk, Key="copy of \u00fc", CopySource={"Bucket": bk, "Key": self.SPECIAL_KEYS[1]})
        assert self.s3.get_object(Bucket=bk, Key="copy of \u00fc")["Body"].read() == self.SPECIAL_KEYS[1].encode()
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": bk, "Key": "sp ace/file name.txt"})
        r = H.url_request(url)
        assert r.status == 200 and r.body == b"sp ace/file name.txt", r
        d = self.s3.delete_objects(Bucket=bk, Delete={"Objects": [{"Key": k} for k in self.SPECIAL_KEYS + ["copy of \u00fc"]]})
        assert not d.get("Errors"), d.get("Errors")
        assert sorted(x["Key"] for x in d.get("Deleted", [])) == sorted(self.SPECIAL_KEYS + ["copy of \u00fc"]), d
        assert self.s3.list_objects_v2(Bucket=bk)["KeyCount"] == 0
        self.s3.delete_bucket(Bucket=bk)

    def list_xml_fields(self):
        """Fixed-text fields of listings hold their S3 values."""
        self.s3.put_object(Bucket=B, Key="xmlfields/o1", Body=b"1")
        self.s3.put_object(Bucket=B, Key="xmlfields/o2", Body=os.urandom(100_000))
        r = self.s3.list_objects_v2(Bucket=B, Prefix="xmlfields/")
        assert len(r.get("Contents", [])) == 2 and all(o.get("StorageClass") == "STANDARD" for o in r["Contents"]), \
            f"ListObjectsV2 StorageClass {[o.get('StorageClass') for o in r['Contents']]}"
        r = self.s3.list_objects(Bucket=B, Prefix="xmlfields/")
        assert len(r.get("Contents", [])) == 2 and all(o.get("StorageClass") == "STANDARD" for o in r["Contents"]), \
            f"ListObjects StorageClass {[o.get('StorageClass') for o in r['Contents']]}"
        up = self.s3.create_multipart_upload(Bucket=B, Key="xmlfields/mp")["UploadId"]
        try:
            self.s3.upload_part(Bucket=B, Key="xmlfields/mp", UploadId=up, PartNumber=1, Body=b"x")
            ups = [u for u in self.s3.list_multipart_uploads(Bucket=B).get("Uploads", []) if u["UploadId"] == up]
            assert ups and ups[0].get("StorageClass") == "STANDARD", f"ListMultipartUploads {ups}"
            lp = self.s3.list_parts(Bucket=B, Key="xmlfields/mp", UploadId=up)
            assert lp.get("StorageClass") == "STANDARD", f"ListParts StorageClass {lp.get('StorageClass')!r}"
        finally:
            self.s3.abort_multipart_upload(Bucket=B, Key="xmlfields/mp", UploadId=up)

    def bucket_acl(self):
        bk = "boto3-acl"
        self.s3.create_bucket(Bucket=bk)
        acl = self.s3.get_bucket_acl(Bucket=bk)
        grants = [(g["Grantee"].get("Type"), g["Grantee"].get("URI"), g["Permission"]) for g in acl["Grants"]]
        assert grants == [("CanonicalUser", None, "FULL_CONTROL")], f"private bucket grants {grants}"
        self.s3.put_bucket_acl(Bucket=bk, ACL="public-read")
        acl = self.s3.get_bucket_acl(Bucket=bk)
        grants = [(g["Grantee"].get("Type"), g["Grantee"].get("URI"), g["Permission"]) for g in acl["Grants"]]
        assert grants == [("CanonicalUser", None, "FULL_CONTROL"),
                          ("Group", "http://acs.amazonaws.com/groups/global/AllUsers", "READ")], \
            f"public-read bucket grants {grants}"
        self.s3.delete_bucket(Bucket=bk)

    def object_edge_cases(self):
        # Empty object.
        r = self.s3.put_object(Bucket=B, Key="edge/empty", Body=b"")
        assert r["ETag"] == etag_md5(b""), r["ETag"]
        g = self.s3.get_object(Bucket=B, Key="edge/empty")
        assert g["ContentLength"] == 0 and g["Body"].read() == b""
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="edge/empty", Range="bytes=0-0")
        assert (st, code) == (416, "InvalidRange"), (st, code)
        # "a" and "a/b" are both objects.
        self.s3.put_object(Bucket=B, Key="edge/n", Body=b"1")
        self.s3.put_object(Bucket=B, Key="edge/n/b", Body=b"2")
        assert self.s3.get_object(Bucket=B, Key="edge/n")["Body"].read() == b"1"
        assert self.s3.get_object(Bucket=B, Key="edge/n/b")["Body"].read() == b"2"
        # Overwrites across the inline / file-backed boundary.
        big = os.urandom(500_000)
        for body in (big, b"small", big[::-1], b""):
            self.s3.put_object(Bucket=B, Key="edge/ow", Body=body)
            assert self.s3.get_object(Bucket=B, Key="edge/ow")["Body"].read() == body
            assert self.s3.head_object(Bucket=B, Key="edge/ow")["ContentLength"] == len(body)
        # Deleting a missing key is not an error.
        r = self.s3.delete_object(Bucket=B, Key="edge/never")
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r

    # ---- presigned URLs
    def presigned(self):
        data = os.urandom(70_000)
        self.s3.put_object(Bucket=B, Key="pre/get.bin", Body=data)
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "pre/get.bin"},
                                             ExpiresIn=300)
        r = H.url_request(url)
        assert r.status == 200 and r.body == data, r
        put_data = os.urandom(1000)
        url = self.s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": "pre/put.bin"},
                                             ExpiresIn=300)
        r = H.url_request(url, method="PUT", data=put_data)
        assert r.status == 200, r
        got = self.s3.get_object(Bucket=B, Key="pre/put.bin")["Body"].read()
        assert got == put_data, "presigned PUT stored different bytes"
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "pre/get.bin"},
                                             ExpiresIn=1)
        time.sleep(2.2)
        r = H.url_request(url)
        H.assert_s3_error(r, 403, "AccessDenied")
        # A tampered presigned URL.
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "pre/get.bin"},
                                             ExpiresIn=300)
        r = H.url_request(url.replace("pre/get.bin", "pre/put.bin"))
        H.assert_s3_error(r, 403, "SignatureDoesNotMatch")

    def presigned_post(self):
        """generate_presigned_post, then the form POSTed as a browser would (PostObject)."""
        data = os.urandom(50_000)
        post = self.s3.generate_presigned_post(
            B, "post/${filename}",
            Fields={"Content-Type": "text/plain", "success_action_status": "201",
                    "x-amz-meta-who": "boto3"},
            Conditions=[{"Content-Type": "text/plain"}, {"success_action_status": "201"},
                        {"x-amz-meta-who": "boto3"}, ["content-length-range", 1, 100_000]],
            ExpiresIn=300)
        r = post_form(post["url"], post["fields"], "hello.txt", data, "text/plain")
        assert r.status == 201, r
        root = ET.fromstring(r.body)
        got = {c.tag.rsplit("}", 1)[-1]: c.text for c in root}
        assert root.tag.endswith("PostResponse"), r.body
        assert got.get("Bucket") == B and got.get("Key") == "post/hello.txt", got
        assert got.get("ETag") == etag_md5(data), got
        o = self.s3.get_object(Bucket=B, Key="post/hello.txt")
        assert o["Body"].read() == data
        assert o["ContentType"] == "text/plain", o["ContentType"]
        assert o["Metadata"] == {"who": "boto3"}, o["Metadata"]
        # Without success_action_status: 204 No Content.
        plain = self.s3.generate_presigned_post(B, "post/plain.bin", ExpiresIn=300)
        r = post_form(plain["url"], plain["fields"], "plain.bin", b"plain")
        assert r.status == 204 and r.body == b"", r
        assert self.s3.get_object(Bucket=B, Key="post/plain.bin")["Body"].read() == b"plain"
        # Over content-length-range: EntityTooLarge, nothing stored.
        r = post_form(post["url"], post["fields"], "huge.txt", os.urandom(100_001), "text/plain")
        H.assert_s3_error(r, 400, "EntityTooLarge")
        st, _ = H.client_error_code(self.s3.head_object, Bucket=B, Key="post/huge.txt")
        assert st == 404, st
        # A field the policy does not allow: AccessDenied.
        fields = dict(post["fields"], **{"Content-Type": "text/html"})
        r = post_form(post["url"], fields, "evil.html", b"<html>", "text/html")
        err = H.assert_s3_error(r, 403, "AccessDenied")
        assert "Invalid according to Policy" in err.get("Message", ""), err
        # A tampered signature.
        fields = dict(plain["fields"])
        fields["x-amz-signature"] = ("0" if fields["x-amz-signature"][0] != "0" else "1") + \
            fields["x-amz-signature"][1:]
        r = post_form(plain["url"], fields, "plain.bin", b"tampered")
        H.assert_s3_error(r, 403, "SignatureDoesNotMatch")
        assert self.s3.get_object(Bucket=B, Key="post/plain.bin")["Body"].read() == b"plain"
        # An expired policy.
        short = self.s3.generate_presigned_post(B, "post/late.bin", ExpiresIn=1)
        time.sleep(2.2)
        r = post_form(short["url"], short["fields"], "late.bin", b"late")
        err = H.assert_s3_error(r, 403, "AccessDenied")
        assert "expired" in err.get("Message", "").lower(), err

    def presigned_post_streams(self):
        """A 96 MiB form upload: the server's resident memory grows far less than
        the file (the file part is streamed to disk, not buffered)."""
        size = 96 * MiB
        data = os.urandom(1 * MiB) * 96
        post = self.s3.generate_presigned_post(B, "post/large.bin", ExpiresIn=300)

        def rss_kib():
            with open(f"/proc/{self.srv.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
            return 0

        base = rss_kib()
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib())
                time.sleep(0.01)

        th = threading.Thread(target=sample)
        th.start()
        try:
            r = post_form(post["url"], post["fields"], "large.bin", data)
        finally:
            done.set()
            th.join()
        assert r.status == 204, r
        grew_mib = (peak[0] - base) / 1024
        print(f"  server RSS {base // 1024} MiB before, peak +{grew_mib:.0f} MiB during a 96 MiB POST", flush=True)
        assert grew_mib < 48, f"server RSS grew {grew_mib:.0f} MiB during a 96 MiB POST: the file was buffered"
        h = self.s3.head_object(Bucket=B, Key="post/large.bin")
        assert h["ContentLength"] == size and h["ETag"] == etag_md5(data), h
        self.s3.delete_object(Bucket=B, Key="post/large.bin")

    def post_bad_input(self):
        """Malformed forms get clear errors, and the connection keeps serving."""
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        try:
            def post(body, ctype):
                c.request("POST", f"/{B}", body=body, headers={"Content-Type": ctype})
                r = c.getresponse()
                return H.Response(r.status, r.reason, {k.lower(): v for k, v in r.getheaders()}, r.read())
            H.assert_s3_error(post(b"key=a&file=b", "application/x-www-form-urlencoded"), 412, "PreconditionFailed")
            bnd = "xYzBoundary"
            # A signed form whose file part never ends (authorized first, then read).
            fields = self.s3.generate_presigned_post(B, "post/trunc", ExpiresIn=300)["fields"]
            trunc = "".join(f"--{bnd}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                            for k, v in fields.items())
            trunc = (trunc + f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"
                     "no closing boundary").encode()
            H.assert_s3_error(post(trunc, f"multipart/form-data; boundary={bnd}"), 400, "MalformedPOSTRequest")
            nofile = f"--{bnd}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--{bnd}--\r\n".encode()
            H.assert_s3_error(post(nofile, f"multipart/form-data; boundary={bnd}"), 400, "InvalidArgument")
            # An unsigned form with a file: anonymous, refused; 1 MiB of file read and dropped.
            anon = (f"--{bnd}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nanon\r\n"
                    f"--{bnd}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n").encode() + \
                os.urandom(MiB) + f"\r\n--{bnd}--\r\n".encode()
            H.assert_s3_error(post(anon, f"multipart/form-data; boundary={bnd}"), 403, "AccessDenied")
            # Same connection: still served.
            c.request("GET", "/health-check-not-a-bucket-name-x")
            r = c.getresponse()
            r.read()
            assert r.status in (403, 404), r.status
        finally:
            c.close()
        for k in ("anon", "post/trunc"):
            st, _ = H.client_error_code(self.s3.head_object, Bucket=B, Key=k)
            assert st == 404, (k, st)

    def sse_c(self):
        """SSE-C: the key is needed on every read (400 without it), never stored."""
        key = os.urandom(32)
        data = os.urandom(300_000)
        self.s3.put_object(Bucket=B, Key="ssec/obj", Body=data, SSECustomerAlgorithm="AES256",
                           SSECustomerKey=key)
        o = self.s3.get_object(Bucket=B, Key="ssec/obj", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        assert o["Body"].read() == data
        assert o.get("SSECustomerAlgorithm") == "AES256", o.get("SSECustomerAlgorithm")
        r = self.s3.get_object(Bucket=B, Key="ssec/obj", SSECustomerAlgorithm="AES256", SSECustomerKey=key,
                               Range="bytes=1000-1999")
        assert r["Body"].read() == data[1000:2000]
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="ssec/obj")
        assert st == 400, (st, code)
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="ssec/obj",
                                       SSECustomerAlgorithm="AES256", SSECustomerKey=os.urandom(32))
        assert st == 403 or st == 400, (st, code)
        h = self.s3.head_object(Bucket=B, Key="ssec/obj", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        assert h["ContentLength"] == len(data)

    # ---- metadata
    def metadata_roundtrip(self):
        self.s3.put_object(Bucket=B, Key="meta/obj", Body=b"hello",
                           Metadata={"color": "blue", "multi-word": "Some Value 1"},
                           ContentType="text/plain; charset=utf-8",
                           ContentDisposition='attachment; filename="a.txt"',
                           CacheControl="max-age=60")
        for r in (self.s3.head_object(Bucket=B, Key="meta/obj"), self.s3.get_object(Bucket=B, Key="meta/obj")):
            assert r["Metadata"] == {"color": "blue", "multi-word": "Some Value 1"}, r["Metadata"]
            assert r["ContentType"] == "text/plain; charset=utf-8", r["ContentType"]
            assert r["ContentDisposition"] == 'attachment; filename="a.txt"', r["ContentDisposition"]
            assert r["CacheControl"] == "max-age=60", r["CacheControl"]
            assert r["ContentLength"] == 5
            assert r["ETag"] == etag_md5(b"hello"), r["ETag"]

    # ---- ranges
    def range_gets(self):
        data = bytes(range(256)) * 4  # 1024 bytes
        self.s3.put_object(Bucket=B, Key="range/obj", Body=data)
        r = self.s3.get_object(Bucket=B, Key="range/obj", Range="bytes=100-")
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert r["Body"].read() == data[100:] and r["ContentRange"] == "bytes 100-1023/1024", r["ContentRange"]
        r = self.s3.get_object(Bucket=B, Key="range/obj", Range="bytes=-10")
        assert r["Body"].read() == data[-10:] and r["ContentRange"] == "bytes 1014-1023/1024"
        r = self.s3.get_object(Bucket=B, Key="range/obj", Range="bytes=0-0")
        assert r["Body"].read() == data[:1] and r["ContentLength"] == 1 and r["ContentRange"] == "bytes 0-0/1024"
        r = self.s3.get_object(Bucket=B, Key="range/obj", Range="bytes=1000-5000")
        assert r["Body"].read() == data[1000:], "range past the end is not clamped"
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="range/obj", Range="bytes=1024-")
        assert (st, code) == (416, "InvalidRange"), (st, code)
        # File-backed object (larger than the inline threshold).
        big = os.urandom(300_000)
        self.s3.put_object(Bucket=B, Key="range/big", Body=big)
        r = self.s3.get_object(Bucket=B, Key="range/big", Range="bytes=123456-234567")
        assert r["Body"].read() == big[123456:234568]

    # ---- conditionals
    def conditional_get(self):
        put = self.s3.put_object(Bucket=B, Key="cond/obj", Body=b"conditional")
        etag = put["ETag"]
        assert etag == etag_md5(b"conditional"), etag
        assert H.client_error_code(self.s3.get_object, Bucket=B, Key="cond/obj", IfNoneMatch=etag)[0] == 304
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="cond/obj",
                                       IfMatch='"00000000000000000000000000000000"')
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        assert self.s3.get_object(Bucket=B, Key="cond/obj", IfMatch=etag)["Body"].read() == b"conditional"
        assert self.s3.get_object(Bucket=B, Key="cond/obj", IfNoneMatch='"abc"')["Body"].read() == b"conditional"
        lm = self.s3.head_object(Bucket=B, Key="cond/obj")["LastModified"]
        future = lm + datetime.timedelta(hours=1)
        past = lm - datetime.timedelta(hours=1)
        assert H.client_error_code(self.s3.get_object, Bucket=B, Key="cond/obj", IfModifiedSince=future)[0] == 304
        assert self.s3.get_object(Bucket=B, Key="cond/obj", IfModifiedSince=past)["Body"].read() == b"conditional"
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="cond/obj", IfUnmodifiedSince=past)
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        assert H.client_error_code(self.s3.head_object, Bucket=B, Key="cond/obj", IfNoneMatch=etag)[0] == 304

    def conditional_put(self):
        c = self.srv.client()

        def add_if_none_match(request, **kw):
            request.headers["If-None-Match"] = "*"

        c.meta.events.register("before-sign.s3.PutObject", add_if_none_match)
        c.put_object(Bucket=B, Key="cond/once", Body=b"first")
        st, code = H.client_error_code(c.put_object, Bucket=B, Key="cond/once", Body=b"second")
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        assert self.s3.get_object(Bucket=B, Key="cond/once")["Body"].read() == b"first", "second PUT overwrote"

    def conditional_put_if_match_and_complete(self):
        """If-Match on PUT and If-None-Match/If-Match on CompleteMultipartUpload (raw signed requests)."""
        self.s3.put_object(Bucket=B, Key="cond/m", Body=b"v1")
        etag = self.s3.head_object(Bucket=B, Key="cond/m")["ETag"]
        r = H.signed_request(self.srv, "PUT", f"/{B}/cond/m", headers={"If-Match": '"0123456789abcdef0123456789abcdef"'}, body=b"v2")
        H.assert_s3_error(r, 412, "PreconditionFailed")
        r = H.signed_request(self.srv, "PUT", f"/{B}/cond/m", headers={"If-Match": etag}, body=b"v2")
        assert r.status == 200, r
        assert self.s3.get_object(Bucket=B, Key="cond/m")["Body"].read() == b"v2"
        # Complete with If-None-Match: * over an existing key -> 412, object unchanged.
        up = self.s3.create_multipart_upload(Bucket=B, Key="cond/m")["UploadId"]
        part = self.s3.upload_part(Bucket=B, Key="cond/m", UploadId=up, PartNumber=1, Body=b"mp")
        body = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{part['ETag']}</ETag>"
                "</Part></CompleteMultipartUpload>").encode()
        r = H.signed_request(self.srv, "POST", f"/{B}/cond/m", query=f"uploadId={up}",
                             headers={"If-None-Match": "*"}, body=body)
        H.assert_s3_error(r, 412, "PreconditionFailed")
        assert self.s3.get_object(Bucket=B, Key="cond/m")["Body"].read() == b"v2"
        # ... and with the current ETag as If-Match it commits.
        cur = self.s3.head_object(Bucket=B, Key="cond/m")["ETag"]
        r = H.signed_request(self.srv, "POST", f"/{B}/cond/m", query=f"uploadId={up}",
                             headers={"If-Match": cur}, body=body)
        assert r.status == 200, r
        assert self.s3.get_object(Bucket=B, Key="cond/m")["Body"].read() == b"mp"

    def conditional_put_conflict_409(self):
        """S3: a conditional write whose key is written (then deleted) while its body is
        still uploading gets 409 ConditionalRequestConflict; the other writer's outcome stands."""
        import http.client
        import time as _t
        body = b"x" * 200000
        hdrs = H.sign_headers(self.srv, "PUT", f"/{B}/cond/race", headers={"If-None-Match": "*"},
                              payload_hash="UNSIGNED-PAYLOAD")
        hdrs["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        conn.putrequest("PUT", f"/{B}/cond/race", skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        conn.send(body[:1000])
        _t.sleep(0.3)  # the conditional write has started; another writer races it
        self.s3.put_object(Bucket=B, Key="cond/race", Body=b"winner")
        self.s3.delete_object(Bucket=B, Key="cond/race")
        conn.send(body[1000:])
        r = conn.getresponse()
        data = r.read()
        conn.close()
        resp = H.Response(r.status, r.reason, {k.lower(): v for k, v in r.getheaders()}, data)
        H.assert_s3_error(resp, 409, "ConditionalRequestConflict")
        st, code = H.client_error_code(self.s3.head_object, Bucket=B, Key="cond/race")
        assert st == 404, (st, code)

    # ---- copy
    def copy_object(self):
        self.s3.put_object(Bucket=B, Key="copy/src", Body=b"copy me", Metadata={"k": "v"},
                           ContentType="application/x-src")
        r = self.s3.copy_object(Bucket=B, Key="copy/dst1", CopySource={"Bucket": B, "Key": "copy/src"})
        assert r["CopyObjectResult"]["ETag"] == etag_md5(b"copy me"), r
        h = self.s3.head_object(Bucket=B, Key="copy/dst1")
        assert h["Metadata"] == {"k": "v"} and h["ContentType"] == "application/x-src", h
        r = self.s3.copy_object(Bucket=B, Key="copy/dst2", CopySource=f"{B}/copy/src",
                                MetadataDirective="REPLACE", Metadata={"n": "w"}, ContentType="text/x-new")
        h = self.s3.head_object(Bucket=B, Key="copy/dst2")
        assert h["Metadata"] == {"n": "w"} and h["ContentType"] == "text/x-new", h
        assert self.s3.get_object(Bucket=B, Key="copy/dst2")["Body"].read() == b"copy me"
        # Copy onto itself without REPLACE is invalid in S3.
        st, code = H.client_error_code(self.s3.copy_object, Bucket=B, Key="copy/src",
                                       CopySource={"Bucket": B, "Key": "copy/src"})
        assert (st, code) == (400, "InvalidRequest"), (st, code)
        # A big (file-backed) copy.
        big = os.urandom(200_000)
        self.s3.put_object(Bucket=B, Key="copy/bigsrc", Body=big)
        self.s3.copy_object(Bucket=B, Key="copy/bigdst", CopySource={"Bucket": B, "Key": "copy/bigsrc"})
        self.s3.delete_object(Bucket=B, Key="copy/bigsrc")
        assert self.s3.get_object(Bucket=B, Key="copy/bigdst")["Body"].read() == big, "copy shares the deleted source"

    # ---- tagging
    def tagging(self):
        self.s3.put_object(Bucket=B, Key="tag/obj", Body=b"t", Tagging="a=1&b=two")
        g = self.s3.get_object(Bucket=B, Key="tag/obj")
        assert g.get("TagCount") == 2, g.get("TagCount")
        tags = {t["Key"]: t["Value"] for t in self.s3.get_object_tagging(Bucket=B, Key="tag/obj")["TagSet"]}
        assert tags == {"a": "1", "b": "two"}, tags
        self.s3.put_object_tagging(Bucket=B, Key="tag/obj", Tagging={"TagSet": [{"Key": "x", "Value": "y z"}]})
        tags = {t["Key"]: t["Value"] for t in self.s3.get_object_tagging(Bucket=B, Key="tag/obj")["TagSet"]}
        assert tags == {"x": "y z"}, tags
        self.s3.delete_object_tagging(Bucket=B, Key="tag/obj")
        assert self.s3.get_object_tagging(Bucket=B, Key="tag/obj")["TagSet"] == []
        assert self.s3.get_object(Bucket=B, Key="tag/obj")["Body"].read() == b"t"

    # ---- delete objects
    def delete_objects(self):
        keys = [f"del/{i}" for i in range(10)]
        for k in keys:
            self.s3.put_object(Bucket=B, Key=k, Body=b"d")
        r = self.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys[:5]], "Quiet": True})
        assert not r.get("Deleted") and not r.get("Errors"), r
        r = self.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys[5:] + ["del/none"]]})
        assert sorted(d["Key"] for d in r.get("Deleted", [])) == sorted(keys[5:] + ["del/none"]), r
        assert not r.get("Errors"), r
        left = self.s3.list_objects_v2(Bucket=B, Prefix="del/").get("KeyCount")
        assert left == 0, f"{left} objects left after DeleteObjects"

    # ---- multipart
    def multipart(self):
        p1, p2 = os.urandom(5 * MiB), os.urandom(1 * MiB + 17)
        # List / abort.
        up = self.s3.create_multipart_upload(Bucket=B, Key="mp/aborted")["UploadId"]
        e1 = self.s3.upload_part(Bucket=B, Key="mp/aborted", UploadId=up, PartNumber=1, Body=p1)["ETag"]
        e2 = self.s3.upload_part(Bucket=B, Key="mp/aborted", UploadId=up, PartNumber=2, Body=p2)["ETag"]
        assert e1 == etag_md5(p1) and e2 == etag_md5(p2), (e1, e2)
        parts = self.s3.list_parts(Bucket=B, Key="mp/aborted", UploadId=up)["Parts"]
        assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts] == [(1, e1, len(p1)), (2, e2, len(p2))], parts
        ups = self.s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
        assert any(u["UploadId"] == up and u["Key"] == "mp/aborted" for u in ups), ups
        self.s3.abort_multipart_upload(Bucket=B, Key="mp/aborted", UploadId=up)
        ups = self.s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
        assert not any(u["UploadId"] == up for u in ups), ups
        st, code = H.client_error_code(self.s3.list_parts, Bucket=B, Key="mp/aborted", UploadId=up)
        assert (st, code) == (404, "NoSuchUpload"), (st, code)
        st, code = H.client_error_code(self.s3.head_object, Bucket=B, Key="mp/aborted")
        assert st == 404, st
        # Wrong ETag -> InvalidPart.
        up = self.s3.create_multipart_upload(Bucket=B, Key="mp/obj")["UploadId"]
        e1 = self.s3.upload_part(Bucket=B, Key="mp/obj", UploadId=up, PartNumber=1, Body=p1)["ETag"]
        e2 = self.s3.upload_part(Bucket=B, Key="mp/obj", UploadId=up, PartNumber=2, Body=p2)["ETag"]
        st, code = H.client_error_code(
            self.s3.complete_multipart_upload, Bucket=B, Key="mp/obj", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                       {"PartNumber": 2, "ETag": '"0123456789abcdef0123456789abcdef"'}]})
        assert (st, code) == (400, "InvalidPart"), (st, code)
        r = self.s3.complete_multipart_upload(
            Bucket=B, Key="mp/obj", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
        want = '"' + hashlib.md5(bytes.fromhex(e1.strip('"')) + bytes.fromhex(e2.strip('"'))).hexdigest() + '-2"'
        assert r["ETag"] == want, (r["ETag"], want)
        assert self.s3.get_object(Bucket=B, Key="mp/obj")["Body"].read() == p1 + p2
        # GetObject PartNumber.
        g = self.s3.get_object(Bucket=B, Key="mp/obj", PartNumber=1)
        assert g["Body"].read() == p1 and g.get("PartsCount") == 2, g.get("PartsCount")
        assert g["ContentRange"] == f"bytes 0-{len(p1) - 1}/{len(p1) + len(p2)}", g["ContentRange"]
        g = self.s3.get_object(Bucket=B, Key="mp/obj", PartNumber=2)
        assert g["Body"].read() == p2
        h = self.s3.head_object(Bucket=B, Key="mp/obj", PartNumber=2)
        assert h["ContentLength"] == len(p2), h["ContentLength"]
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="mp/obj", PartNumber=3)
        assert (st, code) == (400, "InvalidPart"), (st, code)  # S3: a part past the last
        # Re-uploading a part replaces it; order and gaps.
        up = self.s3.create_multipart_upload(Bucket=B, Key="mp/replaced")["UploadId"]
        a1 = self.s3.upload_part(Bucket=B, Key="mp/replaced", UploadId=up, PartNumber=1, Body=p1)["ETag"]
        b1 = self.s3.upload_part(Bucket=B, Key="mp/replaced", UploadId=up, PartNumber=1, Body=p1[::-1])["ETag"]
        x2 = self.s3.upload_part(Bucket=B, Key="mp/replaced", UploadId=up, PartNumber=2, Body=b"two")["ETag"]
        x3 = self.s3.upload_part(Bucket=B, Key="mp/replaced", UploadId=up, PartNumber=3, Body=b"three")["ETag"]
        lp = self.s3.list_parts(Bucket=B, Key="mp/replaced", UploadId=up, MaxParts=2)
        assert [p["PartNumber"] for p in lp["Parts"]] == [1, 2] and lp["IsTruncated"], lp
        assert lp["Parts"][0]["ETag"] == b1, "ListParts shows the replaced part's ETag"
        lp2 = self.s3.list_parts(Bucket=B, Key="mp/replaced", UploadId=up,
                                 PartNumberMarker=int(lp["NextPartNumberMarker"]))
        assert [p["PartNumber"] for p in lp2["Parts"]] == [3] and not lp2["IsTruncated"], lp2
        st, code = H.client_error_code(
            self.s3.complete_multipart_upload, Bucket=B, Key="mp/replaced", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": a1}, {"PartNumber": 3, "ETag": x3}]})
        assert (st, code) == (400, "InvalidPart"), ("the replaced part's ETag was accepted", st, code)
        st, code = H.client_error_code(
            self.s3.complete_multipart_upload, Bucket=B, Key="mp/replaced", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 3, "ETag": x3}, {"PartNumber": 1, "ETag": b1}]})
        assert (st, code) == (400, "InvalidPartOrder"), (st, code)
        del x2  # part 2 is left out: a gap is allowed
        self.s3.complete_multipart_upload(
            Bucket=B, Key="mp/replaced", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": b1}, {"PartNumber": 3, "ETag": x3}]})
        assert self.s3.get_object(Bucket=B, Key="mp/replaced")["Body"].read() == p1[::-1] + b"three"
        # ListMultipartUploads pages.
        ups = [self.s3.create_multipart_upload(Bucket=B, Key=f"mp/many/{i}")["UploadId"] for i in range(5)]
        pages = list(self.s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=B, Prefix="mp/many/", PaginationConfig={"PageSize": 2}))
        got = [[u["Key"] for u in pg.get("Uploads", [])] for pg in pages]
        assert got == [["mp/many/0", "mp/many/1"], ["mp/many/2", "mp/many/3"], ["mp/many/4"]], got
        for i, u in enumerate(ups):
            self.s3.abort_multipart_upload(Bucket=B, Key=f"mp/many/{i}", UploadId=u)
        # A small part that is not the last -> EntityTooSmall.
        up = self.s3.create_multipart_upload(Bucket=B, Key="mp/small")["UploadId"]
        s1 = self.s3.upload_part(Bucket=B, Key="mp/small", UploadId=up, PartNumber=1, Body=b"a" * MiB)["ETag"]
        s2 = self.s3.upload_part(Bucket=B, Key="mp/small", UploadId=up, PartNumber=2, Body=b"b" * MiB)["ETag"]
        st, code = H.client_error_code(
            self.s3.complete_multipart_upload, Bucket=B, Key="mp/small", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": s1}, {"PartNumber": 2, "ETag": s2}]})
        assert (st, code) == (400, "EntityTooSmall"), (st, code)
        self.s3.abort_multipart_upload(Bucket=B, Key="mp/small", UploadId=up)

    def concurrent_put_etags(self):
        # Every PUT body's MD5 goes through the server's batched multi-stream MD5:
        # many bodies at once, of lengths that end mid-block, must each get its
        # own ETag (a lane mix-up would hand one body another's digest).
        rng = random.Random(5)
        sizes = [MiB + 7, 4 * MiB, 3 * MiB + 4095, 2 * MiB + 64, 1500 * 1024 + 1, 5 * MiB - 3]
        jobs = []
        for i in range(16):
            n = sizes[i % len(sizes)] + rng.randrange(0, 200)
            jobs.append((f"etag/{i}", rng.randbytes(n)))
        errors = []

        def put(job):
            key, body = job
            c = self.srv.client()
            got = c.put_object(Bucket=B, Key=key, Body=body)["ETag"]
            if got != etag_md5(body):
                errors.append((key, len(body), got, etag_md5(body)))

        def part(i):
            body = rng_parts[i]
            got = self.srv.client().upload_part(Bucket=B, Key="etag/mp", UploadId=up, PartNumber=i + 1,
                                                 Body=body)["ETag"]
            if got != etag_md5(body):
                errors.append(("part", i + 1, got, etag_md5(body)))
            return got

        with concurrent.futures.ThreadPoolExecutor(12) as ex:
            list(ex.map(put, jobs))
        assert not errors, errors
        for key, body in jobs[:3]:
            assert self.s3.get_object(Bucket=B, Key=key)["Body"].read() == body, key
        # Parts of one multipart upload, uploaded concurrently.
        rng_parts = [rng.randbytes(5 * MiB + i * 4099) for i in range(4)]
        up = self.s3.create_multipart_upload(Bucket=B, Key="etag/mp")["UploadId"]
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            etags = list(ex.map(part, range(4)))
        assert not errors, errors
        r = self.s3.complete_multipart_upload(
            Bucket=B, Key="etag/mp", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
        want = '"' + hashlib.md5(b"".join(bytes.fromhex(e.strip('"')) for e in etags)).hexdigest() + '-4"'
        assert r["ETag"] == want, (r["ETag"], want)

    def concurrent_overwrite_reads(self):
        """Concurrent PUTs of one key never expose a torn or mixed object to readers."""
        key = "hot/key"
        bodies = [bytes([i]) * (200_000 + i * 1000) for i in range(6)] + \
                 [bytes([100 + i]) * (1000 + i) for i in range(6)]
        self.s3.put_object(Bucket=B, Key=key, Body=bodies[0])
        stop = threading.Event()
        bad, reads, errors = [], [0], []

        def writer(i):
            c = self.srv.client()
            try:
                for j in range(12):
                    c.put_object(Bucket=B, Key=key, Body=bodies[(i * 7 + j) % len(bodies)])
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        def reader():
            c = self.srv.client()
            while not stop.is_set():
                try:
                    g = c.get_object(Bucket=B, Key=key)
                    d = g["Body"].read()
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))
                    continue
                reads[0] += 1
                if (g["ETag"].strip('"') != hashlib.md5(d).hexdigest() or len(d) != g["ContentLength"]
                        or d not in bodies):
                    bad.append((g["ETag"], len(d), d[:1], d[-1:]))

        ws = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        rs = [threading.Thread(target=reader) for _ in range(3)]
        for t in ws + rs:
            t.start()
        for t in ws:
            t.join(120)
        stop.set()
        for t in rs:
            t.join(60)
        assert not errors, errors[:3]
        assert not bad, f"{len(bad)} torn reads of {reads[0]}: {bad[:3]}"
        assert reads[0] > 0
        final = self.s3.get_object(Bucket=B, Key=key)["Body"].read()
        assert final in bodies

    # ---- checksums
    def checksums(self):
        data = os.urandom(100_000)
        small = b"small checksum body"
        cases = [("CRC32", "ChecksumCRC32", H.crc32_b64), ("SHA256", "ChecksumSHA256", H.sha256_b64)]
        from botocore.compat import HAS_CRT
        if HAS_CRT:  # current botocore computes CRC32C only with awscrt
            cases.append(("CRC32C", "ChecksumCRC32C", H.crc32c_b64))
        else:
            print("  (no awscrt: CRC32C left out here; the Debian boto3 run covers it)", flush=True)
        for algo, field, fn in cases:
            for name, body in (("big", data), ("small", small)):
                key = f"ck/{algo}/{name}"
                want = fn(body)
                r = self.s3.put_object(Bucket=B, Key=key, Body=body, ChecksumAlgorithm=algo)
                assert r.get(field) == want, f"PUT {algo}: {r.get(field)} != {want}"
                g = self.s3.get_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
                got = g["Body"].read()  # botocore validates the checksum while reading
                assert got == body
                assert g.get(field) == want, f"GET {algo}: {g.get(field)} != {want}"
                h = self.s3.head_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
                assert h.get(field) == want, f"HEAD {algo}: {h.get(field)} != {want}"
        # Without ChecksumMode the checksum is not returned. (boto3 >= 1.36 asks
        # for it by default; "when_required" makes it ask only when told.)
        try:
            plain = self.srv.client(response_checksum_validation="when_required")
        except TypeError:  # botocore < 1.36 has no such option and never asks
            plain = self.s3
        g = plain.get_object(Bucket=B, Key="ck/CRC32/small")
        g["Body"].read()
        assert "ChecksumCRC32" not in g, "checksum returned without x-amz-checksum-mode"

    # ---- buckets
    def bucket_rules(self):
        for name in ["UPPER", "a", "ab..c", "192.168.1.1"]:
            st, code = H.client_error_code(self.s3.create_bucket, Bucket=name)
            assert (st, code) == (400, "InvalidBucketName"), (name, st, code)
        self.s3.create_bucket(Bucket="boto3-full")
        self.s3.put_object(Bucket="boto3-full", Key="x", Body=b"x")
        st, code = H.client_error_code(self.s3.delete_bucket, Bucket="boto3-full")
        assert (st, code) == (409, "BucketNotEmpty"), (st, code)
        # us-east-1 (the harness's region): re-creating your own bucket answers 200
        # and changes nothing (AWS's legacy behaviour there).
        self.s3.create_bucket(Bucket="boto3-full")
        assert self.s3.get_object(Bucket="boto3-full", Key="x")["Body"].read() == b"x"
        self.s3.delete_object(Bucket="boto3-full", Key="x")
        self.s3.delete_bucket(Bucket="boto3-full")
        st, code = H.client_error_code(self.s3.head_bucket, Bucket="boto3-full")
        assert st == 404, st
        st, code = H.client_error_code(self.s3.get_object, Bucket="boto3-none", Key="k")
        assert (st, code) == (404, "NoSuchBucket"), (st, code)
        st, code = H.client_error_code(self.s3.get_object, Bucket=B, Key="no/such/key")
        assert (st, code) == (404, "NoSuchKey"), (st, code)
        for op in (lambda: self.s3.put_object(Bucket="boto3-none", Key="k", Body=b"x"),
                   lambda: self.s3.create_multipart_upload(Bucket="boto3-none", Key="k"),
                   lambda: self.s3.delete_object(Bucket="boto3-none", Key="k")):
            st, code = H.client_error_code(op)
            assert (st, code) == (404, "NoSuchBucket"), (st, code)

    # ---- auth
    def auth_errors(self):
        bad = self.srv.client(secret_key="wrong-secret-key-000000000000", retries=1)
        st, code = H.client_error_code(bad.list_buckets)
        assert (st, code) == (403, "SignatureDoesNotMatch"), (st, code)
        st, code = H.client_error_code(bad.put_object, Bucket=B, Key="auth/x", Body=os.urandom(200_000))
        assert (st, code) == (403, "SignatureDoesNotMatch"), (st, code)
        unknown = self.srv.client(access_key="NOSUCHACCESSKEY", retries=1)
        st, code = H.client_error_code(unknown.list_buckets)
        assert (st, code) == (403, "InvalidAccessKeyId"), (st, code)
        st, code = H.client_error_code(self.s3.head_object, Bucket=B, Key="auth/x")
        assert st == 404, "a PUT with a bad signature created the object"

    def anonymous_and_acl(self):
        pb = "boto3-public"
        self.s3.create_bucket(Bucket=pb)
        self.s3.put_object(Bucket=pb, Key="obj", Body=b"public bytes")
        anon = self.srv.client(unsigned=True, retries=1)
        st, code = H.client_error_code(anon.get_object, Bucket=pb, Key="obj")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(anon.list_buckets)
        assert (st, code) == (403, "AccessDenied"), (st, code)
        self.s3.put_bucket_acl(Bucket=pb, ACL="public-read")
        assert anon.get_object(Bucket=pb, Key="obj")["Body"].read() == b"public bytes"
        keys = [o["Key"] for o in anon.list_objects_v2(Bucket=pb).get("Contents", [])]
        assert keys == ["obj"], keys
        st, code = H.client_error_code(anon.put_object, Bucket=pb, Key="anon", Body=b"x")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(anon.delete_object, Bucket=pb, Key="obj")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        # Other buckets stay private.
        st, code = H.client_error_code(anon.get_object, Bucket=B, Key="meta/obj")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        self.s3.put_bucket_acl(Bucket=pb, ACL="private")
        st, code = H.client_error_code(anon.get_object, Bucket=pb, Key="obj")
        assert (st, code) == (403, "AccessDenied"), ("still public after ACL=private", st, code)

    def second_user(self):
        ak, sk = self.bob_keys
        bob = self.srv.client(access_key=ak, secret_key=sk, retries=1)
        st, code = H.client_error_code(bob.get_object, Bucket=B, Key="meta/obj")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(bob.list_objects_v2, Bucket=B)
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(bob.put_object, Bucket=B, Key="bob-was-here", Body=b"x")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(bob.delete_object, Bucket=B, Key="meta/obj")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(bob.delete_bucket, Bucket=B)
        assert (st, code) == (403, "AccessDenied"), (st, code)
        bob.create_bucket(Bucket="bob-bucket")
        bob.put_object(Bucket="bob-bucket", Key="mine", Body=b"bob data")
        assert bob.get_object(Bucket="bob-bucket", Key="mine")["Body"].read() == b"bob data"
        names = [b["Name"] for b in bob.list_buckets()["Buckets"]]
        assert names == ["bob-bucket"], f"bob sees buckets {names}"
        assert self.s3.head_object(Bucket=B, Key="meta/obj")["ContentLength"] == 5
        st, code = H.client_error_code(bob.create_bucket, Bucket=B)
        assert (st, code) == (409, "BucketAlreadyExists"), (st, code)

    # ---- Strata extensions over raw signed requests
    def rename(self):
        data = os.urandom(100_000)
        self.s3.put_object(Bucket=B, Key="ren/src", Body=data, Metadata={"m": "1"})
        r = H.signed_request(self.srv, "PUT", f"/{B}/ren/dst", "renameObject",
                             headers={"x-amz-rename-source": f"/{B}/ren/src"})
        assert r.status == 200, r
        assert self.s3.get_object(Bucket=B, Key="ren/dst")["Body"].read() == data
        st, _ = H.client_error_code(self.s3.head_object, Bucket=B, Key="ren/src")
        assert st == 404, "source still exists after rename"
        # Renaming a missing source fails and creates nothing.
        r = H.signed_request(self.srv, "PUT", f"/{B}/ren/dst2", "renameObject",
                             headers={"x-amz-rename-source": f"/{B}/ren/src"})
        H.assert_s3_error(r, 404, "NoSuchKey")
        st, _ = H.client_error_code(self.s3.head_object, Bucket=B, Key="ren/dst2")
        assert st == 404

    def append(self):
        self.s3.put_object(Bucket=B, Key="app/obj", Body=b"hello ")
        r = H.signed_request(self.srv, "PUT", f"/{B}/app/obj", "",
                             headers={"x-amz-write-offset-bytes": "6"}, body=b"world")
        assert r.status == 200, r
        assert self.s3.get_object(Bucket=B, Key="app/obj")["Body"].read() == b"hello world"
        r = H.signed_request(self.srv, "PUT", f"/{B}/app/obj", "",
                             headers={"x-amz-write-offset-bytes": "3"}, body=b"XX")
        H.assert_s3_error(r, 400, "InvalidWriteOffset")
        assert self.s3.get_object(Bucket=B, Key="app/obj")["Body"].read() == b"hello world"
        more = os.urandom(100_000)  # grows past the inline threshold
        r = H.signed_request(self.srv, "PUT", f"/{B}/app/obj", "",
                             headers={"x-amz-write-offset-bytes": "11"}, body=more)
        assert r.status == 200, r
        got = self.s3.get_object(Bucket=B, Key="app/obj")["Body"].read()
        assert got == b"hello world" + more, f"after 2nd append: {len(got)} bytes"
        assert self.s3.head_object(Bucket=B, Key="app/obj")["ContentLength"] == 11 + len(more)

    def virtual_host(self):
        self.s3.put_object(Bucket=B, Key="vh/obj", Body=b"virtual host")
        host = f"{B}.localhost:{self.srv.port}"
        r = H.signed_request(self.srv, "GET", "/vh/obj", host=host)
        assert r.status == 200 and r.body == b"virtual host", r
        r = H.signed_request(self.srv, "GET", "/", "list-type=2&prefix=vh%2F", host=host)
        assert r.status == 200, r
        keys = [e.text for e in ET.fromstring(r.body).iter() if e.tag.endswith("}Key") or e.tag == "Key"]
        assert keys == ["vh/obj"], keys
        r = H.signed_request(self.srv, "PUT", "/vh/put", host=host, body=b"via vhost")
        assert r.status == 200, r
        assert self.s3.get_object(Bucket=B, Key="vh/put")["Body"].read() == b"via vhost"


# In order: later cases use buckets and users the earlier ones made.
CASES = ["transfer_multipart_50mib",
         "paginate_2500",
         "delimiter_listing",
         "special_keys",
         "list_xml_fields",
         "bucket_acl",
         "object_edge_cases",
         "presigned",
         "presigned_post",
         "presigned_post_streams",
         "post_bad_input",
         "metadata_roundtrip",
         "range_gets",
         "conditional_get",
         "conditional_put",
         "conditional_put_if_match_and_complete",
         "conditional_put_conflict_409",
         "copy_object",
         "tagging",
         "delete_objects",
         "multipart",
         "concurrent_put_etags",
         "concurrent_overwrite_reads",
         "checksums",
         "bucket_rules",
         "auth_errors",
         "anonymous_and_acl",
         "second_user",
         "rename",
         "append",
         "virtual_host"]


def main():
    args = H.parse_args()
    runner = H.Runner("boto3")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        bob = srv.add_user("bob")
        with H.tempdir() as work:
            t = Boto3Tests(srv, work, bob)
            if not runner.case("create bucket", t.setup):
                return runner.finish()
            for name in CASES + ["sse_c"]:
                runner.case(name, getattr(t, name))
                if not srv.alive():
                    print(f"strata server died:\n{srv.log_tail()}", flush=True)
                    runner.results.append(("server alive", False, 0, "server process exited"))
                    break
        rc = srv.stop()
        runner.case("server exits 0 on SIGTERM", lambda: _check_rc(rc))
    finally:
        srv.cleanup()
    return runner.finish()


def _check_rc(rc):
    assert rc == 0, f"exit code {rc}"


if __name__ == "__main__":
    sys.exit(main())
