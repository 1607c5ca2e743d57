// The S3 client's response parsing (objstore/s3_xml.h), socket-free: each
// document S3 services send, and what the client tolerates in them
// (namespaces, prefixes, whitespace, comments, CDATA, entities, unknown
// elements), an <Error> root in a 200 body, and documents cut short.
#include "objstore/s3_xml.h"

#include <gtest/gtest.h>

#include <strata/core/strings.h>

#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

TEST(S3XmlTest, ListObjectsV2WithNamespaceAndUnknownElements) {
  const char* xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
      "  <Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount>\n"
      "  <EncodingType>url</EncodingType>\n"
      "  <IsTruncated>true</IsTruncated>\n"
      "  <NextContinuationToken>tok+1</NextContinuationToken>\n"
      "  <Contents>\n"
      "    <Key>p/a%20b+c</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>\n"
      "    <ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>42</Size>\n"
      "    <StorageClass>STANDARD</StorageClass><Owner><ID>x</ID></Owner>\n"
      "    <ChecksumAlgorithm>CRC32C</ChecksumAlgorithm>\n"
      "  </Contents>\n"
      "  <Contents><Key>p/%C3%A9</Key><Size>0</Size><ETag>\"e-2\"</ETag></Contents>\n"
      "  <CommonPrefixes><Prefix>p/dir%2F/</Prefix></CommonPrefixes>\n"
      "</ListBucketResult>\n";
  ListObjectsXml x;
  ASSERT_OK(ParseListObjectsXml(xml, &x));
  EXPECT_FALSE(x.error);
  ASSERT_EQ(x.objects.size(), 2u);
  EXPECT_EQ(x.objects[0].key, "p/a b c");  // url-decoded, '+' as space
  EXPECT_EQ(x.objects[0].size, 42u);
  EXPECT_EQ(x.objects[0].etag, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(x.objects[0].mtime_ns, ParseIso8601("2024-01-02T03:04:05.000Z").value());
  EXPECT_EQ(x.objects[0].checksum_algorithm, ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(x.objects[1].key, "p/\xC3\xA9");
  EXPECT_EQ(x.objects[1].etag, "e-2");
  EXPECT_EQ(x.objects[1].mtime_ns, 0);
  EXPECT_EQ(x.objects[1].checksum_algorithm, ChecksumAlgorithm::kNone);
  ASSERT_EQ(x.common_prefixes.size(), 1u);
  EXPECT_EQ(x.common_prefixes[0], "p/dir//");
  EXPECT_TRUE(x.truncated);
  EXPECT_EQ(x.next_token, "tok+1");  // tokens are not decoded
}

TEST(S3XmlTest, ListObjectsWithoutEncodingKeepsKeysAndWhitespace) {
  // Prefixed element names, comments, a processing instruction, CDATA and
  // character references; text is taken as is (no trimming).
  const char* xml =
      "<!-- leading comment --><!DOCTYPE x>"
      "<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<s3:IsTruncated>false</s3:IsTruncated>"
      "<s3:Contents><s3:Key> sp&#x41;ce&#66;<![CDATA[<raw>&amp;]]><!-- c --><?pi x?>end </s3:Key>"
      "<s3:Size>7</s3:Size></s3:Contents>"
      "<s3:Contents><s3:Key>a%20b</s3:Key></s3:Contents>"
      "</s3:ListBucketResult>";
  ListObjectsXml x;
  ASSERT_OK(ParseListObjectsXml(xml, &x));
  ASSERT_EQ(x.objects.size(), 2u);
  EXPECT_EQ(x.objects[0].key, " spAceB<raw>&amp;end ");
  EXPECT_EQ(x.objects[0].size, 7u);
  EXPECT_EQ(x.objects[1].key, "a%20b");
  EXPECT_FALSE(x.truncated);
  EXPECT_EQ(x.next_token, "");
}

TEST(S3XmlTest, ListPartsAndTheLastChecksum) {
  const char* xml =
      "<ListPartsResult><Bucket>b</Bucket><UploadId>u</UploadId>"
      "<NextPartNumberMarker>2</NextPartNumberMarker><IsTruncated>true</IsTruncated>"
      "<Part><PartNumber>1</PartNumber><ETag>\"aa\"</ETag><Size>5242880</Size>"
      "<ChecksumCRC32C>AAAAAA==</ChecksumCRC32C></Part>"
      "<Part><PartNumber>2</PartNumber><ETag>bb</ETag><Size>1</Size>"
      "<ChecksumCRC32C>c1==</ChecksumCRC32C><ChecksumSHA256>s2==</ChecksumSHA256></Part>"
      "</ListPartsResult>";
  ListPartsXml x;
  ASSERT_OK(ParseListPartsXml(xml, &x));
  ASSERT_EQ(x.parts.size(), 2u);
  EXPECT_EQ(x.parts[0].number, 1);
  EXPECT_EQ(x.parts[0].etag, "aa");
  EXPECT_EQ(x.parts[0].size, 5242880u);
  EXPECT_EQ(x.parts[0].checksum, "AAAAAA==");
  EXPECT_EQ(x.parts[1].checksum, "s2==");  // the last of kResponseChecksums present
  EXPECT_TRUE(x.truncated);
  EXPECT_EQ(x.next_marker, "2");
}

TEST(S3XmlTest, WriteResults) {
  WriteResultXml complete;
  ASSERT_OK(
      ParseWriteResultXml("<?xml version=\"1.0\"?><CompleteMultipartUploadResult "
                          "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>l</Location>"
                          "<ETag>&quot;abc-1&quot;</ETag><ChecksumCRC32C>q==</ChecksumCRC32C>"
                          "</CompleteMultipartUploadResult>",
                          &complete));
  EXPECT_FALSE(complete.error);
  EXPECT_EQ(complete.etag, "abc-1");
  EXPECT_EQ(complete.checksum_algorithm, ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(complete.checksum, "q==");
  EXPECT_FALSE(complete.mtime_ns);

  WriteResultXml copy;
  ASSERT_OK(ParseWriteResultXml(
      "<CopyObjectResult>\n  <LastModified>2024-01-02T03:04:05.000Z</LastModified>\n"
      "  <ETag>\"e\"</ETag>\n</CopyObjectResult>",
      &copy));
  EXPECT_EQ(copy.etag, "e");
  EXPECT_EQ(copy.mtime_ns, ParseIso8601("2024-01-02T03:04:05.000Z"));
  EXPECT_EQ(copy.checksum_algorithm, ChecksumAlgorithm::kNone);
  EXPECT_EQ(copy.checksum, "");
}

TEST(S3XmlTest, ErrorDocumentInA200Body) {
  WriteResultXml x;
  ASSERT_OK(
      ParseWriteResultXml("<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code>"
                          "<Message>We encountered an internal error. Please try again.</Message>"
                          "<RequestId>r</RequestId></Error>",
                          &x));
  ASSERT_TRUE(x.error);
  EXPECT_EQ(x.error->code, "InternalError");
  EXPECT_EQ(x.error->message, "We encountered an internal error. Please try again.");
  EXPECT_EQ(x.etag, "");
}

TEST(S3XmlTest, ErrorBodies) {
  auto e = ParseErrorXml(
      "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>"
      "<Key>a&amp;b</Key></Error>");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The specified key does not exist.");
  EXPECT_EQ(e->key, "a&b");
  EXPECT_FALSE(ParseErrorXml(""));
  EXPECT_FALSE(ParseErrorXml("not xml"));
  EXPECT_FALSE(ParseErrorXml("<Other><Code>x</Code></Other>"));
  EXPECT_FALSE(ParseErrorXml("<Error><Code>cut"));
}

TEST(S3XmlTest, DeleteResultNamesTheFailedKeys) {
  DeleteResultXml x;
  ASSERT_OK(ParseDeleteResultXml(
      "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Deleted><Key>ok</Key></Deleted>"
      "<Error><Key>k1</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
      "</DeleteResult>",
      &x));
  EXPECT_FALSE(x.error);
  ASSERT_EQ(x.errors.size(), 1u);
  EXPECT_EQ(x.errors[0].key, "k1");
  EXPECT_EQ(x.errors[0].code, "AccessDenied");
  EXPECT_EQ(x.errors[0].message, "Access Denied");
}

TEST(S3XmlTest, BucketsAndUploadIds) {
  ListBucketsXml b;
  ASSERT_OK(ParseListBucketsXml(
      "<ListAllMyBucketsResult><Owner><ID>o</ID></Owner><Buckets>"
      "<Bucket><Name>a</Name><CreationDate>2024-01-02T03:04:05.000Z</CreationDate></Bucket>"
      "<Bucket><Name>b</Name></Bucket></Buckets></ListAllMyBucketsResult>",
      &b));
  ASSERT_EQ(b.buckets.size(), 2u);
  EXPECT_EQ(b.buckets[0].name, "a");
  EXPECT_EQ(b.buckets[0].created_ns, ParseIso8601("2024-01-02T03:04:05.000Z").value());
  EXPECT_EQ(b.buckets[1].name, "b");
  EXPECT_EQ(b.buckets[1].created_ns, 0);

  InitiateMultipartXml u;
  ASSERT_OK(
      ParseInitiateMultipartXml("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                                "<UploadId>VXBsb2Fk</UploadId></InitiateMultipartUploadResult>",
                                &u));
  EXPECT_EQ(u.upload_id, "VXBsb2Fk");
  InitiateMultipartXml none;
  ASSERT_OK(ParseInitiateMultipartXml("<InitiateMultipartUploadResult/>", &none));
  EXPECT_EQ(none.upload_id, "");
}

TEST(S3XmlTest, MalformedDocumentsAreIOErrors) {
  for (const char* bad : {"", "   ", "no markup", "<ListBucketResult><Contents><Key>a</Key>",
                          "<ListBucketResult></Other>", "<a><b></a></b>"}) {
    ListObjectsXml x;
    Status st = ParseListObjectsXml(bad, &x);
    EXPECT_EQ(st.code(), StatusCode::kIOError) << bad;
    EXPECT_NE(st.message().find("malformed XML in the S3 response"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace strata::objstore
