// S3 error codes, their HTTP statuses, and the mapping from Status.
#pragma once

#include <string>
#include <string_view>

#include <strata/core/status.h>

namespace strata::s3 {

struct S3Error {
  int http_status = 500;
  std::string code;     // "NoSuchKey"
  std::string message;  // human text
};

// HTTP status for a known S3 error code; 0 when unknown.
int HttpStatusForCode(std::string_view code);

// A Status whose message is "Code: text" with a known S3 code maps to that code;
// otherwise the StatusCode picks a generic one (NotFound -> fallback_not_found).
S3Error ToS3Error(const Status& st, std::string_view fallback_not_found = "NoSuchKey");

// Builds a Status that ToS3Error maps to `code` (kind chosen from the HTTP status).
Status MakeError(std::string_view code, std::string_view message);

// <Error><Code>..</Code><Message>..</Message><Resource>..</Resource><RequestId>..</RequestId></Error>
std::string ErrorXml(const S3Error& e, std::string_view resource, std::string_view request_id);

}  // namespace strata::s3
