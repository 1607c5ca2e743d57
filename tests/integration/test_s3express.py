#!/usr/bin/python3
"""S3 Express One Zone with a current boto3 (>= 1.33; the Python 3.11 one is
1.43) against a real `strata server`: AWS's directory bucket examples with only
the endpoint changed (create_bucket with a Directory CreateBucketConfiguration,
put/get/list_objects_v2/delete_object, list_directory_buckets, delete_bucket),
then what sets directory buckets apart and what is refused.

botocore does S3 Express by itself for a bucket named *--x-s3: CreateSession
(GET /bucket?session, SigV4 for service "s3express"), then every request
signed with the session credentials and x-amz-s3session-token.

Debian's boto3 (1.26) predates S3 Express, so this script re-runs itself under
a Python whose boto3 has it (--python, $STRATA_IT_PYTHON311, python3.11 on PATH
or under ~/.pyenv); with none it exits 77 (skipped).

Usage: /usr/bin/python3 test_s3express.py --strata build/strata
"""

import glob
import io
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_BOTO3 = (1, 33)
SKIP = 77


def _boto3_version(python):
    try:
        out = subprocess.run([python, "-c", "import boto3; print(boto3.__version__)"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        return tuple(int(x) for x in out.stdout.strip().split(".")[:2])
    except ValueError:
        return None


def _reexec_if_needed():
    """Runs this script under a Python with boto3 >= 1.33, or exits 77."""
    try:
        import boto3  # noqa: F401
        if tuple(int(x) for x in boto3.__version__.split(".")[:2]) >= MIN_BOTO3:
            return
    except ImportError:
        pass
    if os.environ.get("STRATA_S3EXPRESS_REEXEC"):
        print("SKIP: the re-run interpreter has no boto3 >= 1.33", flush=True)
        sys.exit(SKIP)
    candidates = []
    if "--python" in sys.argv:
        candidates.append(sys.argv[sys.argv.index("--python") + 1])
    if os.environ.get("STRATA_IT_PYTHON311"):
        candidates.append(os.environ["STRATA_IT_PYTHON311"])
    for name in ("python3.11", "python3.12", "python3.13"):
        if shutil.which(name):
            candidates.append(shutil.which(name))
    home = os.path.expanduser("~")
    candidates += sorted(glob.glob(os.path.join(home, ".pyenv/versions/3.*/bin/python3")),
                         reverse=True)
    for py in candidates:
        v = _boto3_version(py)
        if v and v >= MIN_BOTO3:
            print(f"re-running under {py} (boto3 {'.'.join(map(str, v))})", flush=True)
            env = dict(os.environ, STRATA_S3EXPRESS_REEXEC="1")
            argv = [a for i, a in enumerate(sys.argv)
                    if a != "--python" and (i == 0 or sys.argv[i - 1] != "--python")]
            os.execve(py, [py] + argv, env)
    print("SKIP: no Python with boto3 >= 1.33 (S3 Express support) found", flush=True)
    sys.exit(SKIP)


_reexec_if_needed()

sys.path.insert(0, HERE)
import strata_harness as H  # noqa: E402

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

REGION = "us-west-2"
ZONE = "usw2-az1"
BUCKET = f"doc-example-bucket--{ZONE}--x-s3"
# The configuration of AWS's "Creating a directory bucket" example.
BUCKET_CONFIG = {
    "Location": {"Type": "AvailabilityZone", "Name": ZONE},
    "Bucket": {"Type": "Directory", "DataRedundancy": "SingleAvailabilityZone"},
}


def express_client(srv, access_key=None, secret_key=None, **cfg):
    """boto3.client('s3', region_name=...) as AWS's examples make it, plus the endpoint."""
    sess = boto3.session.Session(aws_access_key_id=access_key or srv.access_key,
                                 aws_secret_access_key=secret_key or srv.secret_key,
                                 region_name=REGION)
    config = Config(**cfg) if cfg else None
    return sess.client("s3", endpoint_url=srv.endpoint, config=config)


class ExpressTests:
    def __init__(self, srv, bob, carol):
        self.srv = srv
        self.bob = bob
        self.carol = carol
        self.s3 = express_client(srv)

    # ---- AWS's examples, unchanged but for endpoint_url
    def aws_examples(self):
        s3 = self.s3
        r = s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration=BUCKET_CONFIG)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 200, r
        s3.put_object(Bucket=BUCKET, Key="photos/2024/cat.jpg", Body=b"meow" * 1000)
        s3.put_object(Bucket=BUCKET, Key="photos/2024/dog.jpg", Body=b"woof")
        s3.put_object(Bucket=BUCKET, Key="readme.txt", Body=b"hello express")
        got = s3.get_object(Bucket=BUCKET, Key="photos/2024/cat.jpg")
        assert got["Body"].read() == b"meow" * 1000
        assert got.get("StorageClass") == "EXPRESS_ONEZONE", got
        listed = s3.list_objects_v2(Bucket=BUCKET)
        keys = sorted(o["Key"] for o in listed.get("Contents", []))
        assert keys == ["photos/2024/cat.jpg", "photos/2024/dog.jpg", "readme.txt"], listed
        under = s3.list_objects_v2(Bucket=BUCKET, Prefix="photos/", Delimiter="/")
        assert [p["Prefix"] for p in under.get("CommonPrefixes", [])] == ["photos/2024/"], under
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                             PaginationConfig={"PageSize": 1})
        assert sum(len(p.get("Contents", [])) for p in pages) == 3
        s3.delete_object(Bucket=BUCKET, Key="readme.txt")
        code = H.client_error_code(s3.get_object, Bucket=BUCKET, Key="readme.txt")
        assert code == (404, "NoSuchKey"), code
        dirs = s3.list_directory_buckets()
        assert [b["Name"] for b in dirs["Buckets"]] == [BUCKET], dirs
        general = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert BUCKET not in general, general
        head = s3.head_bucket(Bucket=BUCKET)
        hh = head["ResponseMetadata"]["HTTPHeaders"]
        assert hh.get("x-amz-bucket-location-name") == ZONE, hh
        assert hh.get("x-amz-bucket-location-type") == "AvailabilityZone", hh

    def multipart_and_copy(self):
        s3 = self.s3
        data = os.urandom(13 * H.MiB)
        s3.upload_fileobj(io.BytesIO(data), BUCKET, "big/thirteen.bin")
        head = s3.head_object(Bucket=BUCKET, Key="big/thirteen.bin")
        assert head["ContentLength"] == len(data), head
        out = io.BytesIO()
        s3.download_fileobj(BUCKET, "big/thirteen.bin", out)
        assert out.getvalue() == data, "downloaded bytes differ"
        s3.copy_object(Bucket=BUCKET, Key="big/copy.bin",
                       CopySource={"Bucket": BUCKET, "Key": "photos/2024/dog.jpg"})
        assert s3.get_object(Bucket=BUCKET, Key="big/copy.bin")["Body"].read() == b"woof"
        for k in ("big/thirteen.bin", "big/copy.bin"):
            s3.delete_object(Bucket=BUCKET, Key=k)

    def presigned_get(self):
        url = self.s3.generate_presigned_url("get_object",
                                             Params={"Bucket": BUCKET, "Key": "photos/2024/dog.jpg"},
                                             ExpiresIn=300)
        assert "X-Amz-S3session-Token=" in url, url
        r = H.url_request(url)
        assert r.status == 200 and r.body == b"woof", r

    def without_sessions(self):
        # disable_s3_express_session_auth: every request is plain SigV4 for "s3express".
        s3 = express_client(self.srv, s3={"disable_s3_express_session_auth": True})
        s3.put_object(Bucket=BUCKET, Key="nosession.txt", Body=b"plain")
        assert s3.get_object(Bucket=BUCKET, Key="nosession.txt")["Body"].read() == b"plain"
        s3.delete_object(Bucket=BUCKET, Key="nosession.txt")

    # ---- directory bucket rules
    def directory_bucket_rules(self):
        s3 = self.s3
        code = H.client_error_code(s3.list_objects, Bucket=BUCKET)
        assert code == (501, "NotImplemented"), code
        code = H.client_error_code(s3.list_objects_v2, Bucket=BUCKET, Prefix="photos")
        assert code == (400, "InvalidArgument"), code
        code = H.client_error_code(s3.list_objects_v2, Bucket=BUCKET, Delimiter="-")
        assert code == (400, "InvalidArgument"), code
        code = H.client_error_code(s3.put_object, Bucket=BUCKET, Key="x", Body=b"x",
                                   StorageClass="STANDARD")
        assert code == (400, "InvalidStorageClass"), code
        code = H.client_error_code(s3.get_bucket_acl, Bucket=BUCKET)
        assert code == (501, "NotImplemented"), code
        # --x-s3 names need a Directory configuration, and the zone must match.
        code = H.client_error_code(s3.create_bucket, Bucket=f"plain--{ZONE}--x-s3")
        assert code == (400, "InvalidBucketName"), code
        wrong = {"Location": {"Type": "AvailabilityZone", "Name": "usw2-az2"},
                 "Bucket": {"Type": "Directory", "DataRedundancy": "SingleAvailabilityZone"}}
        code = H.client_error_code(s3.create_bucket, Bucket=f"wrongzone--{ZONE}--x-s3",
                                   CreateBucketConfiguration=wrong)
        assert code == (400, "InvalidArgument"), code
        names = [b["Name"] for b in s3.list_directory_buckets()["Buckets"]]
        assert names == [BUCKET], names

    def other_user(self):
        bob = express_client(self.srv, *self.bob)
        code = H.client_error_code(bob.get_object, Bucket=BUCKET, Key="photos/2024/dog.jpg")
        assert code == (403, "AccessDenied"), code
        assert bob.list_directory_buckets()["Buckets"] == []
        mine = f"bob-bucket--{ZONE}--x-s3"
        bob.create_bucket(Bucket=mine, CreateBucketConfiguration=BUCKET_CONFIG)
        assert [b["Name"] for b in bob.list_directory_buckets()["Buckets"]] == [mine]
        carol = express_client(self.srv, *self.carol)
        code = H.client_error_code(carol.put_object, Bucket=mine, Key="k", Body=b"x")
        assert code == (403, "AccessDenied"), code
        code = H.client_error_code(carol.create_session, Bucket=mine)
        assert code == (403, "AccessDenied"), code
        bob.delete_bucket(Bucket=mine)

    def bad_session_tokens(self):
        creds = self.s3.create_session(Bucket=BUCKET)["Credentials"]
        exp = creds["Expiration"]
        left = exp.timestamp() - time.time()
        assert 240 < left <= 301, f"session lifetime {left}s, want 300"

        def get_with(token, secret=creds["SecretAccessKey"]):
            headers = {"x-amz-s3session-token": token}
            hdrs = _sign_s3express(self.srv, "GET", f"/{BUCKET}/photos/2024/dog.jpg", headers,
                                   creds["AccessKeyId"], secret)
            return H.http_request(self.srv.port, "GET", f"/{BUCKET}/photos/2024/dog.jpg", hdrs)

        r = get_with(creds["SessionToken"])
        assert r.status == 200 and r.body == b"woof", r
        t = creds["SessionToken"]
        forged = t[:-4] + ("AAAA" if t[-4:] != "AAAA" else "BBBB")
        H.assert_s3_error(get_with(forged), 400, "InvalidToken")
        H.assert_s3_error(get_with(creds["SessionToken"], secret="wrong"), 403,
                          "SignatureDoesNotMatch")

    def session_survives_restart(self):
        # Sessions are sealed tokens, not server state: a restart keeps them.
        creds = self.s3.create_session(Bucket=BUCKET)["Credentials"]
        self.srv.stop()
        self.srv.start()
        self.s3 = express_client(self.srv)
        path = f"/{BUCKET}/photos/2024/dog.jpg"
        hdrs = _sign_s3express(self.srv, "GET", path,
                               {"x-amz-s3session-token": creds["SessionToken"]},
                               creds["AccessKeyId"], creds["SecretAccessKey"])
        r = H.http_request(self.srv.port, "GET", path, hdrs)
        assert r.status == 200 and r.body == b"woof", r

    def presigned_expires_out_of_range(self):
        # The SigV4 defect: X-Amz-Expires over a week or negative -> 403.
        plain = self.srv.client()
        plain.create_bucket(Bucket="general-bucket")
        plain.put_object(Bucket="general-bucket", Key="k", Body=b"v")
        url = plain.generate_presigned_url("get_object",
                                           Params={"Bucket": "general-bucket", "Key": "k"},
                                           ExpiresIn=600)
        assert H.url_request(url).status == 200
        for v in ("604801", "-1"):
            H.assert_s3_error(H.url_request(url.replace("X-Amz-Expires=600", f"X-Amz-Expires={v}")),
                              403, "AuthorizationQueryParametersError")
        plain.delete_object(Bucket="general-bucket", Key="k")
        plain.delete_bucket(Bucket="general-bucket")

    def delete_bucket(self):
        s3 = self.s3
        code = H.client_error_code(s3.delete_bucket, Bucket=BUCKET)
        assert code == (409, "BucketNotEmpty"), code
        for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
            s3.delete_object(Bucket=BUCKET, Key=o["Key"])
        s3.delete_bucket(Bucket=BUCKET)
        assert s3.list_directory_buckets()["Buckets"] == []


def _sign_s3express(srv, method, path, headers, access_key, secret_key):
    """Headers of a request signed as botocore's S3ExpressAuth signs it."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=f"{srv.endpoint}{path}", headers=dict(headers), data=b"")
    S3SigV4Auth(Credentials(access_key, secret_key), "s3express", REGION).add_auth(req)
    return dict(req.headers.items())


def main():
    args = H.parse_args(lambda p: p.add_argument("--python", help="Python with boto3 >= 1.33"))
    print(f"boto3 {boto3.__version__} under {sys.executable}", flush=True)
    runner = H.Runner("s3express")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        # Users are added through the running server's admin API.
        bob, carol = srv.add_user("bob"), srv.add_user("carol")
        t = ExpressTests(srv, bob, carol)
        if not runner.case("aws_examples", t.aws_examples):
            return runner.finish()
        for name in ["multipart_and_copy", "presigned_get", "without_sessions",
                     "directory_bucket_rules", "other_user", "bad_session_tokens",
                     "session_survives_restart", "presigned_expires_out_of_range",
                     "delete_bucket"]:
            runner.case(name, getattr(t, name))
        if not srv.alive():
            runner.case("server alive", lambda: (_ for _ in ()).throw(
                RuntimeError("server died:\n" + srv.log_tail())))
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
