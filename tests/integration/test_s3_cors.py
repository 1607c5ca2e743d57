#!/usr/bin/python3
"""CORS, browser-based uploads (POST policy conditions) and GetObjectAttributes
against a real `strata server`, with boto3 (Debian 1.26) and raw http.client.

What is expected comes from the Amazon S3 API reference (PutBucketCors,
GetBucketCors, DeleteBucketCors, OPTIONS object, POST Object / "Creating a POST
Policy", GetObjectAttributes) and from how AWS answers: preflights are
anonymous; a preflight no rule allows is 403 AccessForbidden "CORSResponse:
..."; actual requests with a matching Origin carry Access-Control-Allow-Origin
on success and on errors; GetObjectAttributes gives the ETag without quotes,
lists parts only for a multipart object with COMPOSITE checksums, and needs the
SSE-C key of an SSE-C object.

Usage: /usr/bin/python3 test_s3_cors.py --strata build/strata
"""

import base64
import hashlib
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
B = "cors-main"
BARE = "cors-bare"  # never gets a CORS configuration
SSEC = b"0123456789abcdef0123456789abcdef"

GUIDE_RULES = [
    {"ID": "writers", "AllowedOrigins": ["http://www.example1.com"],
     "AllowedMethods": ["PUT", "POST", "DELETE"], "AllowedHeaders": ["*"]},
    {"AllowedOrigins": ["http://*.example2.com"], "AllowedMethods": ["PUT", "GET"],
     "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "ExposeHeaders": ["x-amz-server-side-encryption", "ETag"], "MaxAgeSeconds": 3000},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"]},
]


def post_form(url, fields, filename, data, content_type="application/octet-stream",
              headers=None):
    import requests
    r = requests.post(url, data=fields, files={"file": (filename, data, content_type)},
                      headers=headers or {}, allow_redirects=False, timeout=30)
    return H.Response(r.status_code, r.reason, {k.lower(): v for k, v in r.headers.items()},
                      r.content)


def crc32_raw(data):
    return struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)


class CorsTests:
    def __init__(self, srv):
        self.srv = srv
        self.s3 = srv.client()

    def preflight(self, path, origin=None, method=None, headers=None):
        h = {}
        if origin is not None:
            h["Origin"] = origin
        if method is not None:
            h["Access-Control-Request-Method"] = method
        if headers is not None:
            h["Access-Control-Request-Headers"] = headers
        return H.http_request(self.srv.port, "OPTIONS", path, h)

    def setup(self):
        self.s3.create_bucket(Bucket=B)
        self.s3.create_bucket(Bucket=BARE)
        self.s3.put_object(Bucket=B, Key="obj.txt", Body=b"hello cors")

    # ---- Put/Get/DeleteBucketCors
    def config_round_trip(self):
        st, code = H.client_error_code(self.s3.get_bucket_cors, Bucket=BARE)
        assert (st, code) == (404, "NoSuchCORSConfiguration"), (st, code)
        self.s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": GUIDE_RULES})
        got = self.s3.get_bucket_cors(Bucket=B)["CORSRules"]
        assert got == GUIDE_RULES, got
        # Replaced whole by the next Put.
        self.s3.put_bucket_cors(Bucket=BARE, CORSConfiguration={"CORSRules": [GUIDE_RULES[2]]})
        assert self.s3.get_bucket_cors(Bucket=BARE)["CORSRules"] == [GUIDE_RULES[2]]
        self.s3.put_bucket_cors(Bucket=BARE, CORSConfiguration={"CORSRules": [GUIDE_RULES[0]]})
        assert self.s3.get_bucket_cors(Bucket=BARE)["CORSRules"] == [GUIDE_RULES[0]]
        r = self.s3.delete_bucket_cors(Bucket=BARE)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 204, r
        st, code = H.client_error_code(self.s3.get_bucket_cors, Bucket=BARE)
        assert (st, code) == (404, "NoSuchCORSConfiguration"), (st, code)
        st, code = H.client_error_code(self.s3.get_bucket_cors, Bucket="cors-nobody")
        assert (st, code) == (404, "NoSuchBucket"), (st, code)

    def config_refused(self):
        def refused(rules, status, code, text=None):
            st, c = H.client_error_code(self.s3.put_bucket_cors, Bucket=B,
                                        CORSConfiguration={"CORSRules": rules})
            assert (st, c) == (status, code), (rules, st, c)
        one = {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}
        refused([dict(one, AllowedMethods=["PATCH"])], 400, "InvalidRequest")
        refused([dict(one, AllowedOrigins=["http://*.*.example.com"])], 400, "InvalidRequest")
        refused([dict(one, AllowedHeaders=["x-*-*"])], 400, "InvalidRequest")
        refused([dict(one, ExposeHeaders=["*"])], 400, "InvalidRequest")
        refused([one] * 101, 400, "MalformedXML")
        # Raw documents the SDK would not build.
        for body in (b"<CORSConfiguration>", b"<CORSConfiguration/>",
                     b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
                     b"</CORSRule></CORSConfiguration>",
                     b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                     b"<AllowedMethod>GET</AllowedMethod><Color>red</Color></CORSRule>"
                     b"</CORSConfiguration>"):
            r = H.signed_request(self.srv, "PUT", f"/{B}", "cors", body=body)
            H.assert_s3_error(r, 400, "MalformedXML")
        # Nothing refused changed the stored rules; 100 rules are accepted.
        assert self.s3.get_bucket_cors(Bucket=B)["CORSRules"] == GUIDE_RULES
        self.s3.put_bucket_cors(Bucket=BARE, CORSConfiguration={"CORSRules": [one] * 100})
        assert len(self.s3.get_bucket_cors(Bucket=BARE)["CORSRules"]) == 100
        self.s3.delete_bucket_cors(Bucket=BARE)
        # Only the owner may set it.
        anon = self.srv.client(unsigned=True)
        st, code = H.client_error_code(anon.put_bucket_cors, Bucket=B,
                                       CORSConfiguration={"CORSRules": [one]})
        assert (st, code) == (403, "AccessDenied"), (st, code)
        st, code = H.client_error_code(anon.get_bucket_cors, Bucket=B)
        assert (st, code) == (403, "AccessDenied"), (st, code)

    # ---- preflight (OPTIONS, anonymous)
    def preflight_allowed(self):
        r = self.preflight(f"/{B}/obj.txt", "http://app.example2.com", "PUT",
                           "X-Amz-Date, content-type")
        assert r.status == 200, r
        assert r.header("access-control-allow-origin") == "http://app.example2.com", r
        assert r.header("access-control-allow-methods") == "PUT, GET", r
        assert r.header("access-control-allow-headers") == "x-amz-date, content-type", r
        assert r.header("access-control-expose-headers") == "x-amz-server-side-encryption, ETag", r
        assert r.header("access-control-max-age") == "3000", r
        assert r.header("access-control-allow-credentials") == "true", r
        assert "Origin" in r.header("vary", ""), r
        # The first rule that allows it wins: rule 1 for its origin, any header.
        r = self.preflight(f"/{B}/new/key", "http://www.example1.com", "DELETE", "x-whatever")
        assert r.status == 200, r
        assert r.header("access-control-allow-methods") == "PUT, POST, DELETE", r
        assert r.header("access-control-max-age") is None, r
        # "*" answers "*" (no credentials); a bucket-level path and a query work too.
        r = self.preflight(f"/{B}", "http://anyone.org", "GET")
        assert r.status == 200 and r.header("access-control-allow-origin") == "*", r
        assert r.header("access-control-allow-credentials") is None, r
        r = self.preflight(f"/{B}/big.bin?partNumber=1&uploadId=abc", "http://www.example1.com",
                           "PUT", "content-md5")
        assert r.status == 200, r

    def preflight_refused(self):
        not_allowed = "CORSResponse: This CORS request is not allowed"
        cases = [
            ("http://evil.org", "PUT", None),                   # origin has no PUT rule
            ("http://app.example2.com", "DELETE", None),       # method not in the rule
            ("http://app.example2.com", "PUT", "x-custom"),    # header not allowed
            ("HTTP://app.example2.com", "PUT", None),           # origins are case-sensitive
            ("http://anyone.org", "GET", "x-amz-date"),         # rule 3 allows no header
            ("http://www.example1.com", "PATCH", None),
        ]
        for origin, method, headers in cases:
            r = self.preflight(f"/{B}/obj.txt", origin, method, headers)
            err = H.assert_s3_error(r, 403, "AccessForbidden")
            assert err["Message"].startswith(not_allowed), err
            assert r.header("access-control-allow-origin") is None, r
        r = self.preflight(f"/{BARE}/obj.txt", "http://anyone.org", "GET")
        err = H.assert_s3_error(r, 403, "AccessForbidden")
        assert "CORS is not enabled for this bucket" in err["Message"], err
        r = self.preflight("/cors-nobody/x", "http://anyone.org", "GET")
        H.assert_s3_error(r, 403, "AccessForbidden")
        r = self.preflight(f"/{B}/obj.txt", None, "GET")
        err = H.assert_s3_error(r, 400, "BadRequest")
        assert "Origin" in err["Message"], err
        r = self.preflight(f"/{B}/obj.txt", "http://anyone.org", None)
        H.assert_s3_error(r, 400, "BadRequest")

    # ---- actual requests
    def actual_requests(self):
        o = {"Origin": "http://app.example2.com"}
        r = H.signed_request(self.srv, "GET", f"/{B}/obj.txt", headers=o)
        assert r.status == 200 and r.body == b"hello cors", r
        assert r.header("access-control-allow-origin") == "http://app.example2.com", r
        assert r.header("access-control-expose-headers") == "x-amz-server-side-encryption, ETag", r
        assert r.header("access-control-allow-credentials") == "true", r
        # Errors carry them too, so the page can read the error.
        r = H.signed_request(self.srv, "GET", f"/{B}/missing", headers=o)
        H.assert_s3_error(r, 404, "NoSuchKey")
        assert r.header("access-control-allow-origin") == "http://app.example2.com", r
        r = H.http_request(self.srv.port, "PUT", f"/{B}/anon", {"Origin": "http://www.example1.com"},
                           b"x")
        H.assert_s3_error(r, 403, "AccessDenied")
        assert r.header("access-control-allow-origin") == "http://www.example1.com", r
        # No rule for this origin and method, no Origin, or no CORS: no headers.
        r = H.signed_request(self.srv, "DELETE", f"/{B}/missing", headers=o)
        assert r.status == 204 and r.header("access-control-allow-origin") is None, r
        r = H.signed_request(self.srv, "GET", f"/{B}/obj.txt")
        assert r.status == 200 and r.header("access-control-allow-origin") is None, r
        self.s3.put_object(Bucket=BARE, Key="k", Body=b"k")
        r = H.signed_request(self.srv, "GET", f"/{BARE}/k", headers=o)
        assert r.status == 200 and r.header("access-control-allow-origin") is None, r
        # Wildcard rule for HEAD.
        r = H.signed_request(self.srv, "HEAD", f"/{B}/obj.txt", headers={"Origin": "http://x.org"})
        assert r.status == 200 and r.header("access-control-allow-origin") == "*", r

    def config_survives_restart(self):
        self.srv.stop()
        self.srv.start()
        self.s3 = self.srv.client()
        assert self.s3.get_bucket_cors(Bucket=B)["CORSRules"] == GUIDE_RULES
        r = self.preflight(f"/{B}/obj.txt", "http://app.example2.com", "GET")
        assert r.status == 200, r

    # ---- POST Object: the policy conditions of "Creating a POST Policy"
    def post_policy_conditions(self):
        data = b"form body " * 100
        post = self.s3.generate_presigned_post(
            B, "uploads/${filename}",
            Fields={"Content-Type": "image/png", "x-amz-meta-tag": "album-7",
                    "success_action_status": "200"},
            Conditions=[["starts-with", "$key", "uploads/"],
                        ["starts-with", "$Content-Type", "image/"],
                        ["starts-with", "$x-amz-meta-tag", "album-"],
                        {"success_action_status": "200"},
                        ["content-length-range", 10, 10_000]],
            ExpiresIn=300)
        origin = {"Origin": "http://www.example1.com"}
        r = post_form(post["url"], post["fields"], "a.png", data, "image/png", origin)
        assert r.status == 200 and r.body == b"", r
        assert r.header("access-control-allow-origin") == "http://www.example1.com", r
        h = self.s3.head_object(Bucket=B, Key="uploads/a.png")
        assert h["ContentType"] == "image/png" and h["Metadata"] == {"tag": "album-7"}, h
        # Each starts-with condition refuses a value without its prefix.
        for name, value in (("key", "elsewhere/a.png"), ("Content-Type", "text/html"),
                            ("x-amz-meta-tag", "other")):
            fields = dict(post["fields"], **{name: value})
            r = post_form(post["url"], fields, "b.png", data, "image/png", origin)
            err = H.assert_s3_error(r, 403, "AccessDenied")
            assert "Invalid according to Policy" in err["Message"], err
            assert r.header("access-control-allow-origin") == "http://www.example1.com", r
        st, _ = H.client_error_code(self.s3.head_object, Bucket=B, Key="elsewhere/a.png")
        assert st == 404
        r = post_form(post["url"], post["fields"], "tiny.png", b"tiny", "image/png")
        H.assert_s3_error(r, 400, "EntityTooSmall")
        # A policy for another bucket, posted to this one.
        other = self.s3.generate_presigned_post(BARE, "x.bin", ExpiresIn=300)
        url = other["url"].replace(f"/{BARE}", f"/{B}")
        r = post_form(url, other["fields"], "x.bin", b"x")
        err = H.assert_s3_error(r, 403, "AccessDenied")
        assert "bucket" in err["Message"], err
        # success_action_redirect: 303 to it, with bucket, key and etag.
        red = self.s3.generate_presigned_post(
            B, "redir.bin", Fields={"success_action_redirect": "http://app.example/done?x=1"},
            Conditions=[{"success_action_redirect": "http://app.example/done?x=1"}],
            ExpiresIn=300)
        r = post_form(red["url"], red["fields"], "redir.bin", b"redirected")
        assert r.status == 303, r
        etag = hashlib.md5(b"redirected").hexdigest()
        assert r.header("location") == (f"http://app.example/done?x=1&bucket={B}&key=redir.bin"
                                        f"&etag=%22{etag}%22"), r
        # success_action_status other than 200/201: 204.
        s = self.s3.generate_presigned_post(B, "s.bin", Fields={"success_action_status": "202"},
                                            Conditions=[{"success_action_status": "202"}],
                                            ExpiresIn=300)
        r = post_form(s["url"], s["fields"], "s.bin", b"s")
        assert r.status == 204, r

    # ---- GetObjectAttributes
    def attributes_single_part(self):
        body = os.urandom(10_000)
        self.s3.put_object(Bucket=B, Key="attr/one", Body=body, ChecksumAlgorithm="SHA256")
        a = self.s3.get_object_attributes(
            Bucket=B, Key="attr/one",
            ObjectAttributes=["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"])
        assert a["ETag"] == hashlib.md5(body).hexdigest(), a  # no quotes
        assert a["ObjectSize"] == 10_000 and a["StorageClass"] == "STANDARD", a
        assert a["Checksum"]["ChecksumSHA256"] == H.sha256_b64(body), a
        assert "ObjectParts" not in a, a
        assert a["LastModified"] == self.s3.head_object(Bucket=B, Key="attr/one")["LastModified"]
        # Only what is asked for.
        a = self.s3.get_object_attributes(Bucket=B, Key="attr/one", ObjectAttributes=["ObjectSize"])
        assert a["ObjectSize"] == 10_000 and "ETag" not in a and "Checksum" not in a, a
        st, code = H.client_error_code(self.s3.get_object_attributes, Bucket=B, Key="attr/none",
                                       ObjectAttributes=["ETag"])
        assert (st, code) == (404, "NoSuchKey"), (st, code)
        st, code = H.client_error_code(self.s3.get_object_attributes, Bucket="cors-nobody",
                                       Key="k", ObjectAttributes=["ETag"])
        assert (st, code) == (404, "NoSuchBucket"), (st, code)
        # Raw: an unknown attribute, none at all, a malformed version id.
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/one", "attributes",
                             headers={"x-amz-object-attributes": "ETag,Colour"})
        H.assert_s3_error(r, 400, "InvalidArgument")
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/one", "attributes")
        H.assert_s3_error(r, 400, "InvalidRequest")
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/one", "attributes&versionId=null",
                             headers={"x-amz-object-attributes": "ObjectSize"})
        assert r.status == 200 and b"<ObjectSize>10000</ObjectSize>" in r.body, r
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/one", "attributes&versionId=abc",
                             headers={"x-amz-object-attributes": "ObjectSize"})
        H.assert_s3_error(r, 400, "InvalidArgument")  # an id Strata never issues, as GetObject

    def attributes_multipart(self):
        parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(1234)]
        up = self.s3.create_multipart_upload(Bucket=B, Key="attr/mp", ChecksumAlgorithm="CRC32")
        done = []
        for i, p in enumerate(parts, 1):
            r = self.s3.upload_part(Bucket=B, Key="attr/mp", UploadId=up["UploadId"], PartNumber=i,
                                    Body=p, ChecksumAlgorithm="CRC32")
            assert r["ChecksumCRC32"] == H.crc32_b64(p), r
            done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
        self.s3.complete_multipart_upload(Bucket=B, Key="attr/mp", UploadId=up["UploadId"],
                                          MultipartUpload={"Parts": done})
        composite = base64.b64encode(crc32_raw(b"".join(crc32_raw(p) for p in parts))).decode()
        a = self.s3.get_object_attributes(
            Bucket=B, Key="attr/mp", MaxParts=2,
            ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"])
        md5s = b"".join(hashlib.md5(p).digest() for p in parts)
        assert a["ETag"] == hashlib.md5(md5s).hexdigest() + "-3", a
        assert a["ObjectSize"] == sum(len(p) for p in parts), a
        assert a["Checksum"]["ChecksumCRC32"] == composite, a  # no "-3" here, unlike HeadObject
        op = a["ObjectParts"]
        assert op["TotalPartsCount"] == 3 and op["MaxParts"] == 2 and op["IsTruncated"], op
        assert op["NextPartNumberMarker"] == 2 and op["PartNumberMarker"] == 0, op
        assert [(x["PartNumber"], x["Size"], x["ChecksumCRC32"]) for x in op["Parts"]] == \
            [(1, 5 * MiB, H.crc32_b64(parts[0])), (2, 5 * MiB, H.crc32_b64(parts[1]))], op
        a = self.s3.get_object_attributes(Bucket=B, Key="attr/mp", MaxParts=2, PartNumberMarker=2,
                                          ObjectAttributes=["ObjectParts"])
        op = a["ObjectParts"]
        assert not op["IsTruncated"] and op["PartNumberMarker"] == 2, op
        assert [(x["PartNumber"], x["Size"]) for x in op["Parts"]] == [(3, 1234)], op
        # Without checksums: the count alone.
        up = self.s3.create_multipart_upload(Bucket=B, Key="attr/plain")
        done = []
        for i, p in enumerate(parts[:2], 1):
            r = self.s3.upload_part(Bucket=B, Key="attr/plain", UploadId=up["UploadId"],
                                    PartNumber=i, Body=p)
            done.append({"PartNumber": i, "ETag": r["ETag"]})
        self.s3.complete_multipart_upload(Bucket=B, Key="attr/plain", UploadId=up["UploadId"],
                                          MultipartUpload={"Parts": done})
        a = self.s3.get_object_attributes(Bucket=B, Key="attr/plain",
                                          ObjectAttributes=["ObjectParts", "Checksum"])
        assert a["ObjectParts"] == {"TotalPartsCount": 2}, a
        assert "Checksum" not in a, a

    def attributes_ssec(self):
        # Raw requests: boto3 1.26 does not base64-encode SSECustomerKey for this operation.
        def sse_headers(k):
            return {"x-amz-server-side-encryption-customer-algorithm": "AES256",
                    "x-amz-server-side-encryption-customer-key": base64.b64encode(k).decode(),
                    "x-amz-server-side-encryption-customer-key-MD5":
                        base64.b64encode(hashlib.md5(k).digest()).decode()}
        self.s3.put_object(Bucket=B, Key="attr/secret", Body=b"secret bytes",
                           SSECustomerAlgorithm="AES256", SSECustomerKey=SSEC.decode())
        want = {"x-amz-object-attributes": "ObjectSize,ETag"}
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/secret", "attributes", headers=want)
        H.assert_s3_error(r, 400, "InvalidRequest")
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/secret", "attributes",
                             headers=dict(want, **sse_headers(b"f" * 32)))
        H.assert_s3_error(r, 403, "AccessDenied")
        r = H.signed_request(self.srv, "GET", f"/{B}/attr/secret", "attributes",
                             headers=dict(want, **sse_headers(SSEC)))
        assert r.status == 200, r
        assert b"<ObjectSize>12</ObjectSize>" in r.body, r
        assert r.header("last-modified"), r

def main():
    args = H.parse_args()
    runner = H.Runner("s3_cors")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        t = CorsTests(srv)
        if not runner.case("setup", t.setup):
            return runner.finish()
        for name in ["config_round_trip", "config_refused", "preflight_allowed",
                     "preflight_refused", "actual_requests", "config_survives_restart",
                     "post_policy_conditions", "attributes_single_part", "attributes_multipart",
                     "attributes_ssec"]:
            runner.case(name, getattr(t, name))
        srv.stop()
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
