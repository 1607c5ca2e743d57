// POSIX ACLs as Linux stores them in the xattrs system.posix_acl_access and
// system.posix_acl_default: a little-endian header (version 2) and 8-byte
// entries {u16 tag, u16 perm, u32 id}. The kernel evaluates them (the FUSE
// mount asks for FUSE_CAP_POSIX_ACL); the metadata engine keeps them and the
// mode in sync (setfacl -> mode, chmod -> ACL) and inherits default ACLs on
// create, which FUSE leaves to the filesystem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>

namespace strata::fsmeta::acl {

inline constexpr std::string_view kAccess = "system.posix_acl_access";
inline constexpr std::string_view kDefault = "system.posix_acl_default";

enum Tag : uint16_t {
  kUserObj = 0x01,
  kUser = 0x02,
  kGroupObj = 0x04,
  kGroup = 0x08,
  kMask = 0x10,
  kOther = 0x20,
};

struct Entry {
  uint16_t tag = 0, perm = 0;
  uint32_t id = 0;
};

struct Acl {
  std::vector<Entry> entries;  // sorted by (tag, id), as the kernel keeps them

  // True when the ACL says no more than the mode bits (owner, group, other).
  bool Minimal() const;
  // The rwx bits the ACL implies for the mode (group bits from the mask).
  uint32_t ModeBits() const;
  // chmod: the owner, mask (or owning group) and other entries take `mode`'s bits.
  void Chmod(uint32_t mode);
  // Inheritance on create: the default ACL masked by the requested mode.
  // Returns the new file's rwx bits.
  uint32_t CreateMasq(uint32_t mode);
};

// Parses and validates (one of each *_OBJ and OTHER, a mask when there are
// named entries, no duplicate ids). EINVAL on malformed input.
Result<Acl> Parse(std::string_view xattr);
std::string Encode(const Acl& a);
bool IsAclName(std::string_view name);

}  // namespace strata::fsmeta::acl
