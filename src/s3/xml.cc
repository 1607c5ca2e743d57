#include "s3/xml.h"

#include <pugixml.hpp>

#include <strata/core/etag.h>
#include <strata/core/strings.h>

#include "s3/errors.h"

namespace strata::s3 {

Status MalformedXml(std::string_view why) {
  return MakeError("MalformedXML",
                   "The XML you provided was not well-formed or did not validate "
                   "against our published schema: " +
                       std::string(why));
}

Result<pugi::xml_node> LoadRoot(pugi::xml_document& doc, std::string_view xml,
                                std::string_view root) {
  pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default);
  if (!r) return MalformedXml(r.description());
  pugi::xml_node n = doc.document_element();
  // Match the local name: clients may or may not use the S3 namespace prefix.
  std::string_view name = n.name();
  if (size_t c = name.find(':'); c != std::string_view::npos) name = name.substr(c + 1);
  if (name != root)
    return MakeError("MalformedXML", "expected a <" + std::string(root) + "> document, got <" +
                                         std::string(n.name()) + ">");
  return n;
}

std::string_view LocalName(const pugi::xml_node& n) {
  std::string_view name = n.name();
  if (size_t c = name.find(':'); c != std::string_view::npos) name = name.substr(c + 1);
  return name;
}

pugi::xml_node Child(const pugi::xml_node& n, std::string_view name) {
  for (pugi::xml_node c : n.children())
    if (LocalName(c) == name) return c;
  return {};
}

Result<std::vector<objstore::CompletePart>> ParseCompleteMultipart(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "CompleteMultipartUpload"));
  std::vector<objstore::CompletePart> parts;
  for (pugi::xml_node p : root.children()) {
    if (LocalName(p) != "Part") continue;
    objstore::CompletePart cp;
    pugi::xml_node num = Child(p, "PartNumber");
    auto n = ParseUint64(Trim(num.text().get()));
    if (!num || !n || *n < 1 || *n > 10000)
      return MakeError("MalformedXML", "each <Part> needs a <PartNumber> between 1 and 10000");
    cp.number = static_cast<int>(*n);
    std::string etag(Trim(Child(p, "ETag").text().get()));
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
      etag = etag.substr(1, etag.size() - 2);
    if (etag.size() >= 12 && etag.rfind("&quot;", 0) == 0) etag = etag.substr(6, etag.size() - 12);
    cp.etag = etag;
    for (const char* name : {"ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1",
                             "ChecksumSHA256"}) {
      if (pugi::xml_node c = Child(p, name)) cp.checksum = std::string(Trim(c.text().get()));
    }
    parts.push_back(std::move(cp));
  }
  if (parts.empty())
    return MakeError("MalformedXML", "CompleteMultipartUpload lists no parts");
  return parts;
}

Result<VersioningRequest> ParseVersioning(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "VersioningConfiguration"));
  VersioningRequest v;
  v.status = std::string(Trim(Child(root, "Status").text().get()));
  v.mfa_delete = std::string(Trim(Child(root, "MfaDelete").text().get()));
  return v;
}

Result<DeleteRequest> ParseDelete(std::string_view xml) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "Delete"));
  DeleteRequest d;
  d.quiet = IEquals(Trim(Child(root, "Quiet").text().get()), "true");
  for (pugi::xml_node o : root.children()) {
    if (LocalName(o) != "Object") continue;
    pugi::xml_node k = Child(o, "Key");
    if (!k) return MakeError("MalformedXML", "each <Object> needs a <Key>");
    DeleteRequest::Object obj;
    obj.key = k.text().get();
    obj.version_id = Child(o, "VersionId").text().get();
    auto opt = [&o](const char* name) -> std::optional<std::string> {
      pugi::xml_node n = Child(o, name);
      if (!n) return std::nullopt;
      return std::string(Trim(n.text().get()));
    };
    obj.etag = opt("ETag");
    if (obj.etag) obj.etag = UnquoteETag(*obj.etag);
    obj.last_modified_time = opt("LastModifiedTime");
    obj.size = opt("Size");
    d.objects.push_back(std::move(obj));
  }
  if (d.objects.size() > 1000)
    return MakeError("MalformedXML", "DeleteObjects takes at most 1000 keys per request");
  return d;
}

Result<std::map<std::string, std::string>> ParseTagging(std::string_view xml, size_t max_tags) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "Tagging"));
  std::map<std::string, std::string> tags;
  for (pugi::xml_node t : Child(root, "TagSet").children()) {
    if (LocalName(t) != "Tag") continue;
    std::string k = Child(t, "Key").text().get();
    std::string v = Child(t, "Value").text().get();
    if (k.empty() || k.size() > 128 || v.size() > 256)
      return MakeError("InvalidTag", "tag keys are 1-128 characters and values up to 256");
    if (!tags.emplace(k, v).second)
      return MakeError("InvalidTag", "Cannot provide multiple Tags with the same key");
  }
  if (tags.size() > max_tags)
    return MakeError("InvalidTag",
                     max_tags == 10
                         ? std::string("Object tags cannot be greater than 10")
                         : "Bucket tag count cannot be greater than " + std::to_string(max_tags));
  return tags;
}

Result<std::string> ParseLocationConstraint(std::string_view xml) {
  if (Trim(xml).empty()) return std::string();
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(pugi::xml_node root, LoadRoot(doc, xml, "CreateBucketConfiguration"));
  return std::string(Trim(Child(root, "LocationConstraint").text().get()));
}

XmlWriter::XmlWriter(std::string_view root, bool with_ns) : root_(root) {
  out_.reserve(1024);
  out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<";
  out_ += root;
  if (with_ns) out_ += " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";
  out_ += ">";
}

XmlWriter& XmlWriter::Open(std::string_view name) {
  out_ += '<';
  out_ += name;
  out_ += '>';
  return *this;
}

XmlWriter& XmlWriter::Close(std::string_view name) {
  out_ += "</";
  out_ += name;
  out_ += '>';
  return *this;
}

XmlWriter& XmlWriter::Elem(std::string_view name, std::string_view text) {
  Open(name);
  out_ += XmlEscape(text);
  return Close(name);
}

XmlWriter& XmlWriter::Elem(std::string_view name, uint64_t v) {
  return Elem(name, std::string_view(std::to_string(v)));
}

XmlWriter& XmlWriter::Elem(std::string_view name, bool v) {
  return Elem(name, std::string_view(v ? "true" : "false"));
}

std::string XmlWriter::Finish() {
  Close(root_);
  return std::move(out_);
}

}  // namespace strata::s3
