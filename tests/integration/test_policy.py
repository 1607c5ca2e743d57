#!/usr/bin/env python3
"""Users, user policies, bucket policies, PublicAccessBlock and ACL grants on a
real `strata server`, driven by `strata user add|ls|policy|rm` (the admin API,
while the server runs) and boto3. Expected behaviour is AWS's: explicit deny,
then allow, else implicit deny; a bucket owner needs no Allow; anonymous
callers only get what Principal "*" or an AllUsers grant gives them.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402


class PolicyTests:
    def __init__(self, srv, work):
        self.srv = srv
        self.work = work
        self.root = srv.client()
        self.anon = srv.client(unsigned=True, retries=1)

    def users_at_runtime(self):
        ak, sk = self.srv.add_user("carol")
        carol = self.srv.client(access_key=ak, secret_key=sk, retries=1)
        # Works at once: no restart.
        carol.create_bucket(Bucket="carol-bucket")
        carol.put_object(Bucket="carol-bucket", Key="k", Body=b"carol")
        ls = self.srv.user_cmd("ls").stdout
        assert "carol" in ls and ak in ls, ls
        assert sk not in ls, "ls printed a secret key"
        listed = json.loads(self.srv.user_cmd("ls", "--json").stdout)
        assert [u["name"] for u in listed["users"] if u["name"] == "carol"] == ["carol"], listed
        # The same name twice: refused, exit code 5.
        out = self.srv.user_cmd("add", "carol", check=False)
        assert out.returncode == 5, (out.returncode, out.stderr)
        # A user policy denying PutObject: effective on the next request.
        pol = os.path.join(self.work, "deny-put.json")
        with open(pol, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Deny", "Action": "s3:PutObject", "Resource": "*"}]}, f)
        self.srv.user_cmd("policy", "carol", pol)
        st, code = H.client_error_code(carol.put_object, Bucket="carol-bucket", Key="k2", Body=b"x")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        shown = self.srv.user_cmd("policy", "carol", "--show").stdout
        assert json.loads(shown)["Statement"][0]["Effect"] == "Deny", shown
        # A malformed policy: refused (exit 2), the old one stays.
        bad = os.path.join(self.work, "bad.json")
        with open(bad, "w") as f:
            f.write('{"Statement": [{"Effect": "Allow"}]}')
        out = self.srv.user_cmd("policy", "carol", bad, check=False)
        assert out.returncode == 2 and "MalformedPolicy" in out.stderr, (out.returncode, out.stderr)
        st, code = H.client_error_code(carol.put_object, Bucket="carol-bucket", Key="k2", Body=b"x")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        self.srv.user_cmd("policy", "carol", "--delete")
        carol.put_object(Bucket="carol-bucket", Key="k2", Body=b"x")
        # Removed: the keys stop working at once.
        self.root.delete_object(Bucket="carol-bucket", Key="k")
        self.root.delete_object(Bucket="carol-bucket", Key="k2")
        self.srv.user_cmd("rm", "carol")
        st, code = H.client_error_code(carol.list_buckets)
        assert (st, code) == (403, "InvalidAccessKeyId"), (st, code)
        out = self.srv.user_cmd("rm", "carol", check=False)
        assert out.returncode == 3, (out.returncode, out.stderr)

    def cli_errors(self):
        # Wrong root secret: 401 -> exit 4; no server: a clear error, exit 6.
        out = subprocess.run([self.srv.binary, "user", "ls", "--endpoint",
                              f"http://127.0.0.1:{self.srv.admin_port}"],
                             capture_output=True, text=True, timeout=30,
                             env=H.clean_env({"STRATA_ROOT_PASSWORD": "wrong-secret"}))
        assert out.returncode == 4, (out.returncode, out.stderr)
        port = H.free_port()
        out = subprocess.run([self.srv.binary, "user", "ls", "--endpoint", f"http://127.0.0.1:{port}"],
                             capture_output=True, text=True, timeout=30,
                             env=H.clean_env({"STRATA_ROOT_PASSWORD": self.srv.secret_key}))
        assert out.returncode == 6 and "cannot reach" in out.stderr and "strata server" in out.stderr, \
            (out.returncode, out.stderr)

    def bucket_policy(self):
        bk = "policy-bkt"
        self.root.create_bucket(Bucket=bk)
        self.root.put_object(Bucket=bk, Key="public/a", Body=b"aaa")
        self.root.put_object(Bucket=bk, Key="private/b", Body=b"bbb")
        st, code = H.client_error_code(self.root.get_bucket_policy, Bucket=bk)
        assert (st, code) == (404, "NoSuchBucketPolicy"), (st, code)
        st, code = H.client_error_code(self.root.put_bucket_policy, Bucket=bk, Policy="{not json")
        assert (st, code) == (400, "MalformedPolicy"), (st, code)
        policy = {"Version": "2012-10-17", "Statement": [
            {"Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": f"arn:aws:s3:::{bk}/public/*"}]}
        self.root.put_bucket_policy(Bucket=bk, Policy=json.dumps(policy))
        got = json.loads(self.root.get_bucket_policy(Bucket=bk)["Policy"])
        assert got == policy, got
        assert self.root.get_bucket_policy_status(Bucket=bk)["PolicyStatus"]["IsPublic"] is True
        assert self.anon.get_object(Bucket=bk, Key="public/a")["Body"].read() == b"aaa"
        st, code = H.client_error_code(self.anon.get_object, Bucket=bk, Key="private/b")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        # RestrictPublicBuckets switches the public statement off for anonymous callers.
        self.root.put_public_access_block(Bucket=bk, PublicAccessBlockConfiguration={
            "BlockPublicAcls": False, "IgnorePublicAcls": False,
            "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
        cfg = self.root.get_public_access_block(Bucket=bk)["PublicAccessBlockConfiguration"]
        assert cfg == {"BlockPublicAcls": False, "IgnorePublicAcls": False,
                       "BlockPublicPolicy": True, "RestrictPublicBuckets": True}, cfg
        st, code = H.client_error_code(self.anon.get_object, Bucket=bk, Key="public/a")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        # BlockPublicPolicy refuses a new public policy.
        st, code = H.client_error_code(self.root.put_bucket_policy, Bucket=bk, Policy=json.dumps(policy))
        assert st == 403, (st, code)
        self.root.delete_public_access_block(Bucket=bk)
        st, code = H.client_error_code(self.root.get_public_access_block, Bucket=bk)
        assert (st, code) == (404, "NoSuchPublicAccessBlockConfiguration"), (st, code)
        assert self.anon.get_object(Bucket=bk, Key="public/a")["Body"].read() == b"aaa"
        self.root.delete_bucket_policy(Bucket=bk)
        st, code = H.client_error_code(self.anon.get_object, Bucket=bk, Key="public/a")
        assert (st, code) == (403, "AccessDenied"), (st, code)

    def cross_user_policy(self):
        # dan owns a bucket; erin gets read on one prefix through dan's bucket
        # policy and is denied a key explicitly; frank has nothing.
        dak, dsk = self.srv.add_user("dan")
        eak, esk = self.srv.add_user("erin")
        fak, fsk = self.srv.add_user("frank")
        dan = self.srv.client(access_key=dak, secret_key=dsk, retries=1)
        erin = self.srv.client(access_key=eak, secret_key=esk, retries=1)
        frank = self.srv.client(access_key=fak, secret_key=fsk, retries=1)
        bk = "dan-bucket"
        dan.create_bucket(Bucket=bk)
        for k in ("team/1", "team/secret", "home/x"):
            dan.put_object(Bucket=bk, Key=k, Body=k.encode())
        dan.put_bucket_policy(Bucket=bk, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam::000000000000:user/erin"]},
             "Action": ["s3:GetObject", "s3:PutObject"], "Resource": f"arn:aws:s3:::{bk}/team/*"},
            {"Effect": "Allow", "Principal": {"AWS": eak}, "Action": "s3:ListBucket",
             "Resource": f"arn:aws:s3:::{bk}", "Condition": {"StringLike": {"s3:prefix": "team/*"}}},
            {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
             "Resource": f"arn:aws:s3:::{bk}/team/secret"}]}))
        assert erin.get_object(Bucket=bk, Key="team/1")["Body"].read() == b"team/1"
        erin.put_object(Bucket=bk, Key="team/by-erin", Body=b"e")
        assert dan.get_object(Bucket=bk, Key="team/by-erin")["Body"].read() == b"e"
        keys = [o["Key"] for o in erin.list_objects_v2(Bucket=bk, Prefix="team/")["Contents"]]
        assert keys == ["team/1", "team/by-erin", "team/secret"], keys
        for fn, kw in [(erin.list_objects_v2, {"Bucket": bk}),
                       (erin.get_object, {"Bucket": bk, "Key": "team/secret"}),
                       (erin.get_object, {"Bucket": bk, "Key": "home/x"}),
                       (erin.delete_object, {"Bucket": bk, "Key": "team/1"}),
                       (dan.get_object, {"Bucket": bk, "Key": "team/secret"}),  # the owner too
                       (frank.get_object, {"Bucket": bk, "Key": "team/1"}),
                       (frank.put_object, {"Bucket": bk, "Key": "team/f", "Body": b"f"})]:
            st, code = H.client_error_code(fn, **kw)
            assert (st, code) == (403, "AccessDenied"), (fn.__name__, kw, st, code)
        assert [o["Key"] for o in dan.list_objects_v2(Bucket=bk)["Contents"]] == \
            ["home/x", "team/1", "team/by-erin", "team/secret"]
        # A user policy gives frank what the bucket policy does not.
        pol = os.path.join(self.work, "frank.json")
        with open(pol, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bk}/home/*"}]}, f)
        self.srv.user_cmd("policy", "frank", pol)
        assert frank.get_object(Bucket=bk, Key="home/x")["Body"].read() == b"home/x"
        self.dan, self.erin, self.frank, self.eak, self.fak, self.fsk = dan, erin, frank, eak, fak, fsk

    def acl_grants(self):
        bk = "acl-grants"
        dan, frank = self.dan, self.frank
        dan.create_bucket(Bucket=bk)
        dan.put_object(Bucket=bk, Key="obj", Body=b"granted")
        st, code = H.client_error_code(frank.list_objects_v2, Bucket=bk)
        assert (st, code) == (403, "AccessDenied"), (st, code)
        # The grantee id is frank's canonical id, as ListBuckets reports it.
        fid = frank.list_buckets()["Owner"]["ID"]
        assert fid == self.fak, fid
        owner = dan.get_bucket_acl(Bucket=bk)["Owner"]
        dan.put_bucket_acl(Bucket=bk, AccessControlPolicy={"Owner": owner, "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]}, "Permission": "FULL_CONTROL"},
            {"Grantee": {"Type": "CanonicalUser", "ID": fid}, "Permission": "READ"}]})
        grants = dan.get_bucket_acl(Bucket=bk)["Grants"]
        assert {(g["Grantee"].get("ID"), g["Permission"]) for g in grants} == \
            {(owner["ID"], "FULL_CONTROL"), (fid, "READ")}, grants
        assert [o["Key"] for o in frank.list_objects_v2(Bucket=bk)["Contents"]] == ["obj"]
        st, code = H.client_error_code(frank.put_object, Bucket=bk, Key="no", Body=b"x")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        # Grant header form; an unknown id is refused.
        dan.put_bucket_acl(Bucket=bk, GrantWrite=f'id="{fid}"', GrantFullControl=f'id="{owner["ID"]}"')
        frank.put_object(Bucket=bk, Key="from-frank", Body=b"f")
        st, code = H.client_error_code(dan.put_bucket_acl, Bucket=bk, GrantRead='id="NOSUCHUSER"')
        assert st == 400, (st, code)
        # An object ACL: public-read on one object.
        dan.put_object_acl(Bucket=bk, Key="obj", ACL="public-read")
        assert self.anon.get_object(Bucket=bk, Key="obj")["Body"].read() == b"granted"
        st, code = H.client_error_code(self.anon.get_object, Bucket=bk, Key="from-frank")
        assert (st, code) == (403, "AccessDenied"), (st, code)
        uris = [g["Grantee"].get("URI") for g in dan.get_object_acl(Bucket=bk, Key="obj")["Grants"]]
        assert "http://acs.amazonaws.com/groups/global/AllUsers" in uris, uris

    def missing_bucket_anonymous(self):
        self.root.create_bucket(Bucket="soon-gone")
        self.root.delete_bucket(Bucket="soon-gone")
        st, code = H.client_error_code(self.anon.get_object, Bucket="soon-gone", Key="k")
        assert (st, code) == (404, "NoSuchBucket"), (st, code)
        st, code = H.client_error_code(self.anon.list_objects_v2, Bucket="soon-gone")
        assert (st, code) == (404, "NoSuchBucket"), (st, code)


def main():
    args = H.parse_args()
    runner = H.Runner("policy")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        with H.tempdir() as work:
            t = PolicyTests(srv, work)
            for name in ["users_at_runtime", "cli_errors", "bucket_policy", "cross_user_policy",
                         "acl_grants", "missing_bucket_anonymous"]:
                runner.case(name, getattr(t, name))
                if not srv.alive():
                    print(f"strata server died:\n{srv.log_tail()}", flush=True)
                    break
            # Users survive a restart (DATA/users, mode 0600).
            def restart():
                srv.stop()
                srv.start()
                ls = srv.user_cmd("ls").stdout
                assert "dan" in ls and "frank" in ls and "carol" not in ls, ls
                mode = os.stat(os.path.join(srv.data_dir, "users")).st_mode & 0o777
                assert mode == 0o600, oct(mode)
                frank = srv.client(access_key=t.fak, secret_key=t.fsk, retries=1)
                assert frank.get_object(Bucket="dan-bucket", Key="home/x")["Body"].read() == b"home/x"
            runner.case("restart", restart)
    finally:
        srv.stop()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
