#!/usr/bin/python3
"""AWS CLI v2 (/usr/bin/aws) against a real `strata server`.

Usage: /usr/bin/python3 test_awscli.py --strata build/strata
"""

import base64
import hashlib
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

MiB = H.MiB
BUCKET = "awscli-bucket"
BIG = 200 * MiB


class AwsCliTests:
    def __init__(self, srv, work):
        self.srv = srv
        self.work = work
        cfg = os.path.join(work, "aws-config")
        with open(cfg, "w") as f:
            f.write("[default]\nregion = us-east-1\noutput = json\n"
                    "s3 =\n  addressing_style = path\n")
        creds = os.path.join(work, "aws-credentials")
        open(creds, "w").close()
        self.env = H.clean_env({
            "AWS_CONFIG_FILE": cfg, "AWS_SHARED_CREDENTIALS_FILE": creds,
            "AWS_ACCESS_KEY_ID": srv.access_key, "AWS_SECRET_ACCESS_KEY": srv.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_PAGER": "", "AWS_MAX_ATTEMPTS": "1", "HOME": work,
        })

    def aws(self, *args, check=True, timeout=300):
        return H.run_tool([H.AWS, "--endpoint-url", self.srv.endpoint, *args], self.env,
                          timeout=timeout, check=check)

    def mb(self):
        p = self.aws("s3", "mb", f"s3://{BUCKET}")
        assert f"make_bucket: {BUCKET}" in p.stdout, p.stdout
        p = self.aws("s3", "ls")
        assert BUCKET in p.stdout, p.stdout

    def cp_big(self):
        src = os.path.join(self.work, "big.bin")
        dst = os.path.join(self.work, "big.out")
        H.write_random_file(src, BIG)
        t0 = time.time()
        self.aws("s3", "cp", "--no-progress", src, f"s3://{BUCKET}/big/big.bin")
        print(f"uploaded {BIG // MiB} MiB in {time.time() - t0:.1f}s", flush=True)
        head = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "big/big.bin").stdout)
        assert head["ContentLength"] == BIG, head
        # The CLI uploads files over 8 MiB in 8 MiB parts: 25 of them.
        assert re.fullmatch(r'"[0-9a-f]{32}-25"', head["ETag"]), f"not a 25-part ETag: {head['ETag']}"
        t0 = time.time()
        self.aws("s3", "cp", "--no-progress", f"s3://{BUCKET}/big/big.bin", dst)
        print(f"downloaded {BIG // MiB} MiB in {time.time() - t0:.1f}s", flush=True)
        assert os.path.getsize(dst) == BIG, os.path.getsize(dst)
        assert H.sha256_file(src) == H.sha256_file(dst), "sha256 of the download differs"
        os.unlink(dst)
        os.unlink(src)

    def ls(self):
        p = self.aws("s3", "ls", f"s3://{BUCKET}/big/")
        lines = [l.split() for l in p.stdout.splitlines() if l.strip()]
        assert any(l[-1] == "big.bin" and l[-2] == str(BIG) for l in lines), p.stdout
        p = self.aws("s3", "ls", f"s3://{BUCKET}/")
        assert "PRE big/" in p.stdout, p.stdout

    def sync(self):
        tree = os.path.join(self.work, "tree")
        files = {}
        for i in range(12):
            rel = os.path.join(f"dir{i % 3}", f"sub{i % 2}", f"file{i}.txt") if i % 4 else f"top{i}.txt"
            files[rel] = os.urandom(100 + i * 997) if i != 5 else os.urandom(300_000)
        for rel, data in files.items():
            path = os.path.join(tree, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        p = self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/tree/")
        uploads = [l for l in p.stdout.splitlines() if l.startswith("upload:")]
        assert len(uploads) == len(files), f"{len(uploads)} uploads for {len(files)} files"
        p = self.aws("s3", "ls", "--recursive", f"s3://{BUCKET}/tree/")
        listed = sorted(l.split()[-1] for l in p.stdout.splitlines() if l.strip())
        assert listed == sorted("tree/" + r for r in files), listed
        # Nothing changed: nothing transferred.
        p = self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/tree/")
        assert not [l for l in p.stdout.splitlines() if l.startswith("upload:")], p.stdout
        # Change one file: only it is transferred.
        changed = sorted(files)[3]
        time.sleep(1.1)
        with open(os.path.join(tree, changed), "wb") as f:
            f.write(b"changed content, a different size")
        p = self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/tree/")
        uploads = [l for l in p.stdout.splitlines() if l.startswith("upload:")]
        assert len(uploads) == 1 and changed in uploads[0], f"expected only {changed}: {uploads}"
        # And back: download the tree and compare.
        down = os.path.join(self.work, "tree-down")
        self.aws("s3", "sync", "--no-progress", f"s3://{BUCKET}/tree/", down)
        for rel in files:
            with open(os.path.join(tree, rel), "rb") as a, open(os.path.join(down, rel), "rb") as b:
                assert a.read() == b.read(), f"{rel} differs after sync down"

    def sync_special_names(self):
        """Names that need URL encoding: `aws s3` lists with encoding-type=url."""
        tree = os.path.join(self.work, "special")
        names = ["with space.txt", "\u00fcml\u00e4ut/\u65e5\u672c.txt", "plus+and&amp.txt", "100%.txt"]
        for n in names:
            path = os.path.join(tree, n)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(n.encode() * 3)
        try:
            self._sync_special(tree, names)
        finally:  # leave the bucket clean for the next cases, whatever happened
            self.srv.client().delete_objects(
                Bucket=BUCKET, Delete={"Objects": [{"Key": "special/" + n} for n in names], "Quiet": True})

    def _sync_special(self, tree, names):
        p = self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/special/")
        assert len([l for l in p.stdout.splitlines() if l.startswith("upload:")]) == len(names), p.stdout
        p = self.aws("s3", "ls", "--recursive", f"s3://{BUCKET}/special/")
        listed = sorted(l.split(None, 3)[-1] for l in p.stdout.splitlines() if l.strip())
        assert listed == sorted("special/" + n for n in names), f"aws s3 ls shows {listed}"
        p = self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/special/")
        again = [l for l in p.stdout.splitlines() if l.startswith("upload:")]
        assert not again, f"unchanged files uploaded again: {again}"
        self.aws("s3", "rm", "--recursive", f"s3://{BUCKET}/special/")
        keys = self.srv.client().list_objects_v2(Bucket=BUCKET, Prefix="special/")
        left = [o["Key"] for o in keys.get("Contents", [])]
        assert not left, f"aws s3 rm --recursive left {left}"

    def rm_recursive(self):
        p = self.aws("s3", "rm", "--recursive", f"s3://{BUCKET}/tree/")
        deletes = [l for l in p.stdout.splitlines() if l.startswith("delete:")]
        assert len(deletes) == 12, f"{len(deletes)} deletes"
        p = self.aws("s3", "ls", "--recursive", f"s3://{BUCKET}/tree/", check=False)
        assert p.stdout.strip() == "", p.stdout
        p = self.aws("s3", "ls", "--recursive", f"s3://{BUCKET}/")
        assert "big/big.bin" in p.stdout, "rm --recursive removed objects outside the prefix"

    def head_object(self):
        data = b"head-object body"
        path = os.path.join(self.work, "small.txt")
        with open(path, "wb") as f:
            f.write(data)
        self.aws("s3", "cp", "--no-progress", "--content-type", "text/x-test", "--metadata", "k1=v1",
                 path, f"s3://{BUCKET}/small.txt")
        head = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "small.txt").stdout)
        assert head["ContentLength"] == len(data), head
        assert head["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"', head
        assert head["ContentType"] == "text/x-test", head
        assert head["Metadata"] == {"k1": "v1"}, head
        assert "LastModified" in head, head
        p = self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "missing", check=False)
        assert p.returncode != 0 and "404" in p.stderr, p.stderr

    def put_object_bad_md5(self):
        path = os.path.join(self.work, "md5.txt")
        with open(path, "wb") as f:
            f.write(b"the real body")
        wrong = base64.b64encode(hashlib.md5(b"another body").digest()).decode()
        p = self.aws("s3api", "put-object", "--bucket", BUCKET, "--key", "md5.txt", "--body", path,
                     "--content-md5", wrong, check=False)
        assert p.returncode != 0 and "BadDigest" in p.stderr, (p.returncode, p.stderr)
        p = self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "md5.txt", check=False)
        assert p.returncode != 0, "object created despite BadDigest"
        right = base64.b64encode(hashlib.md5(b"the real body").digest()).decode()
        p = self.aws("s3api", "put-object", "--bucket", BUCKET, "--key", "md5.txt", "--body", path,
                     "--content-md5", right)
        assert json.loads(p.stdout)["ETag"] == '"' + hashlib.md5(b"the real body").hexdigest() + '"', p.stdout

    def rb(self):
        p = self.aws("s3", "rb", f"s3://{BUCKET}", check=False)
        assert p.returncode != 0 and "BucketNotEmpty" in p.stderr, p.stderr
        self.aws("s3", "rb", "--force", f"s3://{BUCKET}")
        p = self.aws("s3", "ls")
        assert BUCKET not in p.stdout, p.stdout


def main():
    args = H.parse_args()
    runner = H.Runner("awscli")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        with H.tempdir() as work:
            t = AwsCliTests(srv, work)
            if runner.case("mb", t.mb):
                for name in ["cp_big", "ls", "sync", "sync_special_names", "rm_recursive", "head_object", "put_object_bad_md5", "rb"]:
                    runner.case(name, getattr(t, name))
                    if not srv.alive():
                        print(f"strata server died:\n{srv.log_tail()}", flush=True)
                        runner.results.append(("server alive", False, 0, "server process exited"))
                        break
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
