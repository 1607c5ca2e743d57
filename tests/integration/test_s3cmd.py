#!/usr/bin/python3
"""s3cmd (/usr/bin/s3cmd, SigV4, path style, plain http) against a real `strata server`.

Usage: /usr/bin/python3 test_s3cmd.py --strata build/strata
"""

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
BUCKET = "s3cmd-bucket"


class S3cmdTests:
    def __init__(self, srv, work):
        self.srv = srv
        self.work = work
        self.cfg = os.path.join(work, "s3cfg")
        with open(self.cfg, "w") as f:
            f.write(f"""[default]
access_key = {srv.access_key}
secret_key = {srv.secret_key}
host_base = 127.0.0.1:{srv.port}
host_bucket = 127.0.0.1:{srv.port}
use_https = False
signature_v2 = False
bucket_location = us-east-1
check_ssl_certificate = False
multipart_chunk_size_mb = 5
progress_meter = False
""")
        self.env = H.clean_env({"HOME": work})
        self.small = os.path.join(work, "small.txt")
        with open(self.small, "wb") as f:
            f.write(b"hello from s3cmd\n" * 100)
        self.special = os.path.join(work, "s p&\u00fc+.txt")  # needs URL encoding
        with open(self.special, "wb") as f:
            f.write(b"special name\n" * 50)
        self.big = os.path.join(work, "big.bin")
        H.write_random_file(self.big, 12 * MiB + 12345)

    def s3cmd(self, *args, check=True):
        return H.run_tool([H.S3CMD, "-c", self.cfg, *args], self.env, timeout=120, check=check)

    def mb(self):
        p = self.s3cmd("mb", f"s3://{BUCKET}")
        assert f"Bucket 's3://{BUCKET}/' created" in p.stdout, p.stdout
        p = self.s3cmd("ls")
        assert f"s3://{BUCKET}" in p.stdout, p.stdout

    def put(self):
        self.s3cmd("put", self.small, f"s3://{BUCKET}/dir/small.txt")
        self.s3cmd("put", self.special, f"s3://{BUCKET}/dir/{os.path.basename(self.special)}")
        self.s3cmd("put", self.big, f"s3://{BUCKET}/dir/big.bin")
        # 12 MiB in 5 MiB chunks: a 3-part multipart upload.
        c = self.srv.client()
        etag = c.head_object(Bucket=BUCKET, Key="dir/big.bin")["ETag"]
        assert etag.endswith('-3"'), etag

    def ls(self):
        p = self.s3cmd("ls", f"s3://{BUCKET}/dir/")
        lines = [l.split() for l in p.stdout.splitlines() if l.strip()]
        sizes = {l[-1]: l[-2] for l in lines}
        assert sizes.get(f"s3://{BUCKET}/dir/small.txt") == str(os.path.getsize(self.small)), sizes
        assert sizes.get(f"s3://{BUCKET}/dir/big.bin") == str(os.path.getsize(self.big)), sizes
        sp = os.path.basename(self.special)
        assert f"s3://{BUCKET}/dir/{sp}" in p.stdout, f"special name not listed as is: {p.stdout}"
        p = self.s3cmd("ls", f"s3://{BUCKET}")
        assert "DIR" in p.stdout and f"s3://{BUCKET}/dir/" in p.stdout, p.stdout
        p = self.s3cmd("info", f"s3://{BUCKET}/dir/small.txt")
        md5 = hashlib.md5(open(self.small, "rb").read()).hexdigest()
        assert md5 in p.stdout, p.stdout

    def get(self):
        for name, src in (("small.txt", self.small), ("big.bin", self.big),
                          (os.path.basename(self.special), self.special)):
            out = os.path.join(self.work, name + ".out")
            self.s3cmd("get", "--force", f"s3://{BUCKET}/dir/{name}", out)
            assert H.sha256_file(out) == H.sha256_file(src), f"{name} differs after get"

    def dele(self):
        self.s3cmd("del", f"s3://{BUCKET}/dir/small.txt")
        self.s3cmd("del", f"s3://{BUCKET}/dir/big.bin")
        self.s3cmd("del", f"s3://{BUCKET}/dir/{os.path.basename(self.special)}")
        p = self.s3cmd("ls", "--recursive", f"s3://{BUCKET}")
        assert p.stdout.strip() == "", p.stdout

    def rb(self):
        p = self.s3cmd("rb", f"s3://{BUCKET}")
        assert f"Bucket 's3://{BUCKET}/' removed" in p.stdout, p.stdout
        p = self.s3cmd("ls")
        assert BUCKET not in p.stdout, p.stdout


def main():
    args = H.parse_args()
    runner = H.Runner("s3cmd")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        with H.tempdir() as work:
            t = S3cmdTests(srv, work)
            for name in ["mb", "put", "ls", "get", "dele", "rb"]:
                if not runner.case(name, getattr(t, name)):
                    break  # each step needs the one before
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
