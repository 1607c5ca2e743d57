#include "s3/errors.h"

#include <strata/core/strings.h>

namespace strata::s3 {
namespace {

struct CodeStatus {
  std::string_view code;
  int status;
};

constexpr CodeStatus kCodes[] = {
    {"AccessDenied", 403},
    {"AccessForbidden", 403},
    {"AuthorizationHeaderMalformed", 400},
    {"AuthorizationQueryParametersError", 400},
    {"BadDigest", 400},
    {"BadRequest", 400},
    {"BucketAlreadyExists", 409},
    {"BucketAlreadyOwnedByYou", 409},
    {"BucketNotEmpty", 409},
    {"ConditionalRequestConflict", 409},
    {"EntityTooLarge", 400},
    {"EntityTooSmall", 400},
    {"ExpiredToken", 400},
    {"IncompleteBody", 400},
    {"InternalError", 500},
    {"InvalidAccessKeyId", 403},
    {"InvalidArgument", 400},
    {"InvalidBucketName", 400},
    {"InvalidBucketState", 409},
    {"InvalidChunkSizeError", 403},
    {"InvalidDigest", 400},
    {"InvalidPart", 400},
    {"InvalidPartNumber", 416},
    {"InvalidPartOrder", 400},
    {"InvalidPolicyDocument", 400},
    {"InvalidRange", 416},
    {"InvalidRequest", 400},
    {"KMS.NotFoundException", 400},
    {"InvalidStorageClass", 400},
    {"InvalidTag", 400},
    {"InvalidToken", 400},
    {"InvalidWriteOffset", 400},
    {"KeyTooLongError", 400},
    {"MalformedACLError", 400},
    {"MalformedPOSTRequest", 400},
    {"MalformedPolicy", 400},
    {"MalformedXML", 400},
    {"MaxPostPreDataLengthExceededError", 400},
    {"MetadataTooLarge", 400},
    {"MethodNotAllowed", 405},
    {"MissingContentLength", 411},
    {"MissingSecurityHeader", 400},
    {"NoSuchBucket", 404},
    {"NoSuchBucketPolicy", 404},
    {"NoSuchCORSConfiguration", 404},
    {"NoSuchKey", 404},
    {"NoSuchLifecycleConfiguration", 404},
    {"NoSuchObjectLockConfiguration", 404},
    {"NoSuchPublicAccessBlockConfiguration", 404},
    {"NoSuchTagSet", 404},
    {"NoSuchUpload", 404},
    {"NoSuchVersion", 404},
    {"NotImplemented", 501},
    {"ObjectLockConfigurationNotFoundError", 404},
    {"PolicyTooLarge", 400},
    {"PreconditionFailed", 412},
    {"RequestTimeTooSkewed", 403},
    {"RequestTimeout", 400},
    {"ServerSideEncryptionConfigurationNotFoundError", 404},
    {"ServiceUnavailable", 503},
    {"SignatureDoesNotMatch", 403},
    {"SlowDown", 503},
    {"TooManyParts", 400},
    {"UnexpectedContent", 400},
    {"UnresolvableGrantByEmailAddress", 400},
    {"XAmzContentSHA256Mismatch", 400},
    {"XNotImplemented", 501},
};

}  // namespace

int HttpStatusForCode(std::string_view code) {
  for (const auto& c : kCodes)
    if (c.code == code) return c.status;
  return 0;
}

S3Error ToS3Error(const Status& st, std::string_view fallback_not_found) {
  const std::string& m = st.message();
  size_t colon = m.find(": ");
  if (colon != std::string::npos && colon < 48) {
    std::string_view code(m.data(), colon);
    if (int http = HttpStatusForCode(code); http != 0) {
      // A code S3 answers with 400 or 403 depending on the cause
      // (AuthorizationQueryParametersError: malformed -> 400, X-Amz-Expires out
      // of range -> 403): the Status kind says which.
      if (http == 400 && st.code() == StatusCode::kPermissionDenied) http = 403;
      return {http, std::string(code), m.substr(colon + 2)};
    }
  }
  if (HttpStatusForCode(m) != 0) return {HttpStatusForCode(m), m, m};
  switch (st.code()) {
    case StatusCode::kNotFound:
      return {HttpStatusForCode(fallback_not_found), std::string(fallback_not_found), m};
    case StatusCode::kAlreadyExists: return {409, "BucketAlreadyOwnedByYou", m};
    case StatusCode::kInvalidArgument: return {400, "InvalidArgument", m};
    case StatusCode::kPreconditionFailed:
      return {412, "PreconditionFailed", m.empty() ? "At least one of the pre-conditions you specified did not hold" : m};
    case StatusCode::kConflict: return {409, "ConditionalRequestConflict", m};
    case StatusCode::kPermissionDenied: return {403, "AccessDenied", m};
    case StatusCode::kNotSupported: return {501, "NotImplemented", m};
    case StatusCode::kResourceExhausted: return {507, "InsufficientStorage", m};
    case StatusCode::kUnavailable: return {503, "ServiceUnavailable", m};
    case StatusCode::kCorruption:
      return {500, "InternalError", "stored data failed its checksum: " + m};
    default: return {500, "InternalError", m};
  }
}

Status MakeError(std::string_view code, std::string_view message) {
  std::string m(code);
  m += ": ";
  m += message;
  int http = HttpStatusForCode(code);
  StatusCode sc = http == 404   ? StatusCode::kNotFound
                  : http == 403 ? StatusCode::kPermissionDenied
                  : http == 412 ? StatusCode::kPreconditionFailed
                  : http == 409 ? StatusCode::kConflict
                  : http == 501 ? StatusCode::kNotSupported
                  : http >= 500 ? StatusCode::kInternal
                                : StatusCode::kInvalidArgument;
  return Status(sc, std::move(m));
}

std::string ErrorXml(const S3Error& e, std::string_view resource, std::string_view request_id) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>";
  x += XmlEscape(e.code);
  x += "</Code><Message>";
  x += XmlEscape(e.message);
  x += "</Message><Resource>";
  x += XmlEscape(resource);
  x += "</Resource><RequestId>";
  x += request_id;
  x += "</RequestId></Error>";
  return x;
}

}  // namespace strata::s3
