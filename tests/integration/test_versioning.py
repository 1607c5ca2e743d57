#!/usr/bin/python3
"""S3 versioning against the real `strata server` with boto3 (Debian's).

Cases follow the AWS S3 API reference (PutBucketVersioning, ListObjectVersions,
DeleteObject with versionId, delete markers) and what AWS answers:
  * versioning states: absent, Enabled, Suspended; bad documents refused;
  * every PUT gets a new version id, old versions read back by id, HEAD/GET of
    a delete marker (405 with x-amz-delete-marker) and of a key whose current
    version is a marker (404 with x-amz-delete-marker);
  * undoing a delete by removing its delete marker;
  * the list_object_versions paginator over 2,500 versions of 50 keys (page
    size 100, then prefix/delimiter and encoding-type);
  * copy from a version, tagging by version, DeleteObjects with VersionId,
    the null version of objects written before versioning and of a suspended
    bucket;
  * crash: PUT/DELETE storm on one key from 4 threads, kill -9, restart: every
    acknowledged version and delete marker is listed, each thread's in the
    order it was acknowledged, every listed version reads back whole.

Usage: /usr/bin/python3 test_versioning.py --strata build/strata
"""

import hashlib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402


def err(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
                e.response["ResponseMetadata"].get("HTTPHeaders", {}))
    raise AssertionError(f"{fn.__name__} did not fail")


def all_versions(s3, bucket, **kw):
    out, markers = [], []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, **kw):
        out += page.get("Versions", [])
        markers += page.get("DeleteMarkers", [])
    return out, markers


class Tests:
    def __init__(self, srv):
        self.srv = srv
        self.s3 = srv.client()

    def states(self):
        s3 = self.s3
        s3.create_bucket(Bucket="vstate")
        assert "Status" not in s3.get_bucket_versioning(Bucket="vstate")
        s3.put_object(Bucket="vstate", Key="k", Body=b"x")
        r = s3.head_object(Bucket="vstate", Key="k")
        assert "VersionId" not in r, r  # AWS sends no version id in an unversioned bucket
        s3.put_bucket_versioning(Bucket="vstate", VersioningConfiguration={"Status": "Enabled"})
        assert s3.get_bucket_versioning(Bucket="vstate")["Status"] == "Enabled"
        s3.put_bucket_versioning(Bucket="vstate", VersioningConfiguration={"Status": "Suspended"})
        assert s3.get_bucket_versioning(Bucket="vstate")["Status"] == "Suspended"
        st, code, _ = err(s3.put_bucket_versioning, Bucket="vstate",
                          VersioningConfiguration={"Status": "Off"})
        assert (st, code) == (400, "MalformedXML"), (st, code)
        st, code, _ = err(s3.put_bucket_versioning, Bucket="vstate",
                          VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"},
                          MFA="serial 123456")
        assert st == 501, (st, code)
        assert s3.get_bucket_versioning(Bucket="vstate")["Status"] == "Suspended"

    def versions_and_markers(self):
        s3 = self.s3
        s3.create_bucket(Bucket="vbasic")
        s3.put_object(Bucket="vbasic", Key="pre", Body=b"before versioning")
        s3.put_bucket_versioning(Bucket="vbasic", VersioningConfiguration={"Status": "Enabled"})
        ids = []
        for i in range(3):
            r = s3.put_object(Bucket="vbasic", Key="k", Body=b"v%d" % i)
            ids.append(r["VersionId"])
        assert len(set(ids)) == 3 and "null" not in ids, ids
        for i, v in enumerate(ids):
            r = s3.get_object(Bucket="vbasic", Key="k", VersionId=v)
            assert r["Body"].read() == b"v%d" % i and r["VersionId"] == v
        assert s3.get_object(Bucket="vbasic", Key="k")["Body"].read() == b"v2"
        # Objects written before versioning are the null version.
        assert s3.head_object(Bucket="vbasic", Key="pre")["VersionId"] == "null"
        s3.put_object(Bucket="vbasic", Key="pre", Body=b"after")
        r = s3.get_object(Bucket="vbasic", Key="pre", VersionId="null")
        assert r["Body"].read() == b"before versioning", "null version lost"
        # Delete -> marker; current GET is 404 with x-amz-delete-marker.
        d = s3.delete_object(Bucket="vbasic", Key="k")
        assert d.get("DeleteMarker") is True and d["VersionId"] not in ids, d
        st, code, hdr = err(s3.get_object, Bucket="vbasic", Key="k")
        assert (st, code) == (404, "NoSuchKey") and hdr.get("x-amz-delete-marker") == "true", hdr
        st, code, hdr = err(s3.get_object, Bucket="vbasic", Key="k", VersionId=d["VersionId"])
        assert (st, code) == (405, "MethodNotAllowed"), (st, code)
        assert hdr.get("x-amz-delete-marker") == "true", hdr
        st, code, _ = err(s3.get_object, Bucket="vbasic", Key="k", VersionId="0000000000000001")
        assert (st, code) == (404, "NoSuchVersion"), (st, code)
        st, code, _ = err(s3.get_object, Bucket="vbasic", Key="k", VersionId="not-an-id")
        assert (st, code) == (400, "InvalidArgument"), (st, code)
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="vbasic").get("Contents", [])]
        assert keys == ["pre"], keys
        # Undo the delete: remove its marker.
        r = s3.delete_object(Bucket="vbasic", Key="k", VersionId=d["VersionId"])
        assert r.get("DeleteMarker") is True and r["VersionId"] == d["VersionId"], r
        assert s3.get_object(Bucket="vbasic", Key="k")["Body"].read() == b"v2"
        # Deleting the current version makes the previous one current.
        s3.delete_object(Bucket="vbasic", Key="k", VersionId=ids[2])
        r = s3.get_object(Bucket="vbasic", Key="k")
        assert r["Body"].read() == b"v1" and r["VersionId"] == ids[1]
        vs, ms = all_versions(s3, "vbasic", Prefix="k")
        assert [v["VersionId"] for v in vs] == [ids[1], ids[0]] and not ms, (vs, ms)
        assert vs[0]["IsLatest"] and not vs[1]["IsLatest"]
        # A bucket holding versions is not empty.
        st, code, _ = err(s3.delete_bucket, Bucket="vbasic")
        assert (st, code) == (409, "BucketNotEmpty"), (st, code)

    def copy_tags_multi(self):
        s3 = self.s3
        s3.create_bucket(Bucket="vcopy")
        s3.put_bucket_versioning(Bucket="vcopy", VersioningConfiguration={"Status": "Enabled"})
        a = s3.put_object(Bucket="vcopy", Key="src", Body=b"first")["VersionId"]
        s3.put_object(Bucket="vcopy", Key="src", Body=b"second")
        r = s3.copy_object(Bucket="vcopy", Key="dst",
                           CopySource={"Bucket": "vcopy", "Key": "src", "VersionId": a})
        assert r["CopySourceVersionId"] == a and r["VersionId"] != a, r
        assert s3.get_object(Bucket="vcopy", Key="dst")["Body"].read() == b"first"
        s3.put_object_tagging(Bucket="vcopy", Key="src", VersionId=a,
                              Tagging={"TagSet": [{"Key": "old", "Value": "1"}]})
        t = s3.get_object_tagging(Bucket="vcopy", Key="src", VersionId=a)
        assert t["TagSet"] == [{"Key": "old", "Value": "1"}] and t["VersionId"] == a, t
        assert s3.get_object_tagging(Bucket="vcopy", Key="src")["TagSet"] == []
        # GetObjectAttributes of the older version: its size, not the current one's.
        at = s3.get_object_attributes(Bucket="vcopy", Key="src", VersionId=a,
                                      ObjectAttributes=["ObjectSize", "ETag"])
        assert at["ObjectSize"] == len(b"first") and at["VersionId"] == a, at
        at = s3.get_object_attributes(Bucket="vcopy", Key="src", ObjectAttributes=["ObjectSize"])
        assert at["ObjectSize"] == len(b"second") and at["VersionId"] != a, at
        # DeleteObjects with and without version ids.
        b = s3.put_object(Bucket="vcopy", Key="m", Body=b"m")["VersionId"]
        r = s3.delete_objects(Bucket="vcopy", Delete={"Objects": [
            {"Key": "src", "VersionId": a}, {"Key": "m"}]})
        got = {(d["Key"], d.get("VersionId")): d for d in r["Deleted"]}
        assert ("src", a) in got and got[("m", None)]["DeleteMarker"] is True, r
        st, code, _ = err(s3.get_object, Bucket="vcopy", Key="src", VersionId=a)
        assert (st, code) == (404, "NoSuchVersion")
        assert s3.get_object(Bucket="vcopy", Key="m", VersionId=b)["Body"].read() == b"m"

    def suspended_null(self):
        s3 = self.s3
        s3.create_bucket(Bucket="vsusp")
        s3.put_bucket_versioning(Bucket="vsusp", VersioningConfiguration={"Status": "Enabled"})
        v1 = s3.put_object(Bucket="vsusp", Key="k", Body=b"one")["VersionId"]
        s3.put_bucket_versioning(Bucket="vsusp", VersioningConfiguration={"Status": "Suspended"})
        assert s3.put_object(Bucket="vsusp", Key="k", Body=b"two").get("VersionId") == "null"
        assert s3.put_object(Bucket="vsusp", Key="k", Body=b"three").get("VersionId") == "null"
        vs, ms = all_versions(s3, "vsusp")
        assert [(v["VersionId"], v["IsLatest"]) for v in vs] == [("null", True), (v1, False)], vs
        assert s3.get_object(Bucket="vsusp", Key="k", VersionId="null")["Body"].read() == b"three"
        d = s3.delete_object(Bucket="vsusp", Key="k")
        assert d.get("DeleteMarker") is True and d["VersionId"] == "null", d
        vs, ms = all_versions(s3, "vsusp")
        assert [v["VersionId"] for v in vs] == [v1] and [m["VersionId"] for m in ms] == ["null"]

    def paginator(self):
        s3 = self.s3
        s3.create_bucket(Bucket="vpage")
        s3.put_bucket_versioning(Bucket="vpage", VersioningConfiguration={"Status": "Enabled"})
        sent = {}
        lock = threading.Lock()

        def writer(keys):
            c = self.srv.client()
            for k in keys:
                for i in range(50):
                    v = c.put_object(Bucket="vpage", Key=k, Body=b"%s-%d" % (k.encode(), i))
                    with lock:
                        sent.setdefault(k, []).append(v["VersionId"])
        keys = [f"d{k % 5}/key{k:02d}" for k in range(50)]
        ts = [threading.Thread(target=writer, args=(keys[i::4],)) for i in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        pages = 0
        listed = []
        for page in s3.get_paginator("list_object_versions").paginate(
                Bucket="vpage", PaginationConfig={"PageSize": 100}):
            pages += 1
            assert len(page.get("Versions", [])) <= 100
            listed += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in page.get("Versions", [])]
        assert pages == 25, pages
        assert len(listed) == 2500, len(listed)
        expect = []
        for k in sorted(keys):
            ids = list(reversed(sent[k]))  # newest first
            expect += [(k, v, i == 0) for i, v in enumerate(ids)]
        assert listed == expect, "versions out of order or IsLatest wrong"
        # Delimiter: one common prefix per directory; prefix narrows to one key's versions.
        r = s3.list_object_versions(Bucket="vpage", Delimiter="/")
        assert [p["Prefix"] for p in r["CommonPrefixes"]] == [f"d{i}/" for i in range(5)]
        assert "Versions" not in r
        vs, _ = all_versions(s3, "vpage", Prefix="d3/key03")
        assert len(vs) == 50
        r = s3.list_object_versions(Bucket="vpage", Prefix="d1/", MaxKeys=3, EncodingType="url")
        assert r["IsTruncated"] and r["NextKeyMarker"] == "d1/key01", r
        assert r["NextVersionIdMarker"] == r["Versions"][-1]["VersionId"]

    def crash(self):
        srv = self.srv
        s3 = self.s3
        s3.create_bucket(Bucket="vcrash")
        s3.put_bucket_versioning(Bucket="vcrash", VersioningConfiguration={"Status": "Enabled"})
        acked = [[] for _ in range(4)]   # per thread: (version id, is_marker, md5) in ack order
        bodies = {}                      # md5 -> size of every body sent
        stop = threading.Event()

        def storm(t):
            c = srv.client(retries=0)
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    if n % 4 == 0:
                        r = c.delete_object(Bucket="vcrash", Key="hot")
                        acked[t].append((r["VersionId"], True, None))
                    else:
                        body = os.urandom(100 + (n * 7919 + t) % (200 * 1024))
                        md5 = hashlib.md5(body).hexdigest()
                        bodies[md5] = len(body)
                        r = c.put_object(Bucket="vcrash", Key="hot", Body=body)
                        acked[t].append((r["VersionId"], False, md5))
                except Exception:  # noqa: BLE001 - the kill cuts requests off
                    if not srv.alive():
                        return
        ts = [threading.Thread(target=storm, args=(t,)) for t in range(4)]
        [t.start() for t in ts]
        time.sleep(3)
        srv.kill9()
        stop.set()
        [t.join() for t in ts]
        srv.start()
        s3 = srv.client()
        vs, ms = all_versions(s3, "vcrash")
        entries = sorted([(v["VersionId"], False, v) for v in vs] +
                         [(m["VersionId"], True, m) for m in ms])
        listing = [v["VersionId"] for v in
                   sorted(vs + ms, key=lambda v: v["VersionId"])]
        pos = {vid: i for i, vid in enumerate(listing)}
        total = sum(len(a) for a in acked)
        assert total > 20, f"only {total} acknowledged writes before the kill"
        for t in range(4):
            prev = None
            for vid, marker, md5 in acked[t]:
                assert vid in pos, f"acknowledged version {vid} (marker={marker}) lost"
                # Newer first: each later acknowledgement sorts before the earlier ones.
                assert prev is None or pos[vid] < prev, "acknowledged versions out of order"
                prev = pos[vid]
        # The listing itself is newest first (paginator order == id order).
        ordered = [v["VersionId"] for v in vs + ms]
        assert sorted(ordered) == sorted(listing)
        latest = [e for e in vs + ms if e["IsLatest"]]
        assert len(latest) == 1 and latest[0]["VersionId"] == listing[0], latest
        for vid, marker, v in entries:
            if marker:
                continue
            body = s3.get_object(Bucket="vcrash", Key="hot", VersionId=vid)["Body"].read()
            md5 = hashlib.md5(body).hexdigest()
            assert md5 in bodies and len(body) == bodies[md5] == v["Size"], "partial version"
            assert v["ETag"].strip('"') == md5
        print(f"    {total} acknowledged, {len(vs)} versions and {len(ms)} markers listed")


def main():
    args = H.parse_args()
    runner = H.Runner("versioning")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        t = Tests(srv)
        for name in ["states", "versions_and_markers", "copy_tags_multi", "suspended_null",
                     "paginator", "crash"]:
            runner.case(name, getattr(t, name))
            if not srv.alive():
                print(f"strata server died:\n{srv.log_tail()}", flush=True)
                break
    finally:
        srv.stop()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
