#include "objstore/s3_xml.h"

#include <pugixml.hpp>

#include <strata/core/etag.h>
#include <strata/core/strings.h>

namespace strata::objstore {
namespace {

// No end-of-line normalisation and whitespace-only text kept: an element's
// text is exactly the bytes the server sent, entities decoded.
constexpr unsigned kParseFlags = pugi::parse_cdata | pugi::parse_escapes | pugi::parse_ws_pcdata;

Status Load(pugi::xml_document& doc, std::string_view xml) {
  const pugi::xml_parse_result r =
      doc.load_buffer(xml.data(), xml.size(), kParseFlags, pugi::encoding_utf8);
  if (!r) {
    return Status::IOError("malformed XML in the S3 response (" + std::string(r.description()) +
                           " at byte " + std::to_string(r.offset) + ")");
  }
  return Status::Ok();
}

std::string_view LocalName(const pugi::xml_node& n) {
  std::string_view name = n.name();
  if (size_t colon = name.find(':'); colon != std::string_view::npos) name.remove_prefix(colon + 1);
  return name;
}

// The first child element called `name`.
pugi::xml_node Child(const pugi::xml_node& n, std::string_view name) {
  for (pugi::xml_node c : n.children()) {
    if (c.type() == pugi::node_element && LocalName(c) == name) return c;
  }
  return {};
}

// All character data directly in n.
std::string TextOf(const pugi::xml_node& n) {
  std::string out;
  for (pugi::xml_node c : n.children()) {
    if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) out.append(c.value());
  }
  return out;
}

// The text of the first child called `name` ("" if there is none).
std::string Text(const pugi::xml_node& n, std::string_view name) {
  pugi::xml_node c = Child(n, name);
  return c ? TextOf(c) : std::string();
}

S3XmlError ErrorOf(const pugi::xml_node& n) {
  return S3XmlError{Text(n, "Code"), Text(n, "Message"), Text(n, "Key"), Text(n, "VersionId")};
}

// Loads the document; its root, or null when the root is <Error> (then
// out->error is set).
Result<pugi::xml_node> Root(pugi::xml_document& doc, std::string_view xml, S3XmlResponse* out) {
  STRATA_RETURN_IF_ERROR(Load(doc, xml));
  pugi::xml_node root = doc.document_element();
  if (LocalName(root) == "Error") {
    out->error = ErrorOf(root);
    return pugi::xml_node();
  }
  return root;
}

// The last of kResponseChecksums that n has as a Checksum<ALG> child.
void LastChecksum(const pugi::xml_node& n, ChecksumAlgorithm* alg, std::string* value) {
  for (ChecksumAlgorithm a : kResponseChecksums) {
    std::string v = Text(n, "Checksum" + std::string(ChecksumAlgorithmName(a)));
    if (!v.empty()) {
      *alg = a;
      *value = std::move(v);
    }
  }
}

}  // namespace

Status ParseListBucketsXml(std::string_view xml, ListBucketsXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  if (pugi::xml_node bs = Child(x, "Buckets")) {
    for (pugi::xml_node b : bs.children()) {
      if (b.type() != pugi::node_element || LocalName(b) != "Bucket") continue;
      out->buckets.push_back({Text(b, "Name"), ParseIso8601(Text(b, "CreationDate")).value_or(0)});
    }
  }
  return Status::Ok();
}

Status ParseInitiateMultipartXml(std::string_view xml, InitiateMultipartXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (x) out->upload_id = Text(x, "UploadId");
  return Status::Ok();
}

Status ParseWriteResultXml(std::string_view xml, WriteResultXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  out->etag = UnquoteETag(Text(x, "ETag"));
  out->mtime_ns = ParseIso8601(Text(x, "LastModified"));
  LastChecksum(x, &out->checksum_algorithm, &out->checksum);
  return Status::Ok();
}

Status ParseListObjectsXml(std::string_view xml, ListObjectsXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  const bool url_encoded = Text(x, "EncodingType") == "url";
  auto dec = [&](const std::string& s) {
    if (!url_encoded) return s;
    auto d = UriDecode(s, /*plus_as_space=*/true);
    return d ? *d : s;
  };
  for (pugi::xml_node n : x.children()) {
    if (n.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(n);
    if (name == "Contents") {
      ObjectInfo i;
      i.key = dec(Text(n, "Key"));
      i.size = ParseUint64(Text(n, "Size")).value_or(0);
      i.etag = UnquoteETag(Text(n, "ETag"));
      i.mtime_ns = ParseIso8601(Text(n, "LastModified")).value_or(0);
      const std::string alg = Text(n, "ChecksumAlgorithm");
      for (ChecksumAlgorithm a : kResponseChecksums) {
        if (alg == ChecksumAlgorithmName(a)) i.checksum_algorithm = a;
      }
      i.storage_class = Text(n, "StorageClass");
      out->objects.push_back(std::move(i));
    } else if (name == "CommonPrefixes") {
      out->common_prefixes.push_back(dec(Text(n, "Prefix")));
    }
  }
  out->truncated = Text(x, "IsTruncated") == "true";
  out->next_token = Text(x, "NextContinuationToken");
  return Status::Ok();
}

Status ParseListPartsXml(std::string_view xml, ListPartsXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  for (pugi::xml_node n : x.children()) {
    if (n.type() != pugi::node_element || LocalName(n) != "Part") continue;
    UploadedPart p;
    p.number = static_cast<int>(ParseUint64(Text(n, "PartNumber")).value_or(0));
    p.etag = UnquoteETag(Text(n, "ETag"));
    p.size = ParseUint64(Text(n, "Size")).value_or(0);
    ChecksumAlgorithm alg = ChecksumAlgorithm::kNone;
    LastChecksum(n, &alg, &p.checksum);
    out->parts.push_back(std::move(p));
  }
  out->truncated = Text(x, "IsTruncated") == "true";
  out->next_marker = Text(x, "NextPartNumberMarker");
  return Status::Ok();
}

Status ParseDeleteResultXml(std::string_view xml, DeleteResultXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  for (pugi::xml_node e : x.children()) {
    if (e.type() == pugi::node_element && LocalName(e) == "Error")
      out->errors.push_back(ErrorOf(e));
  }
  return Status::Ok();
}

std::optional<S3XmlError> ParseErrorXml(std::string_view xml) {
  pugi::xml_document doc;
  if (!Load(doc, xml).ok()) return std::nullopt;
  pugi::xml_node root = doc.document_element();
  if (LocalName(root) != "Error") return std::nullopt;
  return ErrorOf(root);
}

Status ParseListVersionsXml(std::string_view xml, ListVersionsXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  const bool url_encoded = Text(x, "EncodingType") == "url";
  auto dec = [&](const std::string& s) {
    if (!url_encoded) return s;
    auto d = UriDecode(s, /*plus_as_space=*/true);
    return d ? *d : s;
  };
  for (pugi::xml_node n : x.children()) {
    if (n.type() != pugi::node_element) continue;
    const std::string_view name = LocalName(n);
    if (name != "Version" && name != "DeleteMarker") continue;
    ObjectVersion v;
    v.key = dec(Text(n, "Key"));
    v.version_id = Text(n, "VersionId");
    v.delete_marker = name == "DeleteMarker";
    v.is_latest = Text(n, "IsLatest") == "true";
    v.size = ParseUint64(Text(n, "Size")).value_or(0);
    v.etag = UnquoteETag(Text(n, "ETag"));
    v.mtime_ns = ParseIso8601(Text(n, "LastModified")).value_or(0);
    v.storage_class = Text(n, "StorageClass");
    out->page.versions.push_back(std::move(v));
  }
  if (Text(x, "IsTruncated") == "true") {
    out->page.next_key_marker = dec(Text(x, "NextKeyMarker"));
    out->page.next_version_marker = Text(x, "NextVersionIdMarker");
    if (out->page.next_key_marker.empty()) {
      return Status::IOError("ListObjectVersions response is truncated but has no NextKeyMarker");
    }
  }
  return Status::Ok();
}

Status ParseListUploadsXml(std::string_view xml, ListUploadsXml* out) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node x, Root(doc, xml, out));
  if (!x) return Status::Ok();
  const bool url_encoded = Text(x, "EncodingType") == "url";
  for (pugi::xml_node n : x.children()) {
    if (n.type() != pugi::node_element || LocalName(n) != "Upload") continue;
    MultipartUploadEntry u;
    u.key = Text(n, "Key");
    if (url_encoded) {
      if (auto d = UriDecode(u.key, /*plus_as_space=*/true)) u.key = *d;
    }
    u.upload_id = Text(n, "UploadId");
    u.initiated_ns = ParseIso8601(Text(n, "Initiated")).value_or(0);
    out->page.uploads.push_back(std::move(u));
  }
  if (Text(x, "IsTruncated") == "true") {
    out->page.next_key_marker = Text(x, "NextKeyMarker");
    if (url_encoded) {
      if (auto d = UriDecode(out->page.next_key_marker, true)) out->page.next_key_marker = *d;
    }
    out->page.next_upload_id_marker = Text(x, "NextUploadIdMarker");
    if (out->page.next_key_marker.empty()) {
      return Status::IOError("ListMultipartUploads response is truncated but has no NextKeyMarker");
    }
  }
  return Status::Ok();
}

}  // namespace strata::objstore
