// Parsing of the small XML documents S3 clients send (pugixml underneath).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>

namespace pugi {
class xml_node;
class xml_document;
}

namespace strata::s3 {

// MalformedXML with S3's message and `why` after it.
Status MalformedXml(std::string_view why);
// Parses xml into doc; its root element (local name `root`), or MalformedXML.
Result<pugi::xml_node> LoadRoot(pugi::xml_document& doc, std::string_view xml,
                                std::string_view root);
// An element's name without its namespace prefix ("s3:Bucket" -> "Bucket").
std::string_view LocalName(const pugi::xml_node& n);
// The first child element of that local name; an empty node when none.
pugi::xml_node Child(const pugi::xml_node& n, std::string_view name);

struct DeleteRequest {
  struct Object {
    std::string key;
    std::string version_id;  // "" when absent
    // Conditions of a conditional delete; unset when absent.
    std::optional<std::string> etag;                // quotes stripped
    std::optional<std::string> last_modified_time;  // as sent (ISO 8601)
    std::optional<std::string> size;                // as sent
  };
  bool quiet = false;
  std::vector<Object> objects;
};

// <CompleteMultipartUpload><Part><PartNumber/><ETag/><ChecksumCRC32/>...</Part>...
Result<std::vector<objstore::CompletePart>> ParseCompleteMultipart(std::string_view xml);
// <Delete><Quiet/><Object><Key/><VersionId/><ETag/><LastModifiedTime/><Size/></Object>...</Delete>
Result<DeleteRequest> ParseDelete(std::string_view xml);
// <Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>; at most
// max_tags (S3: 10 on an object, 50 on a bucket).
Result<std::map<std::string, std::string>> ParseTagging(std::string_view xml, size_t max_tags = 10);
// <CreateBucketConfiguration><LocationConstraint/></...>; "" if absent.
Result<std::string> ParseLocationConstraint(std::string_view xml);

// <VersioningConfiguration><Status/><MfaDelete/></...>; "" for an absent element.
struct VersioningRequest {
  std::string status;
  std::string mfa_delete;
};
Result<VersioningRequest> ParseVersioning(std::string_view xml);

// Incremental builder for response documents.
class XmlWriter {
 public:
  explicit XmlWriter(std::string_view root, bool with_ns = true);
  XmlWriter& Open(std::string_view name);
  XmlWriter& Close(std::string_view name);
  XmlWriter& Elem(std::string_view name, std::string_view text);
  // Without this, a string literal would pick the bool overload.
  XmlWriter& Elem(std::string_view name, const char* text) {
    return Elem(name, std::string_view(text));
  }
  XmlWriter& Elem(std::string_view name, const std::string& text) {
    return Elem(name, std::string_view(text));
  }
  XmlWriter& Elem(std::string_view name, uint64_t v);
  XmlWriter& Elem(std::string_view name, bool v);
  std::string Finish();

 private:
  std::string root_;
  std::string out_;
};

}  // namespace strata::s3
