// A bucket's CORS configuration (PutBucketCors): its parsing and checking,
// the document GetBucketCors answers (also the form it is stored in), and the
// evaluation of a cross-origin request against its rules, as the Amazon S3
// user guide describes it ("How does Amazon S3 evaluate the CORS
// configuration on a bucket?"): the first rule whose AllowedOrigin matches the
// Origin, whose AllowedMethod holds the method (for a preflight, the
// Access-Control-Request-Method) and, for a preflight, whose AllowedHeader
// patterns match every header of Access-Control-Request-Headers. Origins and
// methods are compared case-sensitively, header names case-insensitively; a
// pattern may hold one '*', which matches any run of characters.
// Plain values, no I/O; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

inline constexpr size_t kMaxCorsRules = 100;
inline constexpr size_t kMaxCorsBytes = 64 * 1024;
inline constexpr const char* kCorsConfig = "cors";  // BucketInfo::configs name

struct CorsRule {
  std::string id;
  std::vector<std::string> origins;
  std::vector<std::string> methods;          // GET PUT POST DELETE HEAD
  std::vector<std::string> allowed_headers;  // patterns
  std::vector<std::string> expose_headers;
  std::optional<int64_t> max_age_seconds;
};

struct CorsConfig {
  std::vector<CorsRule> rules;
};

// A <CORSConfiguration> document: MalformedXML when it does not follow the
// schema (no rule, a rule without AllowedOrigin or AllowedMethod, an unknown
// element, more than 100 rules, over 64 KB), InvalidRequest for a value S3
// refuses (a method other than GET PUT POST DELETE HEAD, an origin or header
// with more than one '*', an ExposeHeader with one, an ID over 255 characters).
Result<CorsConfig> ParseCorsConfig(std::string_view xml);

// The <CORSConfiguration> document of a configuration (GetBucketCors).
std::string CorsConfigXml(const CorsConfig& config);

// `pattern` (at most one '*') against `value`.
bool CorsPatternMatch(std::string_view pattern, std::string_view value, bool ignore_case);

// The comma-separated names of Access-Control-Request-Headers, trimmed and
// lower-cased; empty items dropped.
std::vector<std::string> SplitHeaderList(std::string_view list);

// The first rule that allows the request; nullptr when none does.
// request_headers: nullptr for an actual request (headers are not checked).
const CorsRule* MatchCorsRule(const CorsConfig& config, std::string_view origin,
                              std::string_view method,
                              const std::vector<std::string>* request_headers);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The Access-Control-* response headers for a request the rule allows:
// Allow-Origin ("*" when the rule's matching origin is "*", else the Origin,
// with Allow-Credentials: true), Allow-Methods (the rule's), Expose-Headers,
// Max-Age, Vary; a preflight also gets Allow-Headers (the requested ones).
HeaderList CorsResponseHeaders(const CorsRule& rule, std::string_view origin,
                               const std::vector<std::string>* request_headers);

}  // namespace strata::s3
