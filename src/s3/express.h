// S3 Express One Zone for the S3 frontend: directory bucket names, the
// CreateBucketConfiguration that makes one, and the session credentials that
// CreateSession hands out. Pure logic (no engine, no clock reads), so every
// rule is unit-tested; the handlers are in express_handlers.cc.
//
// Sessions are stateless. The token names the user (their long-term access
// key), the bucket, the expiry, the mode and the session's access key, and is
// sealed with an HMAC keyed from the user's secret key; the session's secret
// key is a second HMAC over the same fields. So the server keeps no session
// table (nothing grows with CreateSession calls, nothing is lost on restart), a
// token cannot be made or altered without the user's secret key, and removing
// a user or changing their secret key ends their sessions at once. A session
// never grants more than its user has: every request made with it is
// authorized as that user, and additionally confined to the session's bucket
// (and to reads for a ReadOnly session).
//
// Thread-safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/result.h>

namespace strata::s3 {

// "<base>--<zone-id>--x-s3": the names S3 reserves for directory buckets.
inline constexpr std::string_view kDirectoryBucketSuffix = "--x-s3";
// BucketInfo::configs entry of a directory bucket (its location, see
// DirectoryBucketConfig::Document).
inline constexpr std::string_view kDirectoryBucketConfigName = "s3express";
// Session credentials expire after 5 minutes, as in S3.
inline constexpr int64_t kSessionLifetimeNs = 300LL * 1'000'000'000;
inline constexpr std::string_view kSessionTokenHeader = "x-amz-s3session-token";
inline constexpr std::string_view kSessionTokenQuery = "X-Amz-S3session-Token";  // presigned URLs

// True for names ending in "--x-s3" (general purpose buckets may not).
bool IsDirectoryBucketName(std::string_view bucket);

// Checks the directory bucket naming rules (3-63 characters of lower-case
// letters, digits and '-', starting and ending with a letter or digit, ending
// "--<zone-id>--x-s3") and returns the zone id ("usw2-az1"). InvalidBucketName
// otherwise.
Result<std::string> DirectoryBucketZone(std::string_view bucket);

struct DirectoryBucketConfig {
  std::string location_type;    // "AvailabilityZone" or "LocalZone"
  std::string location_name;    // the zone id, as in the name
  std::string data_redundancy;  // "SingleAvailabilityZone" or "SingleLocalZone"

  // What the bucket's kDirectoryBucketConfigName entry holds: "type\nname\nredundancy".
  std::string Document() const;
  static Result<DirectoryBucketConfig> FromDocument(std::string_view doc);
};

// The S3 Express part of CreateBucket: validates the CreateBucketConfiguration
// body (empty allowed) against the bucket's name. Returns the directory
// bucket's configuration, or a config with an empty location_type for a
// general purpose bucket. Errors: InvalidBucketName (a --x-s3 name without
// Bucket/Type=Directory, or Directory with another name), InvalidArgument
// (Location or DataRedundancy that does not fit), MalformedXML.
Result<DirectoryBucketConfig> ParseCreateBucketType(std::string_view bucket, std::string_view xml);

enum class SessionMode : uint8_t { kReadWrite, kReadOnly };

// What a session token says. Unverified until VerifySessionToken succeeds.
struct SessionClaims {
  std::string user_access_key;  // the long-term key of the user who created it
  std::string bucket;
  std::string access_key;  // the session's own access key id
  int64_t expires_ns = 0;  // Unix nanoseconds
  SessionMode mode = SessionMode::kReadWrite;
};

struct SessionCredentials {
  std::string access_key;
  std::string secret_key;
  std::string token;
  int64_t expires_ns = 0;
};

// New credentials for claims (claims.access_key is replaced by a fresh random one).
SessionCredentials IssueSession(SessionClaims claims, std::string_view user_secret);

// The claims of a token, before its seal is checked. InvalidToken if it is not
// one of ours.
Result<SessionClaims> ReadSessionToken(std::string_view token);

// Checks the token's seal with the user's secret key and its expiry; returns
// the session's secret key. InvalidToken (forged, altered, another user's
// secret) or ExpiredToken.
Result<std::string> VerifySessionToken(std::string_view token, std::string_view user_secret,
                                       int64_t now_ns);

}  // namespace strata::s3
