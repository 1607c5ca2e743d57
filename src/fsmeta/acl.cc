// POSIX ACL xattr encoding and the mode <-> ACL rules (see acl.h).
#include "fsmeta/acl.h"

#include <algorithm>
#include <cerrno>

#include <strata/fsmeta/meta_engine.h>

namespace strata::fsmeta::acl {
namespace {

constexpr uint32_t kVersion = 2;
constexpr uint32_t kUndefinedId = 0xffffffffu;

uint32_t Le32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return u[0] | (u[1] << 8) | (u[2] << 16) | (static_cast<uint32_t>(u[3]) << 24);
}
uint16_t Le16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] | (u[1] << 8));
}
void Put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>(v >> 8));
}

Entry* Find(Acl& a, uint16_t tag) {
  for (auto& e : a.entries)
    if (e.tag == tag) return &e;
  return nullptr;
}
const Entry* Find(const Acl& a, uint16_t tag) { return Find(const_cast<Acl&>(a), tag); }

}  // namespace

bool IsAclName(std::string_view name) { return name == kAccess || name == kDefault; }

Result<Acl> Parse(std::string_view x) {
  if (x.size() < 4 || (x.size() - 4) % 8 != 0) return FsError(EINVAL, "malformed POSIX ACL");
  if (Le32(x.data()) != kVersion) return FsError(EOPNOTSUPP, "unknown POSIX ACL version");
  Acl a;
  int user_obj = 0, group_obj = 0, other = 0, mask = 0, named = 0;
  for (size_t off = 4; off < x.size(); off += 8) {
    Entry e{Le16(x.data() + off), Le16(x.data() + off + 2), Le32(x.data() + off + 4)};
    if (e.perm & ~7u) return FsError(EINVAL, "POSIX ACL entry with bad permission bits");
    switch (e.tag) {
      case kUserObj:
        ++user_obj;
        e.id = kUndefinedId;
        break;
      case kGroupObj:
        ++group_obj;
        e.id = kUndefinedId;
        break;
      case kOther:
        ++other;
        e.id = kUndefinedId;
        break;
      case kMask:
        ++mask;
        e.id = kUndefinedId;
        break;
      case kUser:
      case kGroup:
        ++named;
        break;
      default:
        return FsError(EINVAL, "POSIX ACL entry with unknown tag");
    }
    a.entries.push_back(e);
  }
  if (user_obj != 1 || group_obj != 1 || other != 1 || mask > 1 || (named > 0 && mask == 0))
    return FsError(EINVAL,
                   "POSIX ACL needs one owner, group and other entry (and a mask with "
                   "named entries)");
  std::sort(a.entries.begin(), a.entries.end(), [](const Entry& l, const Entry& r) {
    return l.tag != r.tag ? l.tag < r.tag : l.id < r.id;
  });
  for (size_t i = 1; i < a.entries.size(); ++i) {
    if (a.entries[i].tag == a.entries[i - 1].tag && a.entries[i].id == a.entries[i - 1].id)
      return FsError(EINVAL, "POSIX ACL names the same user or group twice");
  }
  return a;
}

std::string Encode(const Acl& a) {
  std::string s;
  Put32(s, kVersion);
  for (const auto& e : a.entries) {
    Put16(s, e.tag);
    Put16(s, e.perm);
    Put32(s, e.id);
  }
  return s;
}

bool Acl::Minimal() const {
  for (const auto& e : entries)
    if (e.tag == kUser || e.tag == kGroup || e.tag == kMask) return false;
  return true;
}

uint32_t Acl::ModeBits() const {
  const Entry* u = Find(*this, kUserObj);
  const Entry* g = Find(*this, kMask);
  if (!g) g = Find(*this, kGroupObj);
  const Entry* o = Find(*this, kOther);
  return ((u ? u->perm : 0) << 6) | ((g ? g->perm : 0) << 3) | (o ? o->perm : 0);
}

void Acl::Chmod(uint32_t mode) {
  if (Entry* u = Find(*this, kUserObj)) u->perm = (mode >> 6) & 7;
  Entry* g = Find(*this, kMask);
  if (!g) g = Find(*this, kGroupObj);
  if (g) g->perm = (mode >> 3) & 7;
  if (Entry* o = Find(*this, kOther)) o->perm = mode & 7;
}

uint32_t Acl::CreateMasq(uint32_t mode) {
  // As the kernel's posix_acl_create_masq: owner and other entries are ANDed
  // with the mode; the mask (or, without one, the owning group) too.
  if (Entry* u = Find(*this, kUserObj)) u->perm &= (mode >> 6) & 7;
  Entry* g = Find(*this, kMask);
  if (!g) g = Find(*this, kGroupObj);
  if (g) g->perm &= (mode >> 3) & 7;
  if (Entry* o = Find(*this, kOther)) o->perm &= mode & 7;
  return ModeBits();
}

}  // namespace strata::fsmeta::acl
