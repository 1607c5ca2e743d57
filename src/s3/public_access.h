// The stored forms of a bucket's PublicAccessBlock and of bucket and object
// ACLs (bucket config "acl", object internal "acl"), shared by authorization
// (auth.cc) and the access handlers (access_handlers.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/objstore/local_engine.h>

#include "s3/acl.h"

namespace strata::s3 {

inline constexpr uint8_t kBlockPublicAcls = 1;
inline constexpr uint8_t kIgnorePublicAcls = 2;
inline constexpr uint8_t kBlockPublicPolicy = 4;
inline constexpr uint8_t kRestrictPublicBuckets = 8;

inline constexpr char kPublicAccessBlockConfig[] = "publicAccessBlock";
inline constexpr char kAclConfig[] = "acl";

// Stored as the four flags' sum in decimal ("0".."15").
uint8_t DecodePublicAccessBlock(std::string_view stored);
// <PublicAccessBlockConfiguration><BlockPublicAcls>true</...>...; absent elements are false.
Result<uint8_t> ParsePublicAccessBlockXml(std::string_view xml);

// The bucket's ACL: its "acl" configuration, else the one the legacy
// public_read flag means (owner FULL_CONTROL, AllUsers READ when set).
Acl BucketAclOf(const objstore::BucketInfo& b);
// The object's ACL: internal["acl"], else private to the object's owner.
Acl ObjectAclOf(const objstore::ObjectMeta& m, const objstore::BucketInfo& b);

}  // namespace strata::s3
