// S3Client's bucket-wide listings and batch deletes of versions:
// ListObjectVersions, ListMultipartUploads, DeleteObjects with VersionId,
// AbortMultipartUpload (what `strata rb --force` and `ls --all-versions` use).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_client_impl.h"
#include "objstore/s3_xml.h"

namespace strata::objstore {

Result<VersionPage> S3Client::ListObjectVersions(std::string_view bucket, std::string_view prefix,
                                                 std::string_view key_marker,
                                                 std::string_view version_marker) {
  Impl::Call c;
  c.op = "ListObjectVersions";
  c.method = "GET";
  c.bucket = std::string(bucket);
  AddParam(c.query, "versions", "", /*bare=*/true);
  AddParam(c.query, "encoding-type", "url");
  if (!prefix.empty()) AddParam(c.query, "prefix", prefix);
  if (!key_marker.empty()) {
    AddParam(c.query, "key-marker", key_marker);
    if (!version_marker.empty()) AddParam(c.query, "version-id-marker", version_marker);
  }
  VersionPage page;
  STRATA_RETURN_IF_ERROR(impl_->Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    ListVersionsXml x;
    STRATA_RETURN_IF_ERROR(impl_->ReadXml(resp, c, retry, ParseListVersionsXml, &x));
    page = std::move(x.page);
    return Status::Ok();
  }));
  return page;
}

Result<MultipartUploadPage> S3Client::ListMultipartUploads(std::string_view bucket,
                                                           std::string_view prefix,
                                                           std::string_view key_marker,
                                                           std::string_view upload_id_marker) {
  Impl::Call c;
  c.op = "ListMultipartUploads";
  c.method = "GET";
  c.bucket = std::string(bucket);
  AddParam(c.query, "uploads", "", /*bare=*/true);
  AddParam(c.query, "encoding-type", "url");
  if (!prefix.empty()) AddParam(c.query, "prefix", prefix);
  if (!key_marker.empty()) {
    AddParam(c.query, "key-marker", key_marker);
    if (!upload_id_marker.empty()) AddParam(c.query, "upload-id-marker", upload_id_marker);
  }
  MultipartUploadPage page;
  STRATA_RETURN_IF_ERROR(impl_->Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
    ListUploadsXml x;
    STRATA_RETURN_IF_ERROR(impl_->ReadXml(resp, c, retry, ParseListUploadsXml, &x));
    page = std::move(x.page);
    return Status::Ok();
  }));
  return page;
}

Status S3Client::AbortMultipartUpload(std::string_view bucket, std::string_view key,
                                      std::string_view upload_id) {
  return impl_->AbortMultipart(std::string(bucket), std::string(key), upload_id);
}

Result<std::vector<Status>> S3Client::DeleteVersions(
    std::string_view bucket, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::vector<Status> out(entries.size());
  for (size_t start = 0; start < entries.size(); start += 1000) {
    const size_t stop = std::min(entries.size(), start + 1000);
    std::string xml =
        "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
    std::map<std::pair<std::string, std::string>, size_t> index;
    for (size_t i = start; i < stop; ++i) {
      const auto& [key, version] = entries[i];
      index[entries[i]] = i;
      xml += "<Object><Key>" + XmlEscape(key) + "</Key>";
      if (!version.empty()) xml += "<VersionId>" + XmlEscape(version) + "</VersionId>";
      xml += "</Object>";
    }
    xml += "</Delete>";
    Impl::Call c;
    c.op = "DeleteObjects";
    c.method = "POST";
    c.bucket = std::string(bucket);
    c.query = "delete";
    c.body = xml;
    c.headers.emplace_back("Content-Type", "application/xml");
    c.headers.emplace_back("Content-MD5", Base64Encode(Md5(xml)));
    STRATA_RETURN_IF_ERROR(
        impl_->Execute(c, [&](http::ClientResponse& resp, bool* retry) -> Status {
          DeleteResultXml x;
          STRATA_RETURN_IF_ERROR(impl_->ReadXml(resp, c, retry, ParseDeleteResultXml, &x));
          for (const S3XmlError& e : x.errors) {
            auto it = index.find({e.key, e.version_id});
            if (it == index.end()) continue;
            out[it->second] =
                Status(CodeForS3Error(500, e.code), e.code + ": " + e.message + " (DELETE s3://" +
                                                        std::string(bucket) + "/" + e.key +
                                                        " version " + e.version_id + ")");
          }
          return Status::Ok();
        }));
  }
  return out;
}

}  // namespace strata::objstore
