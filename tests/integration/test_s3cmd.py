#!/usr/bin/python3
"""s3cmd (/usr/bin/s3cmd, SigV4, path style, plain http) against a real `strata server`:
mb, put (single and multipart), ls, info, get, cp, mv, sync (both ways, --delete-removed),
du, modify, multipart/abortmp, del, rb.

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

    def cp_mv(self):
        self.s3cmd("cp", f"s3://{BUCKET}/dir/small.txt", f"s3://{BUCKET}/cp/copy.txt")
        self.s3cmd("mv", f"s3://{BUCKET}/cp/copy.txt", f"s3://{BUCKET}/cp/moved.txt")
        p = self.s3cmd("ls", f"s3://{BUCKET}/cp/")
        assert f"s3://{BUCKET}/cp/moved.txt" in p.stdout and "copy.txt" not in p.stdout, p.stdout
        out = os.path.join(self.work, "moved.out")
        self.s3cmd("get", "--force", f"s3://{BUCKET}/cp/moved.txt", out)
        assert H.sha256_file(out) == H.sha256_file(self.small)
        self.s3cmd("del", f"s3://{BUCKET}/cp/moved.txt")

    def sync(self):
        tree = os.path.join(self.work, "tree")
        files = {"a.txt": b"a" * 10, "sub/b.txt": b"b" * 2000, "sub/deep/c.bin": os.urandom(300_000)}
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "wb") as f:
                f.write(data)
        self.s3cmd("sync", tree + "/", f"s3://{BUCKET}/sync/")
        p = self.s3cmd("ls", "--recursive", f"s3://{BUCKET}/sync/")
        listed = sorted(l.split()[-1] for l in p.stdout.splitlines() if l.strip())
        assert listed == sorted(f"s3://{BUCKET}/sync/{r}" for r in files), listed
        # Unchanged: nothing uploaded; a removed file is deleted with --delete-removed.
        os.unlink(os.path.join(tree, "a.txt"))
        p = self.s3cmd("sync", "--delete-removed", tree + "/", f"s3://{BUCKET}/sync/")
        assert "upload:" not in p.stdout, p.stdout
        assert "delete:" in p.stdout and "a.txt" in p.stdout, p.stdout
        down = os.path.join(self.work, "down")
        self.s3cmd("sync", f"s3://{BUCKET}/sync/", down + "/")
        for rel in ["sub/b.txt", "sub/deep/c.bin"]:
            assert open(os.path.join(down, rel), "rb").read() == files[rel], rel
        assert not os.path.exists(os.path.join(down, "a.txt"))
        p = self.s3cmd("du", f"s3://{BUCKET}/sync/")
        assert p.stdout.split()[0] == str(2000 + 300_000), p.stdout
        self.s3cmd("del", "--recursive", "--force", f"s3://{BUCKET}/sync/")

    def info_and_modify(self):
        p = self.s3cmd("info", f"s3://{BUCKET}")
        assert "Location:" in p.stdout, p.stdout
        self.s3cmd("modify", "--add-header=Cache-Control:max-age=60", "--mime-type=text/x-modified",
                   f"s3://{BUCKET}/dir/small.txt")
        h = self.srv.client().head_object(Bucket=BUCKET, Key="dir/small.txt")
        assert h.get("CacheControl") == "max-age=60" and h["ContentType"] == "text/x-modified", h
        p = self.s3cmd("info", f"s3://{BUCKET}/dir/small.txt")
        assert "text/x-modified" in p.stdout, p.stdout
        # Unfinished multipart uploads: listed, then aborted.
        c = self.srv.client()
        up = c.create_multipart_upload(Bucket=BUCKET, Key="mp/unfinished")["UploadId"]
        p = self.s3cmd("multipart", f"s3://{BUCKET}")
        assert up in p.stdout and "mp/unfinished" in p.stdout, p.stdout
        self.s3cmd("abortmp", f"s3://{BUCKET}/mp/unfinished", up)
        assert not c.list_multipart_uploads(Bucket=BUCKET).get("Uploads"), "upload not aborted"

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
            for name in ["mb", "put", "ls", "get", "cp_mv", "sync", "info_and_modify", "dele", "rb"]:
                if not runner.case(name, getattr(t, name)):
                    break  # each step needs the one before
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
