#!/usr/bin/python3
"""Server-side encryption with boto3 (Debian boto3 1.26) against a real `strata server`.

SSE-S3, SSE-KMS with a declared key id (`--kms-key`), SSE-C put/get/head/copy
and multipart, bucket default encryption; then the server's whole data
directory is read back and must not contain the plaintext of any encrypted
object, while the same construction written unencrypted is found. The master
key file is created 0600 at first start.

Usage: /usr/bin/python3 test_sse.py --strata build/strata
"""

import base64
import hashlib
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
B = "sse-main"
KEY = b"0123456789abcdef0123456789abcdef"
OTHER = b"fedcba9876543210fedcba9876543210"


def pattern(tag, n):
    out = bytearray()
    while len(out) < n:
        out += f"{tag}:{len(out)}|".encode()
    return bytes(out[:n])


def ssec(key=KEY):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key.decode()}


class SseTests:
    def __init__(self, srv):
        self.srv = srv
        self.s3 = srv.client()
        self.secrets = []   # (tag, size) written encrypted
        self.controls = []  # (tag, size) written in the clear

    def setup(self):
        self.s3.create_bucket(Bucket=B)

    def master_key_file(self):
        path = os.path.join(self.srv.data_dir, "kms-master.key")
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
        assert len(open(path).read().strip()) == 64

    def sse_s3(self):
        for n in (100, 5000, 3 * MiB + 7):
            body = pattern(f"s3secret{n}", n)
            r = self.s3.put_object(Bucket=B, Key=f"s3/{n}", Body=body, ServerSideEncryption="AES256")
            assert r["ServerSideEncryption"] == "AES256", r
            assert r["ETag"] == '"' + hashlib.md5(body).hexdigest() + '"', r["ETag"]
            g = self.s3.get_object(Bucket=B, Key=f"s3/{n}")
            assert g["ServerSideEncryption"] == "AES256"
            assert g["Body"].read() == body
            rg = self.s3.get_object(Bucket=B, Key=f"s3/{n}", Range=f"bytes={n // 2}-{n - 1}")
            assert rg["Body"].read() == body[n // 2:]
            self.secrets.append((f"s3secret{n}", n))
            ctl = pattern(f"s3control{n}", n)
            self.s3.put_object(Bucket=B, Key=f"plain/{n}", Body=ctl)
            self.controls.append((f"s3control{n}", n))

    def sse_kms(self):
        body = pattern("kmssecret", 2 * MiB)
        r = self.s3.put_object(Bucket=B, Key="kms/a", Body=body, ServerSideEncryption="aws:kms",
                               SSEKMSKeyId="team-key")
        assert r["ServerSideEncryption"] == "aws:kms", r
        assert r["SSEKMSKeyId"] == "team-key", r
        h = self.s3.head_object(Bucket=B, Key="kms/a")
        assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == "team-key", h
        assert self.s3.get_object(Bucket=B, Key="kms/a")["Body"].read() == body
        self.secrets.append(("kmssecret", 2 * MiB))
        code = H.client_error_code(self.s3.put_object, Bucket=B, Key="kms/bad", Body=b"x",
                                   ServerSideEncryption="aws:kms", SSEKMSKeyId="no-such-key")
        assert code == (400, "KMS.NotFoundException"), code

    def sse_c(self):
        body = pattern("csecret", 1 * MiB + 3)
        r = self.s3.put_object(Bucket=B, Key="c/a", Body=body, **ssec())
        assert r["SSECustomerAlgorithm"] == "AES256", r
        assert r["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(KEY).digest()).decode()
        g = self.s3.get_object(Bucket=B, Key="c/a", **ssec())
        assert g["Body"].read() == body
        code = H.client_error_code(self.s3.get_object, Bucket=B, Key="c/a")
        assert code == (400, "InvalidRequest"), code
        code = H.client_error_code(self.s3.get_object, Bucket=B, Key="c/a", **ssec(OTHER))
        assert code == (403, "AccessDenied"), code
        code = H.client_error_code(self.s3.head_object, Bucket=B, Key="c/a")
        assert code[0] == 400, code
        self.s3.head_object(Bucket=B, Key="c/a", **ssec())
        small = pattern("csmall", 700)
        self.s3.put_object(Bucket=B, Key="c/small", Body=small, **ssec())
        assert self.s3.get_object(Bucket=B, Key="c/small", **ssec())["Body"].read() == small
        self.secrets += [("csecret", 1 * MiB + 3), ("csmall", 700)]

    def copy(self):
        # SSE-C -> SSE-KMS (with the copy-source key), SSE-KMS -> none, none -> SSE-C.
        self.s3.copy_object(Bucket=B, Key="copy/kms", CopySource={"Bucket": B, "Key": "c/a"},
                            CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=KEY.decode(),
                            ServerSideEncryption="aws:kms", SSEKMSKeyId="team-key")
        body = pattern("csecret", 1 * MiB + 3)
        g = self.s3.get_object(Bucket=B, Key="copy/kms")
        assert g["ServerSideEncryption"] == "aws:kms" and g["Body"].read() == body
        self.s3.copy_object(Bucket=B, Key="copy/plain", CopySource={"Bucket": B, "Key": "copy/kms"})
        g = self.s3.get_object(Bucket=B, Key="copy/plain")
        assert "ServerSideEncryption" not in g and g["Body"].read() == body
        self.s3.copy_object(Bucket=B, Key="copy/c", CopySource={"Bucket": B, "Key": "copy/plain"}, **ssec(OTHER))
        assert self.s3.get_object(Bucket=B, Key="copy/c", **ssec(OTHER))["Body"].read() == body
        self.s3.delete_object(Bucket=B, Key="copy/plain")  # its plaintext would match "csecret"

    def multipart_ssec(self):
        p1, p2 = pattern("mpsecret1", 5 * MiB), pattern("mpsecret2", 1000)
        up = self.s3.create_multipart_upload(Bucket=B, Key="mp/c", **ssec())
        uid = up["UploadId"]
        e1 = self.s3.upload_part(Bucket=B, Key="mp/c", UploadId=uid, PartNumber=1, Body=p1, **ssec())["ETag"]
        e2 = self.s3.upload_part(Bucket=B, Key="mp/c", UploadId=uid, PartNumber=2, Body=p2, **ssec())["ETag"]
        self.s3.complete_multipart_upload(Bucket=B, Key="mp/c", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
        g = self.s3.get_object(Bucket=B, Key="mp/c", Range="bytes=5242870-5242889", **ssec())
        assert g["Body"].read() == (p1 + p2)[5242870:5242890]
        self.secrets += [("mpsecret1", 5 * MiB), ("mpsecret2", 1000)]

    def bucket_default(self):
        self.s3.create_bucket(Bucket="sse-default")
        self.s3.put_bucket_encryption(Bucket="sse-default", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                              "KMSMasterKeyID": "team-key"}}]})
        cfg = self.s3.get_bucket_encryption(Bucket="sse-default")["ServerSideEncryptionConfiguration"]
        rule = cfg["Rules"][0]["ApplyServerSideEncryptionByDefault"]
        assert rule["SSEAlgorithm"] == "aws:kms" and rule["KMSMasterKeyID"] == "team-key", cfg
        body = pattern("defsecret", 4000)
        r = self.s3.put_object(Bucket="sse-default", Key="d", Body=body)
        assert r["ServerSideEncryption"] == "aws:kms", r
        self.secrets.append(("defsecret", 4000))
        self.s3.delete_bucket_encryption(Bucket="sse-default")
        code = H.client_error_code(self.s3.get_bucket_encryption, Bucket="sse-default")
        assert code == (404, "ServerSideEncryptionConfigurationNotFoundError"), code

    def data_dir_holds_no_plaintext(self):
        disk = bytearray()
        for root, _dirs, files in os.walk(self.srv.data_dir):
            for f in files:
                with open(os.path.join(root, f), "rb") as fh:
                    disk += fh.read()
                disk += b"\n"
        disk = bytes(disk)
        for tag, n in self.secrets:
            run = pattern(tag, n)[n // 2:n // 2 + 40]
            assert disk.find(run) < 0, f"plaintext of {tag} found on disk"
        for tag, n in self.controls:
            run = pattern(tag, n)[n // 2:n // 2 + 40]
            assert disk.find(run) >= 0, f"control {tag} not found: the check could not fail"


def main():
    args = H.parse_args()
    runner = H.Runner("sse")
    srv = H.StrataServer(args.strata, extra_args=["--kms-key", "team-key", "--kms-key", "other-key"])
    try:
        srv.start()
        t = SseTests(srv)
        if not runner.case("create bucket", t.setup):
            return runner.finish()
        for name in ["master_key_file", "sse_s3", "sse_kms", "sse_c", "copy", "multipart_ssec",
                     "bucket_default", "data_dir_holds_no_plaintext"]:
            runner.case(name, getattr(t, name))
        # Restart: the same master key reads the same objects.
        srv.stop()
        srv.start()
        runner.case("readable after restart", lambda: _after_restart(srv))
        rc = srv.stop()
        runner.case("server exits 0 on SIGTERM", lambda: _check_rc(rc))
    finally:
        srv.cleanup()
    return runner.finish()


def _after_restart(srv):
    s3 = srv.client()
    assert s3.get_object(Bucket=B, Key="kms/a")["Body"].read() == pattern("kmssecret", 2 * MiB)
    assert s3.get_object(Bucket=B, Key="c/small", **ssec())["Body"].read() == pattern("csmall", 700)


def _check_rc(rc):
    assert rc == 0, f"exit code {rc}"


if __name__ == "__main__":
    sys.exit(main())
