// The XML documents of S3 responses, as the S3 client reads them (parsed with
// pugixml, the XML library of the S3 frontend too).
//
// Tolerant as a client of many S3 services must be: elements match by local
// name (a namespace prefix is dropped), unknown elements are ignored, an
// element's text is all the character data directly in it (entities and CDATA
// decoded, whitespace kept), and comments, processing instructions and the
// DOCTYPE are skipped. Each Parse* returns IOError ("malformed XML in the S3
// response (...)") for a document that is not well-formed (a body cut short by
// a broken connection, typically), and sets `error` instead of the result
// fields when the root element is <Error> (S3 sends those with status 200 for
// CompleteMultipartUpload and CopyObject). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/status.h>
#include <strata/objstore/object_store.h>
#include <strata/objstore/s3_client.h>

namespace strata::objstore {

// The checksums S3 returns, in the order the client looks for them.
inline constexpr ChecksumAlgorithm kResponseChecksums[] = {
    ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc64Nvme,
    ChecksumAlgorithm::kSha256, ChecksumAlgorithm::kSha1};

// <Error>: also each failed key of a DeleteObjects result.
struct S3XmlError {
  std::string code;
  std::string message;
  std::string key;
  std::string version_id;  // DeleteObjects errors of a named version
};

struct S3XmlResponse {
  std::optional<S3XmlError> error;  // the root element was <Error>
};

// ListAllMyBucketsResult.
struct ListBucketsXml : S3XmlResponse {
  std::vector<BucketEntry> buckets;
};
// InitiateMultipartUploadResult.
struct InitiateMultipartXml : S3XmlResponse {
  std::string upload_id;  // "" if missing
};
// CompleteMultipartUploadResult, CopyObjectResult and CopyPartResult.
struct WriteResultXml : S3XmlResponse {
  std::string etag;                 // unquoted
  std::optional<int64_t> mtime_ns;  // LastModified, when present and valid
  // The last of kResponseChecksums present (kNone, "" if none).
  ChecksumAlgorithm checksum_algorithm = ChecksumAlgorithm::kNone;
  std::string checksum;
};
// ListBucketResult of ListObjectsV2. Keys and prefixes are whole (with the
// store's prefix), URL-decoded when EncodingType is "url".
struct ListObjectsXml : S3XmlResponse {
  std::vector<ObjectInfo> objects;  // key, size, etag, mtime, checksum_algorithm
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken
};
// ListPartsResult.
struct ListPartsXml : S3XmlResponse {
  std::vector<UploadedPart> parts;
  bool truncated = false;
  std::string next_marker;  // NextPartNumberMarker
};
// DeleteResult of DeleteObjects: the keys that could not be deleted.
struct DeleteResultXml : S3XmlResponse {
  std::vector<S3XmlError> errors;
};

// ListVersionsResult of ListObjectVersions (keys URL-decoded when EncodingType is "url").
struct ListVersionsXml : S3XmlResponse {
  VersionPage page;
};
// ListMultipartUploadsResult.
struct ListUploadsXml : S3XmlResponse {
  MultipartUploadPage page;
};

Status ParseListBucketsXml(std::string_view xml, ListBucketsXml* out);
Status ParseInitiateMultipartXml(std::string_view xml, InitiateMultipartXml* out);
Status ParseWriteResultXml(std::string_view xml, WriteResultXml* out);
Status ParseListObjectsXml(std::string_view xml, ListObjectsXml* out);
Status ParseListPartsXml(std::string_view xml, ListPartsXml* out);
Status ParseDeleteResultXml(std::string_view xml, DeleteResultXml* out);
Status ParseListVersionsXml(std::string_view xml, ListVersionsXml* out);
Status ParseListUploadsXml(std::string_view xml, ListUploadsXml* out);

// The <Error> document in the body of a failed response; nullopt when the body
// is not one (empty, not XML, another root).
std::optional<S3XmlError> ParseErrorXml(std::string_view xml);

}  // namespace strata::objstore
