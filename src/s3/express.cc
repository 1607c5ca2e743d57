#include "s3/express.h"

#include <random>
#include <vector>

#include <pugixml.hpp>

#include <strata/core/checksum.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>

#include "s3/errors.h"
#include "s3/xml.h"

namespace strata::s3 {
namespace {

constexpr int64_t kNanosPerSec = 1'000'000'000;
constexpr std::string_view kTokenVersion = "strata-s3x-1";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Status BadName(std::string_view bucket, std::string_view why) {
  return MakeError("InvalidBucketName", "The specified bucket is not valid: \"" +
                                            std::string(bucket) + "\" " + std::string(why));
}

std::string Text(const pugi::xml_node& n) { return std::string(Trim(n.text().get())); }

// The key that seals a user's session tokens and derives their session
// secrets: only someone holding the user's secret key can compute it.
std::string SessionKey(std::string_view user_secret) {
  return HmacSha256(user_secret, "strata s3express session key v1");
}

std::string Payload(const SessionClaims& c) {
  std::string p;
  p.reserve(96 + c.bucket.size() + c.user_access_key.size());
  p.append(kTokenVersion).push_back('\n');
  p.append(c.user_access_key).push_back('\n');
  p.append(c.bucket).push_back('\n');
  p.append(std::to_string(c.expires_ns / kNanosPerSec)).push_back('\n');
  p.append(c.mode == SessionMode::kReadOnly ? "ReadOnly" : "ReadWrite").push_back('\n');
  p.append(c.access_key);
  return p;
}

std::string Seal(std::string_view key, std::string_view payload) {
  return HmacSha256(key, "token\n" + std::string(payload));
}

std::string SessionSecret(std::string_view key, std::string_view payload) {
  return Base64Encode(HmacSha256(key, "secret\n" + std::string(payload)));
}

Status BadToken() {
  return MakeError("InvalidToken", "The provided token is malformed or otherwise invalid.");
}

// 16 random characters of the base-32 alphabet (80 bits), after "ASIA" as AWS
// temporary access keys start.
std::string NewSessionAccessKey() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  thread_local std::random_device rd;  // the kernel's CSPRNG on Linux
  std::string ak = "ASIA";
  for (int i = 0; i < 4; ++i) {
    uint32_t r = rd();
    for (int j = 0; j < 4; ++j, r >>= 5) ak.push_back(kAlphabet[r & 31]);
  }
  return ak;
}

}  // namespace

bool IsDirectoryBucketName(std::string_view bucket) {
  return EndsWith(bucket, kDirectoryBucketSuffix);
}

Result<std::string> DirectoryBucketZone(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63)
    return BadName(bucket, "must be 3 to 63 characters long, the --zone-id--x-s3 suffix included");
  if (!IsDirectoryBucketName(bucket))
    return BadName(bucket,
                   "is not a directory bucket name: it must end in --zone-id--x-s3 "
                   "(e.g. mybucket--usw2-az1--x-s3)");
  for (char c : bucket) {
    if (!IsLowerAlnum(c) && c != '-')
      return BadName(bucket, "may contain only lower-case letters, digits and '-'");
  }
  std::string_view stem = bucket.substr(0, bucket.size() - kDirectoryBucketSuffix.size());
  const size_t cut = stem.rfind("--");
  if (cut == std::string_view::npos)
    return BadName(bucket, "must end in --zone-id--x-s3 (e.g. mybucket--usw2-az1--x-s3)");
  std::string_view base = stem.substr(0, cut);
  std::string_view zone = stem.substr(cut + 2);
  if (base.empty() || !IsLowerAlnum(base.front()) || !IsLowerAlnum(base.back()))
    return BadName(bucket,
                   "must start with a letter or digit and have a base name before "
                   "--zone-id--x-s3 that ends with one");
  if (zone.empty() || !IsLowerAlnum(zone.front()) || !IsLowerAlnum(zone.back()))
    return BadName(bucket, "has no valid zone id before --x-s3 (e.g. usw2-az1)");
  if (StartsWith(bucket, "xn--") || StartsWith(bucket, "sthree-") ||
      StartsWith(bucket, "amzn-s3-demo-"))
    return BadName(bucket, "starts with a reserved prefix (xn--, sthree-, amzn-s3-demo-)");
  return std::string(zone);
}

std::string DirectoryBucketConfig::Document() const {
  return location_type + "\n" + location_name + "\n" + data_redundancy;
}

Result<DirectoryBucketConfig> DirectoryBucketConfig::FromDocument(std::string_view doc) {
  std::vector<std::string_view> f = Split(doc, '\n');
  if (f.size() != 3) return Status::Corruption("malformed directory bucket configuration");
  return DirectoryBucketConfig{std::string(f[0]), std::string(f[1]), std::string(f[2])};
}

Result<DirectoryBucketConfig> ParseCreateBucketType(std::string_view bucket, std::string_view xml) {
  std::string bucket_type, location_type, location_name, redundancy, constraint;
  bool has_location = false;
  if (!Trim(xml).empty()) {
    pugi::xml_document doc;
    pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default);
    if (!r) return MalformedXml(r.description());
    pugi::xml_node root = doc.document_element();
    if (LocalName(root) != "CreateBucketConfiguration")
      return MakeError("MalformedXML", "expected a <CreateBucketConfiguration> document, got <" +
                                           std::string(root.name()) + ">");
    constraint = Text(Child(root, "LocationConstraint"));
    if (pugi::xml_node b = Child(root, "Bucket")) {
      bucket_type = Text(Child(b, "Type"));
      redundancy = Text(Child(b, "DataRedundancy"));
    }
    if (pugi::xml_node l = Child(root, "Location")) {
      has_location = true;
      location_type = Text(Child(l, "Type"));
      location_name = Text(Child(l, "Name"));
    }
  }
  const bool directory = bucket_type == "Directory";
  if (!bucket_type.empty() && !directory)
    return MakeError("InvalidArgument", "Bucket Type \"" + bucket_type +
                                            "\" is not valid; the only bucket type is Directory");
  if (!directory) {
    if (IsDirectoryBucketName(bucket))
      return BadName(bucket,
                     "ends in --x-s3, which is reserved for directory buckets: create it "
                     "with CreateBucketConfiguration Bucket/Type=Directory and a Location");
    if (has_location || !redundancy.empty())
      return MakeError("InvalidArgument",
                       "Location and DataRedundancy are only supported for directory buckets "
                       "(Bucket/Type=Directory)");
    return DirectoryBucketConfig{};
  }
  STRATA_ASSIGN_OR_RETURN(std::string zone, DirectoryBucketZone(bucket));
  if (!constraint.empty())
    return MakeError("InvalidArgument",
                     "LocationConstraint is not supported for directory buckets; give Location "
                     "(Type and Name) instead");
  if (!has_location || location_name.empty())
    return MakeError("InvalidArgument",
                     "A directory bucket needs a Location with Type "
                     "(AvailabilityZone or LocalZone) and Name (the zone id)");
  if (location_type != "AvailabilityZone" && location_type != "LocalZone")
    return MakeError("InvalidArgument", "Location Type \"" + location_type +
                                            "\" is not valid; use AvailabilityZone or LocalZone");
  if (location_name != zone)
    return MakeError("InvalidArgument", "Location Name \"" + location_name +
                                            "\" does not match the zone id \"" + zone +
                                            "\" in the bucket name");
  const std::string want_redundancy =
      location_type == "AvailabilityZone" ? "SingleAvailabilityZone" : "SingleLocalZone";
  if (redundancy.empty()) redundancy = want_redundancy;
  if (redundancy != want_redundancy)
    return MakeError("InvalidArgument", "DataRedundancy \"" + redundancy +
                                            "\" is not valid for a " + location_type +
                                            " location; use " + want_redundancy);
  return DirectoryBucketConfig{location_type, location_name, redundancy};
}

SessionCredentials IssueSession(SessionClaims claims, std::string_view user_secret) {
  claims.access_key = NewSessionAccessKey();
  // Whole seconds, so the expiry the client is told is the one the token holds.
  claims.expires_ns = claims.expires_ns / kNanosPerSec * kNanosPerSec;
  const std::string key = SessionKey(user_secret);
  const std::string payload = Payload(claims);
  SessionCredentials out;
  out.access_key = claims.access_key;
  out.secret_key = SessionSecret(key, payload);
  out.token = Base64Encode(payload) + "." + Base64Encode(Seal(key, payload));
  out.expires_ns = claims.expires_ns;
  return out;
}

Result<SessionClaims> ReadSessionToken(std::string_view token) {
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos) return BadToken();
  auto payload = Base64Decode(token.substr(0, dot));
  if (!payload) return BadToken();
  std::vector<std::string_view> f = Split(*payload, '\n');
  if (f.size() != 6 || f[0] != kTokenVersion || f[1].empty() || f[2].empty() || f[5].empty())
    return BadToken();
  auto expires_s = ParseInt64(f[3]);
  if (!expires_s || *expires_s < 0 || *expires_s > (INT64_MAX / kNanosPerSec)) return BadToken();
  if (f[4] != "ReadWrite" && f[4] != "ReadOnly") return BadToken();
  SessionClaims c;
  c.user_access_key = std::string(f[1]);
  c.bucket = std::string(f[2]);
  c.expires_ns = *expires_s * kNanosPerSec;
  c.mode = f[4] == "ReadOnly" ? SessionMode::kReadOnly : SessionMode::kReadWrite;
  c.access_key = std::string(f[5]);
  return c;
}

Result<std::string> VerifySessionToken(std::string_view token, std::string_view user_secret,
                                       int64_t now_ns) {
  STRATA_ASSIGN_OR_RETURN(SessionClaims c, ReadSessionToken(token));
  const size_t dot = token.find('.');
  // The seal covers the payload bytes as sent (ReadSessionToken checked their form).
  const std::string payload = *Base64Decode(token.substr(0, dot));
  auto seal = Base64Decode(token.substr(dot + 1));
  if (!seal) return BadToken();
  const std::string key = SessionKey(user_secret);
  if (!sigv4::ConstantTimeEquals(*seal, Seal(key, payload))) return BadToken();
  if (now_ns >= c.expires_ns) return MakeError("ExpiredToken", "The provided token has expired.");
  return SessionSecret(key, payload);
}

}  // namespace strata::s3
