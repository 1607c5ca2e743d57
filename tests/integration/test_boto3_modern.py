#!/usr/bin/python3
"""A current boto3 (>= 1.36: default CRC32 request checksums and response
checksum validation, aws-chunked trailers over HTTPS) against a real
`strata server`.

ctest runs this script with Debian's /usr/bin/python3; it looks for a Python
whose boto3 is 1.36 or newer (STRATA_IT_MODERN_PYTHON, else the machine's
pyenv/local Python 3 interpreters) and runs itself again under it. Without one
it exits 77, which ctest reports as skipped: CI machines may lack it. (When
STRATA_IT_MODERN_PYTHON is set, only that interpreter is tried.)

Under the modern interpreter it runs
  1. every case of test_boto3.py (the whole boto3 suite), and
  2. the cases below, which check what the new defaults put on the wire, once
     over plain HTTP (checksums in headers) and once over HTTPS (botocore sends
     streaming bodies as aws-chunked with an x-amz-checksum-crc32 trailer
     only over TLS).

Usage: /usr/bin/python3 test_boto3_modern.py --strata build/strata
"""

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
CHILD_FLAG = "STRATA_IT_BOTO3_MODERN_CHILD"
MIN_BOTO3 = (1, 36)


def _version_tuple(v):
    out = []
    for part in v.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _default_candidates():
    cands = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")), reverse=True)
    cands += sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3"), reverse=True)
    cands += sorted(glob.glob("/usr/local/bin/python3.*"), reverse=True)
    for name in ("python3.13", "python3.12", "python3.11"):
        w = shutil.which(name)
        if w:
            cands.append(w)
    return cands


def find_modern_python():
    """(interpreter, boto3 version) of the first Python whose boto3 >= 1.36, or (None, why)."""
    cands = []
    if os.environ.get("STRATA_IT_MODERN_PYTHON"):  # an explicit choice: only it
        cands.append(os.environ["STRATA_IT_MODERN_PYTHON"])
    else:
        cands += _default_candidates()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYENV"))}
    seen = set()
    tried = []
    for c in cands:
        real = os.path.realpath(c)
        if real in seen or not os.access(real, os.X_OK) or real.endswith("-config"):
            continue
        seen.add(real)
        try:
            p = subprocess.run([c, "-c", "import boto3, requests; print(boto3.__version__)"],
                               capture_output=True, text=True, timeout=60, env=env)
        except (OSError, subprocess.TimeoutExpired):
            continue
        v = p.stdout.strip()
        tried.append(f"{c}: {v or 'no boto3/requests'}")
        if p.returncode == 0 and _version_tuple(v) >= MIN_BOTO3:
            return c, v
    return None, "; ".join(tried) or "no candidate interpreter"


def launcher():
    py, info = find_modern_python()
    if py is None:
        print(f"SKIP: no Python with boto3 >= {'.'.join(map(str, MIN_BOTO3))} ({info})", flush=True)
        return SKIP
    print(f"running under {py} (boto3 {info})", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYENV"))}
    env.update({CHILD_FLAG: "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    return subprocess.call([py, os.path.abspath(__file__)] + sys.argv[1:], env=env)


# --------------------------------------------------------------------------
# Under the modern interpreter.

def crc32_b64(data):
    import base64
    return base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()


class ModernTests:
    """The new defaults on the wire, against one server (HTTP or HTTPS)."""

    def __init__(self, H, srv, work, endpoint, verify, label):
        import boto3
        from botocore.config import Config
        self.H = H
        self.srv = srv
        self.work = work
        self.label = label
        self.tls = endpoint.startswith("https")
        self.bucket = f"modern-{label}"
        self.wire = []  # (operation, method, url, headers) as sent, after signing
        # signature_version: botocore presigns with SigV2 for a custom endpoint
        # unless told (Strata refuses SigV2 with InvalidRequest).
        cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"},
                     signature_version="s3v4",
                     request_checksum_calculation="when_supported",
                     response_checksum_validation="when_supported")
        sess = boto3.session.Session(aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret_key,
                                     region_name=H.REGION)
        self.s3 = sess.client("s3", endpoint_url=endpoint, verify=verify, config=cfg)
        self.s3.meta.events.register("before-send.s3.*", self._capture)
        self.verify = verify

    def _capture(self, request, event_name=None, **kw):
        op = (event_name or "").rsplit(".", 1)[-1]
        self.wire.append((op, request.method, request.url, {k.lower(): v for k, v in request.headers.items()}))

    def sent(self, op):
        w = [x for x in self.wire if x[0] == op]
        assert w, f"no {op} request was captured"
        return w

    def _body_checksum_sent(self, hdrs):
        """How the request carried its CRC32: 'header' or 'trailer'."""
        def s(v):
            return v.decode() if isinstance(v, bytes) else v
        if "x-amz-checksum-crc32" in hdrs:
            return "header"
        if s(hdrs.get("x-amz-trailer", "")) == "x-amz-checksum-crc32":
            assert "aws-chunked" in s(hdrs.get("content-encoding", "")), hdrs
            assert s(hdrs.get("x-amz-content-sha256")) == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", hdrs
            return "trailer"
        raise AssertionError(f"no CRC32 checksum (header or trailer) in {hdrs}")

    def setup(self):
        self.s3.create_bucket(Bucket=self.bucket)

    def put_get_default_checksums(self):
        B = self.bucket
        for name, body in (("bytes", os.urandom(200_000)), ("empty", b"")):
            self.wire.clear()
            r = self.s3.put_object(Bucket=B, Key=f"ck/{name}", Body=body)
            hdrs = self.sent("PutObject")[-1][3]
            self._body_checksum_sent(hdrs)
            assert r.get("ChecksumCRC32") == crc32_b64(body), (r.get("ChecksumCRC32"), crc32_b64(body))
            g = self.s3.get_object(Bucket=B, Key=f"ck/{name}")
            # The default asks for the checksum and validates the body against it.
            assert self.sent("GetObject")[-1][3].get("x-amz-checksum-mode") in ("ENABLED", b"ENABLED")
            assert g.get("ChecksumCRC32") == crc32_b64(body), g.get("ChecksumCRC32")
            assert g["Body"].read() == body
        # A file body: streamed; over TLS as aws-chunked with a trailer.
        path = os.path.join(self.work, f"stream-{self.label}.bin")
        self.H.write_random_file(path, 3 * self.H.MiB + 11)
        self.wire.clear()
        with open(path, "rb") as f:
            r = self.s3.put_object(Bucket=B, Key="ck/file", Body=f)
        how = self._body_checksum_sent(self.sent("PutObject")[-1][3])
        if self.tls:
            assert how == "trailer", how
        data = open(path, "rb").read()
        assert r.get("ChecksumCRC32") == crc32_b64(data)
        assert self.s3.get_object(Bucket=B, Key="ck/file")["Body"].read() == data
        # A wrong checksum is refused and stores nothing.
        st, code = self.H.client_error_code(self.s3.put_object, Bucket=B, Key="ck/bad", Body=b"abc",
                                            ChecksumCRC32=crc32_b64(b"abd"))
        assert (st, code) == (400, "BadDigest"), (st, code)
        st, _ = self.H.client_error_code(self.s3.head_object, Bucket=B, Key="ck/bad")
        assert st == 404, st

    def multipart_upload_file(self):
        from boto3.s3.transfer import TransferConfig
        B = self.bucket
        src = os.path.join(self.work, f"mp-{self.label}.bin")
        dst = src + ".out"
        self.H.write_random_file(src, 20 * self.H.MiB + 7)
        cfg = TransferConfig(multipart_threshold=8 * self.H.MiB, multipart_chunksize=8 * self.H.MiB,
                             max_concurrency=4)
        self.wire.clear()
        self.s3.upload_file(src, B, "mp/obj", Config=cfg)
        create = self.sent("CreateMultipartUpload")[-1][3]
        assert create.get("x-amz-checksum-algorithm") in ("CRC32", b"CRC32"), create
        parts = self.sent("UploadPart")
        assert len(parts) == 3, len(parts)
        for p in parts:
            self._body_checksum_sent(p[3])
        self.sent("CompleteMultipartUpload")
        head = self.s3.head_object(Bucket=B, Key="mp/obj", ChecksumMode="ENABLED")
        assert head["ContentLength"] == 20 * self.H.MiB + 7
        assert head["ETag"].endswith('-3"'), head["ETag"]
        assert head.get("ChecksumCRC32"), head
        self.s3.download_file(B, "mp/obj", dst, Config=cfg)
        assert self.H.sha256_file(src) == self.H.sha256_file(dst), "multipart object differs"
        # upload_fileobj from a non-seekable stream: parts read as they come.
        import io

        class OneWay(io.RawIOBase):
            def __init__(self, data):
                self.buf = io.BytesIO(data)

            def readable(self):
                return True

            def readinto(self, b):
                chunk = self.buf.read(len(b))
                b[:len(chunk)] = chunk
                return len(chunk)

        data = os.urandom(9 * self.H.MiB)
        self.s3.upload_fileobj(OneWay(data), B, "mp/stream", Config=cfg)
        assert self.s3.get_object(Bucket=B, Key="mp/stream")["Body"].read() == data
        os.unlink(src)
        os.unlink(dst)

    def copy(self):
        from boto3.s3.transfer import TransferConfig
        B = self.bucket
        body = os.urandom(100_000)
        self.s3.put_object(Bucket=B, Key="cp/src", Body=body, Metadata={"a": "1"})
        r = self.s3.copy_object(Bucket=B, Key="cp/dst", CopySource={"Bucket": B, "Key": "cp/src"})
        assert r["CopyObjectResult"]["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"', r
        o = self.s3.get_object(Bucket=B, Key="cp/dst")
        assert o["Body"].read() == body and o["Metadata"] == {"a": "1"}, o["Metadata"]
        r = self.s3.copy_object(Bucket=B, Key="cp/dst2", CopySource={"Bucket": B, "Key": "cp/src"},
                                MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="text/x-copy")
        o = self.s3.head_object(Bucket=B, Key="cp/dst2")
        assert o["Metadata"] == {"b": "2"} and o["ContentType"] == "text/x-copy", o
        # The managed copy of a large object: UploadPartCopy ranges.
        big = os.urandom(18 * self.H.MiB)
        self.s3.put_object(Bucket=B, Key="cp/big", Body=big)
        self.wire.clear()
        self.s3.copy({"Bucket": B, "Key": "cp/big"}, B, "cp/big-copy",
                     Config=TransferConfig(multipart_threshold=8 * self.H.MiB, multipart_chunksize=8 * self.H.MiB))
        assert len(self.sent("UploadPartCopy")) == 3
        assert self.s3.get_object(Bucket=B, Key="cp/big-copy")["Body"].read() == big

    def list_v2_paging(self):
        B = self.bucket
        keys = [f"list/{i:03d}" for i in range(25)]
        for k in keys:
            self.s3.put_object(Bucket=B, Key=k, Body=k.encode())
        pages = list(self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=B, Prefix="list/", PaginationConfig={"PageSize": 10}))
        assert [len(p.get("Contents", [])) for p in pages] == [10, 10, 5], [len(p.get("Contents", [])) for p in pages]
        assert [o["Key"] for p in pages for o in p["Contents"]] == keys
        r = self.s3.list_objects_v2(Bucket=B, Prefix="list/", StartAfter="list/019")
        assert [o["Key"] for o in r["Contents"]] == keys[20:], r
        r = self.s3.list_objects_v2(Bucket=B, Prefix="list/", Delimiter="/", MaxKeys=3)
        assert r["KeyCount"] == 3 and r["IsTruncated"], r
        r2 = self.s3.list_objects_v2(Bucket=B, Prefix="list/", MaxKeys=3,
                                     ContinuationToken=r["NextContinuationToken"])
        assert [o["Key"] for o in r2["Contents"]] == keys[3:6], r2

    def delete_objects(self):
        B = self.bucket
        keys = [f"del/{i}" for i in range(5)]
        for k in keys:
            self.s3.put_object(Bucket=B, Key=k, Body=b"x")
        self.wire.clear()
        r = self.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in keys + ["del/missing"]]})
        hdrs = self.sent("DeleteObjects")[-1][3]
        # boto3 >= 1.36 sends a CRC32 of the body instead of Content-MD5.
        assert "x-amz-checksum-crc32" in hdrs and "content-md5" not in hdrs, hdrs
        assert sorted(d["Key"] for d in r["Deleted"]) == sorted(keys + ["del/missing"]), r
        assert not r.get("Errors"), r
        r = self.s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "del/0"}], "Quiet": True})
        assert not r.get("Deleted") and not r.get("Errors"), r
        assert self.s3.list_objects_v2(Bucket=B, Prefix="del/")["KeyCount"] == 0

    def presigned_sigv2_refused(self):
        """botocore's default presigning for a custom endpoint is SigV2: refused, clearly."""
        import boto3
        from botocore.config import Config
        v2 = boto3.session.Session(aws_access_key_id=self.srv.access_key, aws_secret_access_key=self.srv.secret_key,
                                   region_name=self.H.REGION).client(
            "s3", endpoint_url=self.s3.meta.endpoint_url, verify=self.verify,
            config=Config(s3={"addressing_style": "path"}, signature_version="s3"))
        import requests
        url = v2.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "pre/obj"})
        r = requests.get(url, verify=self.verify, timeout=30)
        assert r.status_code == 400 and b"<Code>InvalidRequest</Code>" in r.content, (r.status_code, r.text)

    def presigned_get_put(self):
        import requests
        B = self.bucket
        data = os.urandom(70_000)
        url = self.s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": "pre/obj"}, ExpiresIn=300)
        r = requests.put(url, data=data, verify=self.verify, timeout=30)
        assert r.status_code == 200, (r.status_code, r.text[:300])
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "pre/obj"}, ExpiresIn=300)
        r = requests.get(url, verify=self.verify, timeout=30)
        assert r.status_code == 200 and r.content == data, r.status_code
        r = requests.get(url.replace("pre/obj", "pre/other"), verify=self.verify, timeout=30)
        assert r.status_code == 403 and b"SignatureDoesNotMatch" in r.content, (r.status_code, r.text[:300])

    def presigned_post(self):
        import requests
        B = self.bucket
        data = os.urandom(1_000_000)
        post = self.s3.generate_presigned_post(
            B, "form/${filename}", Fields={"success_action_status": "201", "x-amz-meta-from": "form"},
            Conditions=[{"success_action_status": "201"}, ["starts-with", "$x-amz-meta-from", ""],
                        ["content-length-range", 1, 2_000_000]], ExpiresIn=300)
        r = requests.post(post["url"], data=post["fields"], files={"file": ("big.bin", data)},
                          allow_redirects=False, verify=self.verify, timeout=60)
        assert r.status_code == 201, (r.status_code, r.text[:400])
        assert "<Key>form/big.bin</Key>" in r.text, r.text
        o = self.s3.get_object(Bucket=B, Key="form/big.bin")
        assert o["Body"].read() == data and o["Metadata"] == {"from": "form"}, o["Metadata"]
        # success_action_redirect: 303 to the page with bucket, key and etag.
        post = self.s3.generate_presigned_post(
            B, "form/redirected", Fields={"success_action_redirect": "https://example.com/ok"},
            Conditions=[{"success_action_redirect": "https://example.com/ok"}], ExpiresIn=300)
        r = requests.post(post["url"], data=post["fields"], files={"file": ("r", b"redirect me")},
                          allow_redirects=False, verify=self.verify, timeout=30)
        assert r.status_code == 303, (r.status_code, r.text[:300])
        loc = r.headers["Location"]
        assert loc.startswith("https://example.com/ok?bucket=" + B + "&key=form%2Fredirected&etag="), loc
        # A key outside the policy.
        post = self.s3.generate_presigned_post(B, "form/only-this", ExpiresIn=300)
        fields = dict(post["fields"], key="form/another")
        r = requests.post(post["url"], data=fields, files={"file": ("x", b"x")}, verify=self.verify, timeout=30)
        assert r.status_code == 403 and b"Invalid according to Policy" in r.content, (r.status_code, r.text)
        st, _ = self.H.client_error_code(self.s3.head_object, Bucket=B, Key="form/another")
        assert st == 404

    def conditional_writes(self):
        B = self.bucket
        self.s3.put_object(Bucket=B, Key="cond/obj", Body=b"first", IfNoneMatch="*")
        st, code = self.H.client_error_code(self.s3.put_object, Bucket=B, Key="cond/obj", Body=b"second",
                                            IfNoneMatch="*")
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        etag = self.s3.head_object(Bucket=B, Key="cond/obj")["ETag"]
        self.s3.put_object(Bucket=B, Key="cond/obj", Body=b"third", IfMatch=etag)
        st, code = self.H.client_error_code(self.s3.put_object, Bucket=B, Key="cond/obj", Body=b"fourth",
                                            IfMatch=etag)
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        assert self.s3.get_object(Bucket=B, Key="cond/obj")["Body"].read() == b"third"
        # CompleteMultipartUpload with If-None-Match on an existing key.
        up = self.s3.create_multipart_upload(Bucket=B, Key="cond/obj")
        p = self.s3.upload_part(Bucket=B, Key="cond/obj", UploadId=up["UploadId"], PartNumber=1, Body=b"mp")
        st, code = self.H.client_error_code(
            self.s3.complete_multipart_upload, Bucket=B, Key="cond/obj", UploadId=up["UploadId"],
            IfNoneMatch="*", MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
        assert (st, code) == (412, "PreconditionFailed"), (st, code)
        self.s3.abort_multipart_upload(Bucket=B, Key="cond/obj", UploadId=up["UploadId"])
        assert self.s3.get_object(Bucket=B, Key="cond/obj")["Body"].read() == b"third"

    def sse_c(self):
        B = self.bucket
        key = os.urandom(32)
        data = os.urandom(5 * self.H.MiB + 3)
        self.s3.put_object(Bucket=B, Key="ssec/one", Body=data, SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        o = self.s3.get_object(Bucket=B, Key="ssec/one", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
        assert o["Body"].read() == data
        st, _ = self.H.client_error_code(self.s3.get_object, Bucket=B, Key="ssec/one")
        assert st == 400, st

    CASES = ["put_get_default_checksums", "multipart_upload_file", "copy", "list_v2_paging", "delete_objects",
             "presigned_get_put", "presigned_sigv2_refused", "presigned_post", "conditional_writes"]


def child():
    sys.path.insert(0, HERE)
    import boto3
    import strata_harness as H
    import test_boto3
    import test_tls
    print(f"boto3 {boto3.__version__} from {os.path.dirname(boto3.__file__)}", flush=True)
    assert _version_tuple(boto3.__version__) >= MIN_BOTO3, boto3.__version__
    args = H.parse_args()
    runner = H.Runner("boto3-modern")
    # 1. The whole boto3 suite with this boto3.
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        bob = srv.add_user("bob")
        with H.tempdir() as work:
            t = test_boto3.Boto3Tests(srv, work, bob)
            if runner.case("suite: create bucket", t.setup):
                for name in test_boto3.CASES + ["sse_c"]:
                    runner.case(f"suite: {name}", getattr(t, name))
                    if not srv.alive():
                        runner.results.append(("server alive", False, 0, srv.log_tail()))
                        return runner.finish()
            m = ModernTests(H, srv, work, srv.endpoint, None, "http")
            if runner.case("http: create bucket", m.setup):
                for name in ModernTests.CASES + ["sse_c"]:
                    runner.case(f"http: {name}", getattr(m, name))
        rc = srv.stop()
        runner.case("server exits 0 on SIGTERM", lambda: (_ for _ in ()).throw(AssertionError(rc)) if rc else None)
    finally:
        srv.cleanup()
    # 2. Over HTTPS: trailers.
    with H.tempdir() as work:
        cert, key = test_tls.make_cert(work)
        srv = H.StrataServer(args.strata, extra_args=["--tls-cert", cert, "--tls-key", key])
        try:
            srv.start()
            m = ModernTests(H, srv, work, f"https://127.0.0.1:{srv.port}", cert, "tls")
            if runner.case("tls: create bucket", m.setup):
                for name in ModernTests.CASES + ["sse_c"]:
                    runner.case(f"tls: {name}", getattr(m, name))
        finally:
            srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    if os.environ.get(CHILD_FLAG) == "1":
        sys.exit(child())
    sys.exit(launcher())
