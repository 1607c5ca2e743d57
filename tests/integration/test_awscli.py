#!/usr/bin/python3
"""AWS CLI v2 (/usr/bin/aws) against a real `strata server`: the `aws s3`
commands (mb, cp single and multipart, ls, sync, mv, presign, rm, rb) and the
common `aws s3api` calls (objects, tagging, multipart by hand, bucket location).

`list-object-versions` must answer a real result or NotImplemented, not a
ListBucketResult.

Usage: /usr/bin/python3 test_awscli.py --strata build/strata
"""

import base64
import hashlib
import json
import os
import re
import sys
import time
import urllib.request

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

    def presign(self):
        data = b"presigned by the aws cli\n" * 10
        path = os.path.join(self.work, "presign.txt")
        with open(path, "wb") as f:
            f.write(data)
        self.aws("s3", "cp", "--no-progress", path, f"s3://{BUCKET}/presign.txt")
        url = self.aws("s3", "presign", f"s3://{BUCKET}/presign.txt", "--expires-in", "300").stdout.strip()
        assert "X-Amz-Signature=" in url, url
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200 and r.read() == data
        r = H.url_request(url.replace("presign.txt", "other.txt"))
        H.assert_s3_error(r, 403, "SignatureDoesNotMatch")

    def mv_and_copy(self):
        path = os.path.join(self.work, "mv.txt")
        with open(path, "wb") as f:
            f.write(b"moved\n")
        self.aws("s3", "mv", "--no-progress", path, f"s3://{BUCKET}/mv/a.txt")
        assert not os.path.exists(path), "aws s3 mv left the local file"
        self.aws("s3", "cp", "--no-progress", f"s3://{BUCKET}/mv/a.txt", f"s3://{BUCKET}/mv/copy.txt")
        self.aws("s3", "mv", "--no-progress", f"s3://{BUCKET}/mv/a.txt", f"s3://{BUCKET}/mv/b.txt")
        p = self.aws("s3", "ls", f"s3://{BUCKET}/mv/")
        names = sorted(l.split()[-1] for l in p.stdout.splitlines() if l.strip())
        assert names == ["b.txt", "copy.txt"], names
        out = os.path.join(self.work, "mv.out")
        self.aws("s3", "cp", "--no-progress", f"s3://{BUCKET}/mv/b.txt", out)
        assert open(out, "rb").read() == b"moved\n"
        # A multipart copy between keys (over the CLI's 8 MiB threshold).
        self.aws("s3", "cp", "--no-progress", f"s3://{BUCKET}/big/big.bin", f"s3://{BUCKET}/mv/big-copy.bin")
        a = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "big/big.bin").stdout)
        b = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "mv/big-copy.bin").stdout)
        assert a["ContentLength"] == b["ContentLength"] == BIG, (a, b)
        self.aws("s3", "rm", "--recursive", f"s3://{BUCKET}/mv/")

    def sync_delete(self):
        tree = os.path.join(self.work, "sd")
        for rel in ["keep.txt", "gone.txt", "sub/keep2.txt"]:
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "wb") as f:
                f.write(rel.encode())
        self.aws("s3", "sync", "--no-progress", tree, f"s3://{BUCKET}/sd/")
        os.unlink(os.path.join(tree, "gone.txt"))
        p = self.aws("s3", "sync", "--no-progress", "--delete", tree, f"s3://{BUCKET}/sd/")
        assert "delete: s3://" in p.stdout and "gone.txt" in p.stdout, p.stdout
        p = self.aws("s3", "ls", "--recursive", f"s3://{BUCKET}/sd/")
        listed = sorted(l.split()[-1] for l in p.stdout.splitlines() if l.strip())
        assert listed == ["sd/keep.txt", "sd/sub/keep2.txt"], listed
        p = self.aws("s3", "ls", "--recursive", "--summarize", f"s3://{BUCKET}/sd/")
        assert "Total Objects: 2" in p.stdout, p.stdout
        self.aws("s3", "rm", "--recursive", f"s3://{BUCKET}/sd/")

    def s3api_objects(self):
        path = os.path.join(self.work, "api.txt")
        with open(path, "wb") as f:
            f.write(b"s3api body")
        r = json.loads(self.aws("s3api", "put-object", "--bucket", BUCKET, "--key", "api/obj", "--body", path,
                                "--content-type", "text/x-api", "--metadata", "a=1,b=2",
                                "--tagging", "t1=v1").stdout)
        assert r["ETag"] == '"' + hashlib.md5(b"s3api body").hexdigest() + '"', r
        h = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "api/obj").stdout)
        assert h["ContentType"] == "text/x-api" and h["Metadata"] == {"a": "1", "b": "2"}, h
        out = os.path.join(self.work, "api.out")
        g = json.loads(self.aws("s3api", "get-object", "--bucket", BUCKET, "--key", "api/obj",
                                "--range", "bytes=0-4", out).stdout)
        assert open(out, "rb").read() == b"s3api" and g["ContentRange"] == "bytes 0-4/10", g
        # Tagging.
        t = json.loads(self.aws("s3api", "get-object-tagging", "--bucket", BUCKET, "--key", "api/obj").stdout)
        assert t["TagSet"] == [{"Key": "t1", "Value": "v1"}], t
        self.aws("s3api", "put-object-tagging", "--bucket", BUCKET, "--key", "api/obj",
                 "--tagging", json.dumps({"TagSet": [{"Key": "x", "Value": "y"}, {"Key": "z", "Value": ""}]}))
        t = json.loads(self.aws("s3api", "get-object-tagging", "--bucket", BUCKET, "--key", "api/obj").stdout)
        assert sorted((e["Key"], e["Value"]) for e in t["TagSet"]) == [("x", "y"), ("z", "")], t
        self.aws("s3api", "delete-object-tagging", "--bucket", BUCKET, "--key", "api/obj")
        t = json.loads(self.aws("s3api", "get-object-tagging", "--bucket", BUCKET, "--key", "api/obj").stdout)
        assert t["TagSet"] == [], t
        # Copy, with metadata replaced.
        self.aws("s3api", "copy-object", "--bucket", BUCKET, "--key", "api/copy",
                 "--copy-source", f"{BUCKET}/api/obj", "--metadata-directive", "REPLACE",
                 "--metadata", "c=3", "--content-type", "text/x-copy")
        h = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "api/copy").stdout)
        assert h["Metadata"] == {"c": "3"} and h["ContentType"] == "text/x-copy", h
        # Conditional reads.
        p = self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "api/obj",
                     "--if-none-match", r["ETag"], check=False)
        assert p.returncode != 0 and "304" in p.stderr, p.stderr
        # Listing with paging by the CLI (--page-size) and by hand (--max-items / --starting-token).
        for i in range(7):
            self.aws("s3api", "put-object", "--bucket", BUCKET, "--key", f"api/list/{i}", "--body", path)
        l = json.loads(self.aws("s3api", "list-objects-v2", "--bucket", BUCKET, "--prefix", "api/list/",
                                "--page-size", "3").stdout)
        assert [o["Key"] for o in l["Contents"]] == [f"api/list/{i}" for i in range(7)], l
        l = json.loads(self.aws("s3api", "list-objects-v2", "--bucket", BUCKET, "--prefix", "api/list/",
                                "--max-items", "4").stdout)
        assert len(l["Contents"]) == 4 and l.get("NextToken"), l
        l2 = json.loads(self.aws("s3api", "list-objects-v2", "--bucket", BUCKET, "--prefix", "api/list/",
                                 "--starting-token", l["NextToken"]).stdout)
        assert [o["Key"] for o in l2["Contents"]] == [f"api/list/{i}" for i in range(4, 7)], l2
        d = json.loads(self.aws("s3api", "delete-objects", "--bucket", BUCKET, "--delete",
                                json.dumps({"Objects": [{"Key": f"api/list/{i}"} for i in range(7)]})).stdout)
        assert len(d["Deleted"]) == 7 and not d.get("Errors"), d
        loc = json.loads(self.aws("s3api", "get-bucket-location", "--bucket", BUCKET).stdout)
        assert loc.get("LocationConstraint") in (None, ""), loc
        p = self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "api/missing", check=False)
        assert p.returncode != 0 and "404" in p.stderr, p.stderr
        self.aws("s3api", "delete-object", "--bucket", BUCKET, "--key", "api/copy")
        self.aws("s3api", "delete-object", "--bucket", BUCKET, "--key", "api/obj")

    def s3api_multipart(self):
        part = os.path.join(self.work, "part.bin")
        H.write_random_file(part, 5 * MiB)
        last = os.path.join(self.work, "last.bin")
        with open(last, "wb") as f:
            f.write(b"tail")
        up = json.loads(self.aws("s3api", "create-multipart-upload", "--bucket", BUCKET, "--key", "mp/obj").stdout)
        uid = up["UploadId"]
        lst = json.loads(self.aws("s3api", "list-multipart-uploads", "--bucket", BUCKET).stdout)
        assert [u["UploadId"] for u in lst.get("Uploads", [])] == [uid], lst
        e1 = json.loads(self.aws("s3api", "upload-part", "--bucket", BUCKET, "--key", "mp/obj", "--upload-id", uid,
                                 "--part-number", "1", "--body", part).stdout)["ETag"]
        e2 = json.loads(self.aws("s3api", "upload-part", "--bucket", BUCKET, "--key", "mp/obj", "--upload-id", uid,
                                 "--part-number", "2", "--body", last).stdout)["ETag"]
        parts = json.loads(self.aws("s3api", "list-parts", "--bucket", BUCKET, "--key", "mp/obj",
                                    "--upload-id", uid).stdout)
        assert [(p["PartNumber"], p["Size"]) for p in parts["Parts"]] == [(1, 5 * MiB), (2, 4)], parts
        r = json.loads(self.aws("s3api", "complete-multipart-upload", "--bucket", BUCKET, "--key", "mp/obj",
                                "--upload-id", uid, "--multipart-upload",
                                json.dumps({"Parts": [{"PartNumber": 1, "ETag": e1},
                                                      {"PartNumber": 2, "ETag": e2}]})).stdout)
        assert r["ETag"].endswith('-2"'), r
        h = json.loads(self.aws("s3api", "head-object", "--bucket", BUCKET, "--key", "mp/obj").stdout)
        assert h["ContentLength"] == 5 * MiB + 4, h
        # An aborted upload is gone.
        up = json.loads(self.aws("s3api", "create-multipart-upload", "--bucket", BUCKET, "--key", "mp/x").stdout)
        self.aws("s3api", "abort-multipart-upload", "--bucket", BUCKET, "--key", "mp/x", "--upload-id", up["UploadId"])
        p = self.aws("s3api", "list-parts", "--bucket", BUCKET, "--key", "mp/x", "--upload-id", up["UploadId"],
                     check=False)
        assert p.returncode != 0 and "NoSuchUpload" in p.stderr, p.stderr
        self.aws("s3", "rm", "--recursive", f"s3://{BUCKET}/mp/")

    def list_object_versions(self):
        """Strata keeps no versions: the answer is either a real ListVersionsResult
        (each object once, VersionId "null", IsLatest) or NotImplemented; never a
        ListBucketResult passed off as one."""
        path = os.path.join(self.work, "v.txt")
        with open(path, "wb") as f:
            f.write(b"v")
        self.aws("s3api", "put-object", "--bucket", BUCKET, "--key", "ver/a", "--body", path)
        p = self.aws("s3api", "list-object-versions", "--bucket", BUCKET, "--prefix", "ver/", check=False)
        if p.returncode == 0:
            v = json.loads(p.stdout or "{}")  # the CLI prints nothing for an empty result
            got = [(x["Key"], x.get("VersionId"), x.get("IsLatest")) for x in v.get("Versions", [])]
            assert got == [("ver/a", "null", True)], v
        else:
            assert "NotImplemented" in p.stderr, p.stderr
        self.aws("s3api", "delete-object", "--bucket", BUCKET, "--key", "ver/a")

    def sse_c(self):
        key = os.path.join(self.work, "ssec.key")
        with open(key, "wb") as f:
            f.write(os.urandom(32))
        src = os.path.join(self.work, "ssec.bin")
        H.write_random_file(src, 20 * MiB + 5)  # multipart with the key on every part
        self.aws("s3", "cp", "--no-progress", "--sse-c", "AES256", "--sse-c-key", f"fileb://{key}", src,
                 f"s3://{BUCKET}/ssec.bin")
        dst = src + ".out"
        self.aws("s3", "cp", "--no-progress", "--sse-c", "AES256", "--sse-c-key", f"fileb://{key}",
                 f"s3://{BUCKET}/ssec.bin", dst)
        assert H.sha256_file(src) == H.sha256_file(dst)
        p = self.aws("s3", "cp", "--no-progress", f"s3://{BUCKET}/ssec.bin", dst + "2", check=False)
        assert p.returncode != 0 and "400" in p.stderr, p.stderr
        self.aws("s3", "rm", f"s3://{BUCKET}/ssec.bin")

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
                names = ["cp_big", "ls", "sync", "sync_special_names", "rm_recursive", "head_object",
                         "put_object_bad_md5", "presign", "mv_and_copy", "sync_delete", "s3api_objects",
                         "s3api_multipart", "list_object_versions"]
                names += ["sse_c"]
                for name in names + ["rb"]:
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
