#!/usr/bin/python3
"""Bucket tagging and storage classes with boto3 (Debian 1.26) against a real
`strata server`.

Written from the S3 API Reference:
  * PutBucketTagging / GetBucketTagging / DeleteBucketTagging: up to 50 tags
    (51 → InvalidTag), unique keys, no `aws:` keys, keys 1-128 and values up to
    256 characters; a bucket without tags answers 404 NoSuchTagSet; PUT
    replaces the whole set; the tags survive a restart; refused documents
    change nothing; object tags stay at 10.
  * x-amz-storage-class on PutObject, CopyObject and CreateMultipartUpload:
    the class is kept and reported by HeadObject/GetObject (the header is sent
    for every class but STANDARD), ListObjectsV2, ListObjectVersions,
    GetObjectAttributes, ListParts and ListMultipartUploads; a copy takes the
    class of its request (STANDARD without the header), and copying an object
    onto itself to change its class is allowed; GLACIER and DEEP_ARCHIVE (which
    need RestoreObject) answer NotImplemented, unknown classes InvalidStorageClass,
    and neither writes anything.

Usage: /usr/bin/python3 test_s3_tags_class.py --strata build/strata
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strata_harness as H  # noqa: E402

B = "tags-class"


class Tests:
    def __init__(self, srv):
        self.srv = srv
        self.s3 = srv.client()

    def setup(self):
        self.s3.create_bucket(Bucket=B)

    def bucket_tagging(self):
        s3 = self.s3
        assert H.client_error_code(s3.get_bucket_tagging, Bucket=B) == (404, "NoSuchTagSet")
        tags = [{"Key": f"k{i:02d}", "Value": f"v{i}"} for i in range(50)]
        tags[0] = {"Key": "team/ml & ops=1", "Value": "a value with spaces, & and ="}
        s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": tags})
        got = s3.get_bucket_tagging(Bucket=B)["TagSet"]
        assert sorted(got, key=lambda t: t["Key"]) == sorted(tags, key=lambda t: t["Key"]), got
        # Refused documents: nothing changes.
        for bad in [tags + [{"Key": "k50", "Value": "x"}],
                    [{"Key": "aws:owner", "Value": "x"}],
                    [{"Key": "dup", "Value": "1"}, {"Key": "dup", "Value": "2"}],
                    [{"Key": "k" * 129, "Value": "x"}],
                    [{"Key": "k", "Value": "v" * 257}]]:
            st, code = H.client_error_code(s3.put_bucket_tagging, Bucket=B,
                                           Tagging={"TagSet": bad})
            assert (st, code) == (400, "InvalidTag"), (st, code, bad[:1])
        assert len(s3.get_bucket_tagging(Bucket=B)["TagSet"]) == 50
        # PUT replaces the set.
        s3.put_bucket_tagging(Bucket=B, Tagging={"TagSet": [{"Key": "only", "Value": "one"}]})
        assert s3.get_bucket_tagging(Bucket=B)["TagSet"] == [{"Key": "only", "Value": "one"}]
        # Object tags keep their own limit of 10.
        st, code = H.client_error_code(
            s3.put_object_tagging, Bucket=B, Key="nokey",
            Tagging={"TagSet": [{"Key": f"t{i}", "Value": "v"} for i in range(11)]})
        assert st in (400, 404), (st, code)
        # Missing bucket.
        assert H.client_error_code(s3.get_bucket_tagging, Bucket="no-such-bkt") == (
            404, "NoSuchBucket")

    def tagging_survives_restart_then_delete(self):
        self.srv.stop()
        self.srv.start()
        self.s3 = s3 = self.srv.client()
        assert s3.get_bucket_tagging(Bucket=B)["TagSet"] == [{"Key": "only", "Value": "one"}]
        s3.delete_bucket_tagging(Bucket=B)
        assert H.client_error_code(s3.get_bucket_tagging, Bucket=B) == (404, "NoSuchTagSet")
        s3.delete_bucket_tagging(Bucket=B)  # nothing to delete: still 204

    def storage_class_kept_and_reported(self):
        s3 = self.s3
        s3.put_object(Bucket=B, Key="ia", Body=b"infrequent", StorageClass="STANDARD_IA")
        s3.put_object(Bucket=B, Key="std", Body=b"standard", StorageClass="STANDARD")
        s3.put_object(Bucket=B, Key="none", Body=b"no header")
        h = s3.head_object(Bucket=B, Key="ia")
        assert h.get("StorageClass") == "STANDARD_IA", h
        g = s3.get_object(Bucket=B, Key="ia")
        assert g.get("StorageClass") == "STANDARD_IA" and g["Body"].read() == b"infrequent"
        for k in ("std", "none"):  # S3 sends no header for STANDARD
            assert "StorageClass" not in s3.head_object(Bucket=B, Key=k), k
        listed = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=B)["Contents"]}
        assert listed == {"ia": "STANDARD_IA", "std": "STANDARD", "none": "STANDARD"}, listed
        v1 = {o["Key"]: o["StorageClass"] for o in s3.list_objects(Bucket=B)["Contents"]}
        assert v1 == listed, v1
        versions = {v["Key"]: v["StorageClass"]
                    for v in s3.list_object_versions(Bucket=B)["Versions"]}
        assert versions == listed, versions
        a = s3.get_object_attributes(Bucket=B, Key="ia", ObjectAttributes=["StorageClass"])
        assert a["StorageClass"] == "STANDARD_IA", a
        # Every class that reads back at once is kept.
        for sc in ("REDUCED_REDUNDANCY", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR"):
            s3.put_object(Bucket=B, Key=f"c-{sc}", Body=b"x", StorageClass=sc)
            assert s3.head_object(Bucket=B, Key=f"c-{sc}")["StorageClass"] == sc

    def copies_take_the_requested_class(self):
        s3 = self.s3
        s3.copy_object(Bucket=B, Key="copy-plain", CopySource={"Bucket": B, "Key": "ia"})
        assert "StorageClass" not in s3.head_object(Bucket=B, Key="copy-plain")
        s3.copy_object(Bucket=B, Key="copy-oz", CopySource={"Bucket": B, "Key": "std"},
                       StorageClass="ONEZONE_IA")
        assert s3.head_object(Bucket=B, Key="copy-oz")["StorageClass"] == "ONEZONE_IA"
        # Changing the class in place: a copy onto itself is allowed with the header.
        s3.copy_object(Bucket=B, Key="std", CopySource={"Bucket": B, "Key": "std"},
                       StorageClass="INTELLIGENT_TIERING")
        h = s3.head_object(Bucket=B, Key="std")
        assert h["StorageClass"] == "INTELLIGENT_TIERING", h
        assert s3.get_object(Bucket=B, Key="std")["Body"].read() == b"standard"

    def multipart_class(self):
        s3 = self.s3
        up = s3.create_multipart_upload(Bucket=B, Key="mp", StorageClass="STANDARD_IA")
        uid = up["UploadId"]
        ups = [u for u in s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
               if u["UploadId"] == uid]
        assert ups and ups[0]["StorageClass"] == "STANDARD_IA", ups
        e = s3.upload_part(Bucket=B, Key="mp", UploadId=uid, PartNumber=1, Body=b"part")["ETag"]
        assert s3.list_parts(Bucket=B, Key="mp", UploadId=uid)["StorageClass"] == "STANDARD_IA"
        s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        assert s3.head_object(Bucket=B, Key="mp")["StorageClass"] == "STANDARD_IA"

    def refused_classes_write_nothing(self):
        s3 = self.s3
        for sc, want in [("GLACIER", (501, "NotImplemented")),
                         ("DEEP_ARCHIVE", (501, "NotImplemented")),
                         ("SUPER_FAST", (400, "InvalidStorageClass")),
                         ("EXPRESS_ONEZONE", (400, "InvalidStorageClass"))]:
            got = H.client_error_code(s3.put_object, Bucket=B, Key="refused", Body=b"x",
                                      StorageClass=sc)
            assert got == want, (sc, got)
            got = H.client_error_code(s3.copy_object, Bucket=B, Key="refused",
                                      CopySource={"Bucket": B, "Key": "ia"}, StorageClass=sc)
            assert got == want, (sc, got)
            got = H.client_error_code(s3.create_multipart_upload, Bucket=B, Key="refused",
                                      StorageClass=sc)
            assert got == want, (sc, got)
        assert H.client_error_code(s3.head_object, Bucket=B, Key="refused")[0] == 404
        assert not [u for u in s3.list_multipart_uploads(Bucket=B).get("Uploads", [])
                    if u["Key"] == "refused"]


def main():
    args = H.parse_args()
    runner = H.Runner("s3_tags_class")
    srv = H.StrataServer(args.strata)
    try:
        srv.start()
        t = Tests(srv)
        if not runner.case("setup", t.setup):
            return runner.finish()
        for name in ["bucket_tagging", "tagging_survives_restart_then_delete",
                     "storage_class_kept_and_reported", "copies_take_the_requested_class",
                     "multipart_class", "refused_classes_write_nothing"]:
            runner.case(name, getattr(t, name))
    finally:
        srv.cleanup()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
