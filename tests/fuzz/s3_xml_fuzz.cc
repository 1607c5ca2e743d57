// Fuzzes the XML request bodies of the S3 frontend (pugixml underneath, then
// S3's schema rules): CompleteMultipartUpload, DeleteObjects, Tagging,
// CreateBucketConfiguration (general purpose and directory buckets),
// Versioning, Lifecycle, CORS, ObjectLock, Retention and LegalHold.
// The first byte picks the document; the rest is the body.
// Configurations the frontend stores as XML and parses again when they are
// read back (lifecycle, CORS, object lock) must survive that: the document
// written for an accepted configuration parses, and writes the same again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "s3/cors.h"
#include "s3/express.h"
#include "s3/lifecycle.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

namespace s3 = strata::s3;

namespace {

template <class Parse, class Write>
void RoundTrip(std::string_view xml, Parse parse, Write write) {
  auto first = parse(xml);
  if (!first.has_value()) return;
  const std::string doc = write(*first);
  auto again = parse(doc);
  if (!again.has_value()) __builtin_trap();  // a stored configuration that cannot be read back
  if (write(*again) != doc) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view xml(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 12) {
    case 0:
      (void)s3::ParseCompleteMultipart(xml);
      break;
    case 1:
      (void)s3::ParseDelete(xml);
      break;
    case 2:
      (void)s3::ParseTagging(xml, 10);
      break;
    case 3:
      (void)s3::ParseLocationConstraint(xml);
      break;
    case 4:
      (void)s3::ParseVersioning(xml);
      break;
    case 5:
      RoundTrip(xml, s3::ParseLifecycle, s3::SerializeLifecycle);
      break;
    case 6:
      RoundTrip(xml, s3::ParseCorsConfig, s3::CorsConfigXml);
      break;
    case 7:
      RoundTrip(xml, s3::ParseObjectLockXml, s3::ObjectLockXml);
      break;
    case 8:
      RoundTrip(xml, s3::ParseRetentionXml, s3::RetentionXml);
      break;
    case 9:
      RoundTrip(xml, s3::ParseLegalHoldXml, s3::LegalHoldXml);
      break;
    case 10:
      (void)s3::ParseCreateBucketType("fuzz--use1-az4--x-s3", xml);
      break;
    default:
      (void)s3::ParseTagging(xml, 50);
      break;
  }
  return 0;
}
