// GetObjectAttributes (GET /bucket/key?attributes): the attributes named in
// x-amz-object-attributes (ETag, Checksum, ObjectParts, StorageClass,
// ObjectSize) without the object's bytes. As S3 answers it: the ETag has no
// quotes; a multipart object's checksum has no "-N" suffix (ChecksumType says
// COMPOSITE or FULL_OBJECT); ObjectParts is present only for multipart
// objects, and lists the parts (paged by x-amz-max-parts and
// x-amz-part-number-marker, like ListParts) only when their checksums make up
// a COMPOSITE checksum, else it holds PartsCount alone. An SSE-C object needs
// its key headers, as GetObject does.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/express.h"
#include "s3/frontend_internal.h"

namespace strata::s3 {

namespace {

using objstore::ObjectMeta;

constexpr int kMaxPartsPerPage = 1000;

struct AttributeSet {
  bool etag = false, checksum = false, parts = false, storage_class = false, size = false;
};

Result<AttributeSet> ParseAttributeList(std::optional<std::string_view> header) {
  AttributeSet a;
  bool any = false;
  for (std::string_view item : Split(header.value_or(""), ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    any = true;
    if (item == "ETag") {
      a.etag = true;
    } else if (item == "Checksum") {
      a.checksum = true;
    } else if (item == "ObjectParts") {
      a.parts = true;
    } else if (item == "StorageClass") {
      a.storage_class = true;
    } else if (item == "ObjectSize") {
      a.size = true;
    } else {
      return MakeError("InvalidArgument",
                       fmt::format("Invalid attribute name specified: {} (x-amz-object-attributes "
                                   "takes ETag, Checksum, ObjectParts, StorageClass, ObjectSize)",
                                   item));
    }
  }
  if (!any)
    return MakeError("InvalidRequest",
                     "The x-amz-object-attributes header specifying the attributes to be "
                     "retrieved is either missing or empty");
  return a;
}

// An optional non-negative integer header; `what` names it in the error.
Result<uint64_t> HeaderNumber(const Ctx& c, std::string_view name, uint64_t fallback) {
  auto h = c.H(name);
  if (!h) return fallback;
  auto v = ParseUint64(Trim(*h));
  if (!v)
    return MakeError("InvalidArgument",
                     fmt::format("{} must be a non-negative integer, not \"{}\"", name, *h));
  return *v;
}

std::string ChecksumElement(ChecksumAlgorithm a) {
  return "Checksum" + std::string(ChecksumAlgorithmName(a));
}

Status WriteParts(const Ctx& c, const ObjectMeta& m, XmlWriter& x) {
  x.Open("ObjectParts");
  x.Elem("PartsCount", static_cast<uint64_t>(m.parts.size()));
  const bool listed = m.checksum_composite && m.checksum_algorithm != ChecksumAlgorithm::kNone;
  if (listed) {
    STRATA_ASSIGN_OR_RETURN(uint64_t marker, HeaderNumber(c, "x-amz-part-number-marker", 0));
    STRATA_ASSIGN_OR_RETURN(uint64_t max_parts,
                            HeaderNumber(c, "x-amz-max-parts", kMaxPartsPerPage));
    if (max_parts > kMaxPartsPerPage) max_parts = kMaxPartsPerPage;
    x.Elem("PartNumberMarker", marker).Elem("MaxParts", max_parts);
    uint64_t n = 0, last = marker;
    bool truncated = false;
    for (const objstore::PartSummary& p : m.parts) {
      if (static_cast<uint64_t>(p.number) <= marker) continue;
      if (n == max_parts) {
        truncated = true;
        break;
      }
      ++n;
      last = static_cast<uint64_t>(p.number);
    }
    x.Elem("IsTruncated", truncated);
    if (truncated) x.Elem("NextPartNumberMarker", last);
    n = 0;
    for (const objstore::PartSummary& p : m.parts) {
      if (static_cast<uint64_t>(p.number) <= marker) continue;
      if (n++ == max_parts) break;
      x.Open("Part");
      if (!p.checksum.empty()) x.Elem(ChecksumElement(m.checksum_algorithm), p.checksum);
      x.Elem("PartNumber", static_cast<uint64_t>(p.number)).Elem("Size", p.size).Close("Part");
    }
  }
  x.Close("ObjectParts");
  return Status::Ok();
}

}  // namespace

Status Frontend::Impl::GetObjectAttributes(Ctx& c) {
  STRATA_ASSIGN_OR_RETURN(AttributeSet want, ParseAttributeList(c.H("x-amz-object-attributes")));
  // Opened as GetObject opens it, so an SSE-C object needs (and checks) its key.
  // The version ?versionId= names, with GetObject's answers when it is missing.
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<objstore::ObjectReader> opened,
                          OpenRequestedVersion(c, false));
  const ObjectMeta m = opened->meta();
  opened.reset();  // nothing is read: close it now
  AddVersionId(c, m);

  XmlWriter x("GetObjectAttributesResponse");
  if (want.etag) x.Elem("ETag", m.etag);
  if (want.checksum && m.checksum_algorithm != ChecksumAlgorithm::kNone && !m.checksum.empty()) {
    x.Open("Checksum")
        .Elem(ChecksumElement(m.checksum_algorithm), m.checksum)
        .Elem("ChecksumType", m.checksum_composite ? "COMPOSITE" : "FULL_OBJECT")
        .Close("Checksum");
  }
  if (want.parts && !m.parts.empty()) STRATA_RETURN_IF_ERROR(WriteParts(c, m, x));
  if (want.storage_class) x.Elem("StorageClass", ReportedStorageClass(c.bucket, m.storage_class));
  if (want.size) x.Elem("ObjectSize", m.size);
  c.w.AddHeader("Last-Modified", FormatHttpDate(m.mtime_ns));
  SendXml(c, 200, x.Finish());
  return Status::Ok();
}

}  // namespace strata::s3
