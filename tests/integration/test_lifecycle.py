#!/usr/bin/python3
"""Bucket lifecycle with boto3 (Debian boto3 1.26) against a real `strata server`.

The server runs with its test-only movable clock (`--test-clock-file`) and a
short pass interval. Put/Get/DeleteBucketLifecycleConfiguration and the errors
S3 answers; rules by prefix, tag, object size and And; the x-amz-expiration
header (boto3's `Expiration`) on GET/HEAD, rounded to midnight UTC as S3 does;
then the clock is moved day by day: each rule's objects expire on their day and
the others stay, an incomplete multipart upload is aborted, a Date rule expires
on its date, and the lifecycle metrics in /metrics move. In a versioned bucket:
NoncurrentVersionExpiration (NoncurrentDays counted from when a newer version
replaced each one, NewerNoncurrentVersions kept), and ExpiredObjectDeleteMarker
(a delete marker with no versions behind it is removed; one with versions stays).
The configuration survives a restart.

Usage: /usr/bin/python3 test_lifecycle.py --strata build/strata
"""

import calendar
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

B = "life"
DAY = 86400
BAD_ARG = (400, "InvalidArgument")
BAD_REQ = (400, "InvalidRequest")
NOT_IMPL = (501, "NotImplemented")


def metrics(srv):
    return H.prom_metrics(srv, "strata_s3_lifecycle_")


def http_date_midnight(ts):
    return time.strftime("%a, %d %b %Y 00:00:00 GMT", time.gmtime(ts))


def expiry_after_days(mtime, days):
    """S3: the object's time plus `days`, rounded up to the next midnight UTC."""
    return (int(mtime) // DAY + days + 1) * DAY


class LifecycleTests:
    def __init__(self, srv, clock):
        self.srv = srv
        self.s3 = srv.client()
        self.clock = clock
        self.t0 = time.time()
        self.set_clock(self.t0)

    def set_clock(self, t):
        self.clock.set(t)
        self.now = t

    def wait_passes(self, n=2, timeout=30):
        """Waits until n more passes have ended (so one started after the last clock move)."""
        start = metrics(self.srv).get("strata_s3_lifecycle_passes_total", 0)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if metrics(self.srv).get("strata_s3_lifecycle_passes_total", 0) >= start + n:
                return
            time.sleep(0.05)
        raise AssertionError(f"no {n} lifecycle passes within {timeout}s")

    def keys(self):
        r = self.s3.list_objects_v2(Bucket=B)
        return sorted(o["Key"] for o in r.get("Contents", []))

    def setup(self):
        self.s3.create_bucket(Bucket=B)

    def config_round_trip(self):
        err = H.client_error_code(self.s3.get_bucket_lifecycle_configuration, Bucket=B)
        assert err == (404, "NoSuchLifecycleConfiguration"), err
        rules = [
            {"ID": "logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
             "Expiration": {"Days": 1}},
            {"ID": "tmp-tag", "Status": "Enabled",
             "Filter": {"Tag": {"Key": "tier", "Value": "tmp"}}, "Expiration": {"Days": 2}},
            {"ID": "big", "Status": "Enabled", "Filter": {"ObjectSizeGreaterThan": 1000},
             "Expiration": {"Days": 3}},
            {"ID": "and", "Status": "Enabled",
             "Filter": {"And": {"Prefix": "data/", "Tags": [{"Key": "t", "Value": "x"}],
                                "ObjectSizeLessThan": 100}},
             "Expiration": {"Days": 1}},
            {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"},
             "Expiration": {"Days": 1}},
            {"ID": "abort", "Status": "Enabled", "Filter": {"Prefix": "uploads/"},
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        ]
        self.s3.put_bucket_lifecycle_configuration(
            Bucket=B, LifecycleConfiguration={"Rules": rules})
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
        assert [r["ID"] for r in got] == [r["ID"] for r in rules], got
        assert got[0]["Filter"] == {"Prefix": "logs/"}, got[0]
        assert got[1]["Filter"] == {"Tag": {"Key": "tier", "Value": "tmp"}}, got[1]
        assert got[2]["Filter"] == {"ObjectSizeGreaterThan": 1000}, got[2]
        assert got[3]["Filter"]["And"] == rules[3]["Filter"]["And"], got[3]
        assert got[4]["Status"] == "Disabled", got[4]
        assert got[5]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}, got[5]
        self.rules = rules

    def refusals_change_nothing(self):
        def put(rules):
            return H.client_error_code(self.s3.put_bucket_lifecycle_configuration, Bucket=B,
                                       LifecycleConfiguration={"Rules": rules})
        base = {"Status": "Enabled", "Filter": {"Prefix": ""}}
        assert put([dict(base, ID="z", Expiration={"Days": 0})]) == BAD_ARG
        noon = datetime.datetime(2031, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
        assert put([dict(base, ID="z", Expiration={"Date": noon})]) == BAD_ARG
        assert put([dict(base, ID="d", Expiration={"Days": 1}),
                    dict(base, ID="d", Expiration={"Days": 2})]) == BAD_ARG
        assert put([dict(base, ID="none")]) == BAD_REQ
        assert put([{"ID": "t", "Status": "Enabled",
                     "Filter": {"Tag": {"Key": "a", "Value": "b"}},
                     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]) == BAD_REQ
        assert put([dict(base, ID="x", Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])]) \
            == NOT_IMPL
        # S3: NoncurrentDays must be a positive integer.
        assert put([dict(base, ID="nc", NoncurrentVersionExpiration={"NoncurrentDays": 0})]) \
            == BAD_ARG
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
        assert [r["ID"] for r in got] == [r["ID"] for r in self.rules], got
        # Raw requests: no Content-MD5 (S3 requires one here), a document that is no XML.
        body = (b"<LifecycleConfiguration><Rule><ID>r</ID><Status>Enabled</Status><Filter/>"
                b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>")
        r = H.signed_request(self.srv, "PUT", f"/{B}", query="lifecycle", body=body)
        H.assert_s3_error(r, 400, "InvalidRequest")
        r = H.signed_request(self.srv, "PUT", f"/{B}", query="lifecycle", body=b"<Lifecycle",
                             headers={"Content-MD5": H.md5_b64(b"<Lifecycle")})
        H.assert_s3_error(r, 400, "MalformedXML")

    def objects_and_headers(self):
        put = self.s3.put_object
        put(Bucket=B, Key="logs/a", Body=b"a")
        put(Bucket=B, Key="logs/b", Body=b"b")
        put(Bucket=B, Key="scratch/t", Body=b"t", Tagging="tier=tmp")
        put(Bucket=B, Key="scratch/u", Body=b"u", Tagging="tier=gold")
        put(Bucket=B, Key="big/x", Body=b"x" * 5000)
        put(Bucket=B, Key="big/y", Body=b"y" * 50)
        put(Bucket=B, Key="data/small", Body=b"s", Tagging="t=x")
        put(Bucket=B, Key="data/untagged", Body=b"s")
        put(Bucket=B, Key="keep/a", Body=b"k")
        self.upload = self.s3.create_multipart_upload(Bucket=B, Key="uploads/big")["UploadId"]
        self.other_upload = self.s3.create_multipart_upload(Bucket=B, Key="other/big")["UploadId"]
        head = self.s3.head_object(Bucket=B, Key="logs/a")
        mtime = calendar.timegm(head["LastModified"].utctimetuple())
        # An N-day rule expires the objects (all written now) at midnight + N days.
        self.midnight = expiry_after_days(mtime, 0)
        want = f'expiry-date="{http_date_midnight(expiry_after_days(mtime, 1))}", rule-id="logs"'
        assert head.get("Expiration") == want, (head.get("Expiration"), want)
        get = self.s3.get_object(Bucket=B, Key="logs/a")
        assert get.get("Expiration") == want, get.get("Expiration")
        big = self.s3.head_object(Bucket=B, Key="big/x")
        assert 'rule-id="big"' in big.get("Expiration", ""), big.get("Expiration")
        for key in ("keep/a", "scratch/u", "data/untagged", "big/y"):
            assert "Expiration" not in self.s3.head_object(Bucket=B, Key=key), key

    def nothing_expires_before_its_day(self):
        self.wait_passes()
        assert len(self.keys()) == 9, self.keys()
        ups = self.s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
        assert len(ups) == 2, ups
        m = metrics(self.srv)
        assert m["strata_s3_lifecycle_objects_scanned_total"] >= 9, m
        assert m["strata_s3_lifecycle_objects_expired_total"] == 0, m

    def day_by_day(self):
        # A day on: 1-day rules (logs/, data/ And) and the upload abort; tag (2 days) stays.
        self.set_clock(self.midnight + 1 * DAY + 60)
        self.wait_passes()
        assert self.keys() == ["big/x", "big/y", "data/untagged", "keep/a", "scratch/t",
                               "scratch/u"], self.keys()
        ups = self.s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
        assert [u["UploadId"] for u in ups] == [self.other_upload], ups
        err = H.client_error_code(self.s3.list_parts, Bucket=B, Key="uploads/big",
                                  UploadId=self.upload)
        assert err == (404, "NoSuchUpload"), err
        m = metrics(self.srv)
        assert m["strata_s3_lifecycle_objects_expired_total"] == 3, m
        assert m["strata_s3_lifecycle_uploads_aborted_total"] == 1, m
        assert abs(m["strata_s3_lifecycle_last_pass_timestamp_seconds"] - self.now) < 5, m
        assert m["strata_s3_lifecycle_errors_total"] == 0, m
        # Two days on: the tagged object; three: the one over 1000 bytes.
        self.set_clock(self.midnight + 2 * DAY + 60)
        self.wait_passes()
        assert self.keys() == ["big/x", "big/y", "data/untagged", "keep/a", "scratch/u"], self.keys()
        self.set_clock(self.midnight + 3 * DAY + 60)
        self.wait_passes()
        assert self.keys() == ["big/y", "data/untagged", "keep/a", "scratch/u"], self.keys()
        assert metrics(self.srv)["strata_s3_lifecycle_objects_expired_total"] == 5

    def date_rule(self):
        midnight = (int(self.now) // DAY + 10) * DAY
        date = datetime.datetime.fromtimestamp(midnight, tz=datetime.timezone.utc)
        self.s3.put_bucket_lifecycle_configuration(Bucket=B, LifecycleConfiguration={"Rules": [
            {"ID": "by-date", "Status": "Enabled", "Filter": {"Prefix": "keep/"},
             "Expiration": {"Date": date}}]})
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"][0]
        assert got["Expiration"]["Date"] == date, got
        head = self.s3.head_object(Bucket=B, Key="keep/a")
        assert head["Expiration"] == f'expiry-date="{http_date_midnight(midnight)}", ' \
                                     f'rule-id="by-date"', head["Expiration"]
        self.set_clock(midnight - 60)
        self.wait_passes()
        assert "keep/a" in self.keys()
        self.set_clock(midnight)
        self.wait_passes()
        assert "keep/a" not in self.keys(), self.keys()

    def delete_config(self):
        self.s3.delete_bucket_lifecycle(Bucket=B)
        err = H.client_error_code(self.s3.get_bucket_lifecycle_configuration, Bucket=B)
        assert err == (404, "NoSuchLifecycleConfiguration"), err
        self.set_clock(self.now + 400 * DAY)
        self.wait_passes()
        assert self.keys() == ["big/y", "data/untagged", "scratch/u"], self.keys()
        assert "Expiration" not in self.s3.head_object(Bucket=B, Key="big/y")

    def versioned_bucket(self):
        vb = "life-versions"
        s3 = self.s3
        self.set_clock(time.time())  # earlier cases moved it; versions get real mtimes
        s3.create_bucket(Bucket=vb)
        s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
        for i in range(4):
            s3.put_object(Bucket=vb, Key="n/a", Body=b"v%d" % i)
        s3.put_object(Bucket=vb, Key="m/lone", Body=b"x")
        s3.delete_object(Bucket=vb, Key="m/lone")   # marker + one noncurrent version
        s3.delete_object(Bucket=vb, Key="m/only")   # a marker with nothing behind it
        s3.put_object(Bucket=vb, Key="k/x", Body=b"x")
        s3.delete_object(Bucket=vb, Key="k/x")      # marker + version, no noncurrent rule
        s3.put_object(Bucket=vb, Key="t/a", Body=b"tagged", Tagging="tier=tmp")
        s3.put_object(Bucket=vb, Key="t/a", Body=b"untagged")
        s3.put_object(Bucket=vb, Key="t/a", Body=b"current", Tagging="tier=tmp")
        s3.put_object(Bucket=vb, Key="other/o", Body=b"1")
        s3.put_object(Bucket=vb, Key="other/o", Body=b"2")  # noncurrent, no rule matches
        # Read before the rules exist: a pass may run as soon as they are stored.
        start = metrics(self.srv)["strata_s3_lifecycle_noncurrent_expired_total"]
        s3.put_bucket_lifecycle_configuration(Bucket=vb, LifecycleConfiguration={"Rules": [
            {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "n/"},
             "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
            {"ID": "m-nc", "Status": "Enabled", "Filter": {"Prefix": "m/"},
             "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
            {"ID": "m-dm", "Status": "Enabled", "Filter": {"Prefix": "m/"},
             "Expiration": {"ExpiredObjectDeleteMarker": True}},
            {"ID": "t-nc", "Status": "Enabled", "Filter": {"Tag": {"Key": "tier", "Value": "tmp"}},
             "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
            {"ID": "k-dm", "Status": "Enabled", "Filter": {"Prefix": "k/"},
             "Expiration": {"ExpiredObjectDeleteMarker": True}}]})
        got = s3.get_bucket_lifecycle_configuration(Bucket=vb)["Rules"]
        assert got[0]["NoncurrentVersionExpiration"] == {
            "NoncurrentDays": 1, "NewerNoncurrentVersions": 1}, got[0]
        assert got[2]["Expiration"] == {"ExpiredObjectDeleteMarker": True}, got[2]

        def versions():
            r = s3.list_object_versions(Bucket=vb)
            out = {}
            for v in r.get("Versions", []):
                out.setdefault(v["Key"], []).append(("v", v["VersionId"]))
            for m in r.get("DeleteMarkers", []):
                out.setdefault(m["Key"], []).append(("m", m["VersionId"]))
            return out

        before = versions()
        n_ids = [i for _, i in before["n/a"]]
        assert len(n_ids) == 4, before
        self.wait_passes()
        now = versions()
        # Day 0: only the lone delete marker with nothing behind it goes.
        assert "m/only" not in now, now
        assert sorted(k for k, _ in now["m/lone"]) == ["m", "v"], now
        assert sorted(k for k, _ in now["k/x"]) == ["m", "v"], now
        assert len(now["n/a"]) == 4 and len(now["other/o"]) == 2, now
        assert len(now["t/a"]) == 3, now
        assert metrics(self.srv)["strata_s3_lifecycle_noncurrent_expired_total"] == start + 1
        # Past the first midnight after one day: the noncurrent versions expire,
        # but the newest noncurrent one of n/a is kept (NewerNoncurrentVersions 1).
        self.set_clock(expiry_after_days(time.time(), 1) + 60)
        self.wait_passes()
        now = versions()
        listed = s3.list_object_versions(Bucket=vb, Prefix="n/a")["Versions"]
        order = [v["VersionId"] for v in listed]  # newest first
        assert len(order) == 2, listed
        assert s3.get_object(Bucket=vb, Key="n/a")["Body"].read() == b"v3"
        assert s3.get_object(Bucket=vb, Key="n/a", VersionId=order[1])["Body"].read() == b"v2"
        # m/lone: its version expired, then its marker had nothing behind it.
        assert "m/lone" not in now, now
        assert sorted(k for k, _ in now["k/x"]) == ["m", "v"], now
        assert len(now["other/o"]) == 2, now
        # By tag: the tagged noncurrent version of t/a expired, the untagged one stays.
        t_versions = s3.list_object_versions(Bucket=vb, Prefix="t/a")["Versions"]
        bodies = [s3.get_object(Bucket=vb, Key="t/a", VersionId=v["VersionId"])["Body"].read()
                  for v in t_versions]
        assert bodies == [b"current", b"untagged"], bodies
        assert metrics(self.srv)["strata_s3_lifecycle_noncurrent_expired_total"] == start + 6
        assert metrics(self.srv)["strata_s3_lifecycle_errors_total"] == 0


def kept_across_restart(srv):
    s3 = srv.client()
    s3.put_bucket_lifecycle_configuration(Bucket=B, LifecycleConfiguration={"Rules": [
        {"ID": "persist", "Status": "Enabled", "Filter": {"Prefix": "p/"},
         "Expiration": {"Days": 7}}]})
    srv.stop()
    srv.start()
    got = srv.client().get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
    assert [r["ID"] for r in got] == ["persist"], got
    assert got[0]["Expiration"] == {"Days": 7}, got


def main():
    args = H.parse_args()
    runner = H.Runner("lifecycle")
    clock = H.TestClock()
    srv = H.StrataServer(args.strata, extra_args=[
        "--test-clock-file", clock.path, "--lifecycle-interval-ms", "100",
        "--lifecycle-page-keys", "2", "--lifecycle-page-pause-ms", "1"])
    try:
        srv.start()
        t = LifecycleTests(srv, clock)
        if not runner.case("create bucket", t.setup):
            return runner.finish()
        if not runner.case("config round trip", t.config_round_trip):
            return runner.finish()
        for name in ["refusals_change_nothing", "objects_and_headers",
                     "nothing_expires_before_its_day", "day_by_day", "date_rule", "delete_config",
                     "versioned_bucket"]:
            runner.case(name, getattr(t, name))
        runner.case("configuration kept across a restart", lambda: kept_across_restart(srv))
    finally:
        srv.cleanup()
        clock.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
