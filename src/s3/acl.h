// S3 access control lists: an owner and grants (grantee, permission) on a
// bucket or an object, built from a canned ACL (x-amz-acl), grant headers
// (x-amz-grant-read: id="...", uri="..."), or an AccessControlPolicy XML
// body; kept as a short text in the bucket's "acl" configuration or the
// object's internal metadata; written back as AccessControlPolicy XML.
//
// Grantees: a canonical user (a Strata user's id, its access key, as
// ListBuckets reports it), the groups AllUsers and AuthenticatedUsers, and
// LogDelivery (kept, grants nothing here). Grants by e-mail address are
// refused: Strata users have no e-mail addresses.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

enum AclPerm : uint8_t {
  kAclRead = 1,
  kAclWrite = 2,
  kAclReadAcp = 4,
  kAclWriteAcp = 8,
  kAclFullControl = 15,
};

enum class GranteeType : uint8_t { kUser, kAllUsers, kAuthenticatedUsers, kLogDelivery };

struct AclGrant {
  GranteeType type = GranteeType::kUser;
  std::string id;  // kUser: canonical id
  uint8_t perm = 0;
};

struct Acl {
  std::string owner;
  std::vector<AclGrant> grants;
};

// Answers whether a canonical id names a user (grants to unknown ids are refused).
using UserExists = std::function<bool(std::string_view id)>;

// A canned ACL by name. bucket_owner: for bucket-owner-read/-full-control on objects.
Result<Acl> CannedAcl(std::string_view name, std::string_view owner, std::string_view bucket_owner,
                      bool for_bucket);

// The ACL named by the request's headers, nullopt when it names none.
// `header` looks up a request header by lower-case name.
Result<std::optional<Acl>> AclFromHeaders(
    const std::function<std::optional<std::string_view>(std::string_view)>& header,
    std::string_view owner, std::string_view bucket_owner, bool for_bucket,
    const UserExists& exists);

// An <AccessControlPolicy> body. The owner must be `owner` (S3 refuses a change of owner).
Result<Acl> ParseAclXml(std::string_view xml, std::string_view owner, const UserExists& exists);

// <AccessControlPolicy>; display_name maps an id to a display name.
std::string AclXml(const Acl& acl,
                   const std::function<std::string(std::string_view)>& display_name);

std::string EncodeAcl(const Acl& acl);
std::optional<Acl> DecodeAcl(std::string_view s);

// Whether the ACL gives `perm` to the caller (id "" = anonymous). ignore_public:
// grants to AllUsers and AuthenticatedUsers count for nothing (IgnorePublicAcls).
bool AclAllows(const Acl& acl, uint8_t perm, std::string_view id, bool ignore_public);
// Whether it grants anything to AllUsers or AuthenticatedUsers (AWS's "public ACL").
bool AclIsPublic(const Acl& acl);

}  // namespace strata::s3
