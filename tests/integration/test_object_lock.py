#!/usr/bin/python3
"""S3 Object Lock with boto3 (Debian boto3 1.26) against a real `strata server`.

Written from the AWS S3 User Guide ("Locking objects with Object Lock") and
API Reference (CreateBucket x-amz-bucket-object-lock-enabled,
Put/GetObjectLockConfiguration, Put/GetObjectRetention, Put/GetObjectLegalHold,
DeleteObject, PutObject's x-amz-object-lock-* headers):
  * a bucket created with Object Lock has versioning Enabled and cannot
    suspend it (409 InvalidBucketState); an existing bucket gets Object Lock
    only once its versioning is Enabled; bad documents change nothing;
  * default retention (days) applies to PUT, multipart and copy; a write with
    a retention needs Content-MD5 or a checksum (400 InvalidRequest, nothing
    stored); lock headers on a bucket without Object Lock are refused;
  * COMPLIANCE: the version cannot be deleted (403 AccessDenied, bypass or
    not), its retention can be extended but not shortened or turned into
    GOVERNANCE; a DELETE without version id still adds a delete marker;
  * GOVERNANCE: deleting or shortening needs x-amz-bypass-governance-retention
    and the s3:BypassGovernanceRetention permission (a user without it is refused);
  * legal hold ON refuses deletes until it is OFF, whatever the retention;
  * DeleteObjects answers AccessDenied per locked key;
  * the headers on HEAD/GET; the clock (test-only --test-clock-file) moved past
    the retention frees the version; lifecycle's NoncurrentVersionExpiration
    keeps retained versions and removes the others;
  * everything survives kill -9 and a restart.

Usage: /usr/bin/python3 test_object_lock.py --strata build/strata
"""

import datetime
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402

DAY = 86400
LOCKED = (403, "AccessDenied")
BAD_REQ = (400, "InvalidRequest")
BAD_ARG = (400, "InvalidArgument")
BAD_STATE = (409, "InvalidBucketState")
NO_LOCK = (404, "NoSuchObjectLockConfiguration")


def err(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
    raise AssertionError(f"{fn.__name__} did not fail")


def versions(s3, bucket, key):
    r = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return ([v for v in r.get("Versions", []) if v["Key"] == key],
            [m for m in r.get("DeleteMarkers", []) if m["Key"] == key])


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc)


def lifecycle_metrics(srv):
    return H.prom_metrics(srv, "strata_s3_lifecycle_")


class LockTests:
    def __init__(self, srv, clock):
        self.srv = srv
        self.s3 = srv.client()
        self.clock = clock
        self.set_clock(time.time())

    def set_clock(self, t):
        self.clock.set(t)
        self.now = t

    def put(self, bucket, key, body=b"data", **kw):
        return self.s3.put_object(Bucket=bucket, Key=key, Body=body,
                                  ContentMD5=H.md5_b64(body), **kw)

    # ---- buckets ----
    def buckets(self):
        s3 = self.s3
        s3.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
        assert s3.get_bucket_versioning(Bucket="locked")["Status"] == "Enabled"
        cfg = s3.get_object_lock_configuration(Bucket="locked")["ObjectLockConfiguration"]
        assert cfg == {"ObjectLockEnabled": "Enabled"}, cfg
        assert err(s3.put_bucket_versioning, Bucket="locked",
                   VersioningConfiguration={"Status": "Suspended"}) == BAD_STATE
        assert s3.get_bucket_versioning(Bucket="locked")["Status"] == "Enabled"
        # A bucket without Object Lock: none to get; none until versioning is Enabled.
        s3.create_bucket(Bucket="plain")
        assert err(s3.get_object_lock_configuration, Bucket="plain") == (
            404, "ObjectLockConfigurationNotFoundError")
        doc = {"ObjectLockEnabled": "Enabled"}
        assert err(s3.put_object_lock_configuration, Bucket="plain",
                   ObjectLockConfiguration=doc) == BAD_STATE
        assert err(s3.get_object_lock_configuration, Bucket="plain")[0] == 404
        s3.create_bucket(Bucket="later")
        s3.put_bucket_versioning(Bucket="later", VersioningConfiguration={"Status": "Enabled"})
        s3.put_object_lock_configuration(Bucket="later", ObjectLockConfiguration=doc)
        assert s3.get_object_lock_configuration(Bucket="later")["ObjectLockConfiguration"] == doc
        assert err(s3.put_bucket_versioning, Bucket="later",
                   VersioningConfiguration={"Status": "Suspended"}) == BAD_STATE
        # Documents S3 refuses change nothing.
        for bad, want in [
            ({"ObjectLockEnabled": "Enabled",
              "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}, BAD_ARG),
            ({"ObjectLockEnabled": "Enabled",
              "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}},
             (400, "MalformedXML")),
            ({"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Days": 1}}},
             (400, "MalformedXML")),
        ]:
            assert err(s3.put_object_lock_configuration, Bucket="locked",
                       ObjectLockConfiguration=bad) == want, bad
        assert s3.get_object_lock_configuration(Bucket="locked")["ObjectLockConfiguration"] == {
            "ObjectLockEnabled": "Enabled"}
        # Lock headers on a bucket without Object Lock: refused, nothing written.
        until = utc(self.now + DAY)
        assert err(self.put, "plain", "k", ObjectLockMode="GOVERNANCE",
                   ObjectLockRetainUntilDate=until) == BAD_REQ
        assert err(self.put, "plain", "k", ObjectLockLegalHoldStatus="ON") == BAD_REQ
        assert "Contents" not in s3.list_objects_v2(Bucket="plain")
        self.put("plain", "k")
        assert err(s3.get_object_retention, Bucket="plain", Key="k") == BAD_REQ
        assert err(s3.put_object_legal_hold, Bucket="plain", Key="k",
                   LegalHold={"Status": "ON"}) == BAD_REQ

    # ---- default retention ----
    def default_retention(self):
        s3 = self.s3
        s3.create_bucket(Bucket="dflt", ObjectLockEnabledForBucket=True)
        rule = {"ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}}}
        s3.put_object_lock_configuration(Bucket="dflt", ObjectLockConfiguration=rule)
        assert s3.get_object_lock_configuration(Bucket="dflt")["ObjectLockConfiguration"] == rule
        # No Content-MD5 and no checksum (boto3 adds one, so a raw signed PUT):
        # refused, no version created.
        r = H.signed_request(self.srv, "PUT", "/dflt/nomd5", body=b"x")
        H.assert_s3_error(r, *BAD_REQ)
        assert versions(s3, "dflt", "nomd5") == ([], [])
        r = H.signed_request(self.srv, "PUT", "/dflt/md5", body=b"x",
                             headers={"Content-MD5": H.md5_b64(b"x")})
        assert r.status == 200, r
        # A checksum does as well as Content-MD5.
        s3.put_object(Bucket="dflt", Key="sha", Body=b"x", ChecksumAlgorithm="SHA256")
        t0 = self.now
        self.put("dflt", "a")
        h = s3.head_object(Bucket="dflt", Key="a")
        assert h["ObjectLockMode"] == "GOVERNANCE", h
        until = h["ObjectLockRetainUntilDate"].timestamp()
        assert abs(until - (t0 + 2 * DAY)) < 5, (until, t0)
        r = s3.get_object_retention(Bucket="dflt", Key="a")["Retention"]
        assert r["Mode"] == "GOVERNANCE" and abs(r["RetainUntilDate"].timestamp() - until) < 1, r
        g = s3.get_object(Bucket="dflt", Key="a")
        assert g["ObjectLockMode"] == "GOVERNANCE" and g["Body"].read() == b"data"
        assert "ObjectLockLegalHoldStatus" not in h
        # An explicit retention wins over the default one.
        self.put("dflt", "b", ObjectLockMode="COMPLIANCE",
                 ObjectLockRetainUntilDate=utc(t0 + 5 * DAY))
        assert s3.head_object(Bucket="dflt", Key="b")["ObjectLockMode"] == "COMPLIANCE"
        # Multipart: the default applies to the completed object.
        up = s3.create_multipart_upload(Bucket="dflt", Key="mp")
        part = b"p" * (5 << 20)
        e1 = s3.upload_part(Bucket="dflt", Key="mp", UploadId=up["UploadId"], PartNumber=1,
                            Body=part, ContentMD5=H.md5_b64(part))["ETag"]
        s3.complete_multipart_upload(Bucket="dflt", Key="mp", UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
        assert s3.head_object(Bucket="dflt", Key="mp")["ObjectLockMode"] == "GOVERNANCE"
        # A copy gets the destination's lock, not its source's.
        s3.copy_object(Bucket="plain", Key="copied", CopySource={"Bucket": "dflt", "Key": "b"})
        h = s3.head_object(Bucket="plain", Key="copied")
        assert "ObjectLockMode" not in h, h
        s3.copy_object(Bucket="dflt", Key="c2", CopySource={"Bucket": "dflt", "Key": "b"})
        assert s3.head_object(Bucket="dflt", Key="c2")["ObjectLockMode"] == "GOVERNANCE"
        # Header errors: mode without date, a date in the past, a bad mode, a bad hold.
        assert err(self.put, "dflt", "e", ObjectLockMode="GOVERNANCE") == BAD_ARG
        assert err(self.put, "dflt", "e", ObjectLockMode="GOVERNANCE",
                   ObjectLockRetainUntilDate=utc(self.now - 60)) == BAD_ARG
        assert err(self.put, "dflt", "e", ObjectLockMode="FOREVER",
                   ObjectLockRetainUntilDate=utc(self.now + 60)) == BAD_ARG
        assert err(self.put, "dflt", "e", ObjectLockLegalHoldStatus="MAYBE") == BAD_ARG
        assert versions(s3, "dflt", "e") == ([], [])
        # Removing the rule: new versions are not retained, old ones stay so.
        s3.put_object_lock_configuration(Bucket="dflt",
                                         ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
        s3.put_object(Bucket="dflt", Key="free", Body=b"x")
        assert "ObjectLockMode" not in s3.head_object(Bucket="dflt", Key="free")
        assert err(s3.get_object_retention, Bucket="dflt", Key="free") == NO_LOCK
        assert s3.head_object(Bucket="dflt", Key="a")["ObjectLockMode"] == "GOVERNANCE"

    # ---- compliance ----
    def compliance(self):
        s3 = self.s3
        until = self.now + DAY
        v = self.put("locked", "comp", ObjectLockMode="COMPLIANCE",
                     ObjectLockRetainUntilDate=utc(until))["VersionId"]
        h = s3.head_object(Bucket="locked", Key="comp", VersionId=v)
        assert h["ObjectLockMode"] == "COMPLIANCE", h
        assert abs(h["ObjectLockRetainUntilDate"].timestamp() - until) < 1
        assert err(s3.delete_object, Bucket="locked", Key="comp", VersionId=v) == LOCKED
        assert err(s3.delete_object, Bucket="locked", Key="comp", VersionId=v,
                   BypassGovernanceRetention=True) == LOCKED
        # Shorter, removed, or governance: refused; longer: kept.
        for ret in [{"Mode": "COMPLIANCE", "RetainUntilDate": utc(until - 3600)},
                    {"Mode": "GOVERNANCE", "RetainUntilDate": utc(until + DAY)}]:
            assert err(s3.put_object_retention, Bucket="locked", Key="comp", VersionId=v,
                       Retention=ret, BypassGovernanceRetention=True) == LOCKED, ret
        s3.put_object_retention(Bucket="locked", Key="comp", VersionId=v,
                                Retention={"Mode": "COMPLIANCE",
                                           "RetainUntilDate": utc(until + DAY)})
        r = s3.get_object_retention(Bucket="locked", Key="comp", VersionId=v)["Retention"]
        assert r["Mode"] == "COMPLIANCE" and abs(r["RetainUntilDate"].timestamp() -
                                                 (until + DAY)) < 1, r
        # DELETE without a version id adds a marker; the version stays readable.
        d = s3.delete_object(Bucket="locked", Key="comp")
        assert d["DeleteMarker"], d
        assert s3.get_object(Bucket="locked", Key="comp", VersionId=v)["Body"].read() == b"data"
        # DeleteObjects: the locked key is an AccessDenied error, the marker is removable.
        r = s3.delete_objects(Bucket="locked", Delete={"Objects": [
            {"Key": "comp", "VersionId": v},
            {"Key": "comp", "VersionId": d["VersionId"]}]})
        assert [(e["Key"], e["Code"]) for e in r.get("Errors", [])] == [("comp", "AccessDenied")], r
        assert [x["VersionId"] for x in r["Deleted"]] == [d["VersionId"]], r
        vs, markers = versions(s3, "locked", "comp")
        assert [x["VersionId"] for x in vs] == [v] and markers == [], (vs, markers)
        # Retention of the past: refused.
        assert err(s3.put_object_retention, Bucket="locked", Key="comp", VersionId=v,
                   Retention={"Mode": "COMPLIANCE", "RetainUntilDate": utc(self.now - 10)}) \
            == BAD_ARG
        self.comp_version = v

    # ---- governance ----
    def governance(self):
        s3 = self.s3
        until = self.now + DAY
        v = self.put("locked", "gov", ObjectLockMode="GOVERNANCE",
                     ObjectLockRetainUntilDate=utc(until))["VersionId"]
        assert err(s3.delete_object, Bucket="locked", Key="gov", VersionId=v) == LOCKED
        # Shortening needs the bypass; extending does not.
        short = {"Mode": "GOVERNANCE", "RetainUntilDate": utc(until - 3600)}
        assert err(s3.put_object_retention, Bucket="locked", Key="gov", VersionId=v,
                   Retention=short) == LOCKED
        s3.put_object_retention(Bucket="locked", Key="gov", VersionId=v, Retention=short,
                                BypassGovernanceRetention=True)
        got = s3.get_object_retention(Bucket="locked", Key="gov", VersionId=v)["Retention"]
        assert abs(got["RetainUntilDate"].timestamp() - (until - 3600)) < 1, got
        # A user allowed to delete versions, but not to bypass governance.
        ak, sk = self.srv.add_user("olga")
        arn = "arn:aws:s3:::locked"
        stmt = {"Effect": "Allow", "Principal": {"AWS": [ak]},
                "Action": ["s3:GetObject", "s3:DeleteObject", "s3:DeleteObjectVersion",
                           "s3:PutObjectRetention", "s3:GetObjectRetention"],
                "Resource": [arn + "/*"]}
        s3.put_bucket_policy(Bucket="locked", Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [stmt]}))
        olga = self.srv.client(access_key=ak, secret_key=sk)
        assert err(olga.delete_object, Bucket="locked", Key="gov", VersionId=v,
                   BypassGovernanceRetention=True) == LOCKED
        assert err(olga.put_object_retention, Bucket="locked", Key="gov", VersionId=v,
                   Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(until - 7200)},
                   BypassGovernanceRetention=True) == LOCKED
        stmt2 = dict(stmt, Action=["s3:BypassGovernanceRetention"])
        s3.put_bucket_policy(Bucket="locked", Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [stmt, stmt2]}))
        olga.delete_object(Bucket="locked", Key="gov", VersionId=v, BypassGovernanceRetention=True)
        assert versions(s3, "locked", "gov")[0] == []
        s3.delete_bucket_policy(Bucket="locked")
        # Governance -> compliance strengthens: no bypass needed, and then it holds.
        v2 = self.put("locked", "gov2", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=utc(until))["VersionId"]
        s3.put_object_retention(Bucket="locked", Key="gov2", VersionId=v2,
                                Retention={"Mode": "COMPLIANCE", "RetainUntilDate": utc(until)})
        assert err(s3.delete_object, Bucket="locked", Key="gov2", VersionId=v2,
                   BypassGovernanceRetention=True) == LOCKED
        # DeleteObjects with the bypass removes a governance version.
        v3 = self.put("locked", "gov3", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=utc(until))["VersionId"]
        r = s3.delete_objects(Bucket="locked", Delete={"Objects": [{"Key": "gov3", "VersionId": v3}]})
        assert [e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"], r
        r = s3.delete_objects(Bucket="locked", BypassGovernanceRetention=True,
                              Delete={"Objects": [{"Key": "gov3", "VersionId": v3}]})
        assert "Errors" not in r and versions(s3, "locked", "gov3")[0] == [], r

    # ---- legal hold ----
    def legal_hold(self):
        s3 = self.s3
        v = self.put("locked", "held", ObjectLockLegalHoldStatus="ON")["VersionId"]
        h = s3.head_object(Bucket="locked", Key="held", VersionId=v)
        assert h["ObjectLockLegalHoldStatus"] == "ON" and "ObjectLockMode" not in h, h
        assert s3.get_object_legal_hold(Bucket="locked", Key="held",
                                        VersionId=v)["LegalHold"]["Status"] == "ON"
        assert err(s3.get_object_retention, Bucket="locked", Key="held", VersionId=v) == NO_LOCK
        assert err(s3.delete_object, Bucket="locked", Key="held", VersionId=v,
                   BypassGovernanceRetention=True) == LOCKED
        s3.put_object_legal_hold(Bucket="locked", Key="held", VersionId=v, LegalHold={"Status": "OFF"})
        assert s3.get_object_legal_hold(Bucket="locked", Key="held",
                                        VersionId=v)["LegalHold"]["Status"] == "OFF"
        s3.delete_object(Bucket="locked", Key="held", VersionId=v)
        # A hold on top of an ended retention, set later on the current version.
        w = self.put("locked", "held2")["VersionId"]
        assert err(s3.get_object_legal_hold, Bucket="locked", Key="held2") == NO_LOCK
        s3.put_object_legal_hold(Bucket="locked", Key="held2", LegalHold={"Status": "ON"})
        assert err(s3.delete_object, Bucket="locked", Key="held2", VersionId=w) == LOCKED
        self.held_version = w
        # Missing versions and keys.
        assert err(s3.get_object_legal_hold, Bucket="locked", Key="nokey")[0] == 404
        assert err(s3.put_object_legal_hold, Bucket="locked", Key="held2",
                   VersionId="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                   LegalHold={"Status": "ON"})[0] in (400, 404)

    # ---- survives kill -9 ----
    def restart(self):
        self.srv.kill9()
        self.srv.start()
        self.s3 = s3 = self.srv.client()
        assert s3.get_bucket_versioning(Bucket="locked")["Status"] == "Enabled"
        assert s3.get_object_lock_configuration(Bucket="dflt")["ObjectLockConfiguration"][
            "ObjectLockEnabled"] == "Enabled"
        assert err(s3.delete_object, Bucket="locked", Key="comp",
                   VersionId=self.comp_version) == LOCKED
        assert err(s3.delete_object, Bucket="locked", Key="held2",
                   VersionId=self.held_version) == LOCKED
        assert s3.head_object(Bucket="locked", Key="comp",
                              VersionId=self.comp_version)["ObjectLockMode"] == "COMPLIANCE"

    # ---- the clock, and lifecycle ----
    def clock_and_lifecycle(self):
        s3 = self.s3
        s3.create_bucket(Bucket="lcl", ObjectLockEnabledForBucket=True)
        kept = self.put("lcl", "k", b"v1", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=utc(self.now + 30 * DAY))["VersionId"]
        free = self.put("lcl", "k", b"v2")["VersionId"]
        self.put("lcl", "k", b"v3")  # current; v1 and v2 are noncurrent
        s3.put_bucket_lifecycle_configuration(Bucket="lcl", LifecycleConfiguration={"Rules": [
            {"ID": "old", "Status": "Enabled", "Filter": {"Prefix": ""},
             "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})
        locked_before = lifecycle_metrics(self.srv).get("strata_s3_lifecycle_versions_locked_total", 0)
        self.set_clock(self.now + 3 * DAY)
        deadline = time.time() + 30
        while time.time() < deadline:
            ids = [v["VersionId"] for v in versions(s3, "lcl", "k")[0]]
            if free not in ids:
                break
            time.sleep(0.1)
        assert free not in ids and kept in ids, ids
        m = lifecycle_metrics(self.srv)
        assert m.get("strata_s3_lifecycle_versions_locked_total", 0) > locked_before, m
        # Past its retention (two days, the clock moved three), the compliance version can go.
        s3.delete_object(Bucket="locked", Key="comp", VersionId=self.comp_version)
        assert versions(s3, "locked", "comp")[0] == []
        # 31 days on, the retained noncurrent version is past its retention too.
        self.set_clock(self.now + 31 * DAY)
        deadline = time.time() + 30
        while time.time() < deadline and kept in [v["VersionId"]
                                                  for v in versions(s3, "lcl", "k")[0]]:
            time.sleep(0.1)
        assert kept not in [v["VersionId"] for v in versions(s3, "lcl", "k")[0]]
        # A legal hold has no end date: still refused.
        assert err(s3.delete_object, Bucket="locked", Key="held2",
                   VersionId=self.held_version) == LOCKED


def main():
    args = H.parse_args()
    runner = H.Runner("object_lock")
    clock = H.TestClock()
    srv = H.StrataServer(args.strata, extra_args=[
        "--test-clock-file", clock.path, "--lifecycle-interval-ms", "100",
        "--lifecycle-page-pause-ms", "1"])
    try:
        srv.start()
        t = LockTests(srv, clock)
        if not runner.case("buckets", t.buckets):
            return runner.finish()
        for name in ["default_retention", "compliance", "governance", "legal_hold", "restart",
                     "clock_and_lifecycle"]:
            runner.case(name, getattr(t, name))
    finally:
        srv.cleanup()
        clock.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
