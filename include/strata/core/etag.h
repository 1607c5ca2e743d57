// Entity tags as HTTP (RFC 9110 section 8.8.3) and S3 write them. Stores keep
// an ETag bare (`d41d8cd98f00b204e9800998ecf8427e`); the wire carries it
// quoted (`"d41d..."`), and If-Match / If-None-Match carry lists of them
// (`"a", W/"b"`) or `*`. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// `"abc"`, ` "abc" `, `W/"abc"` and `abc` -> `abc`.
std::string UnquoteETag(std::string_view etag);
// `abc` or `"abc"` -> `"abc"`.
std::string QuoteETag(std::string_view etag);
// True when the If-Match / If-None-Match list `header` names `etag` (bare) or is `*`.
bool ETagListMatches(std::string_view header, std::string_view etag);

}  // namespace strata
