// Key and value encodings of the metadata engine (private).
//
// Keys are compact binary, inode numbers big-endian so a scan of one prefix
// returns a directory's entries by name and a file's chunks in order:
//   Mformat                     volume format (JSON); Msync: written by Sync
//   K<name>                     counters (decimal text): nextinode, nextslice,
//                               nextsession, usedspace, inodes
//   A<ino>                      attributes (kAttrLen bytes)
//   D<parent><name>             directory entry -> type byte + ino
//   C<ino><chunk u32>           slice list (kSliceLen bytes per slice)
//   S<ino>                      symlink target
//   X<ino><name>                xattr value
//   F<ino><sid><owner>          BSD flock -> type byte
//   L<ino><sid><owner>          POSIX locks -> ranges (type, start, end, pid)
//   U<sid><ino>                 sustained inode (unlinked while open by sid)
//   H<sid><lock key>            a lock held by session sid
//   E<0><sid>                   session info (JSON)
//   Q<0><slice id>              slice waiting for its objects to be deleted -> size
//   P<0><dir ino>               directory quota -> limits and usage (kv_meta_quota.cc)
//   R<slice id>                 extra references of a slice shared by clones (decimal)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/coding.h>
#include <strata/fsmeta/meta_engine.h>

namespace strata::fsmeta::codec {

inline std::string Key1(char type, uint64_t a) {
  std::string k(1, type);
  PutBigEndian64(&k, a);
  return k;
}
inline std::string AttrKey(Ino ino) { return Key1('A', ino); }
inline std::string DentPrefix(Ino parent) { return Key1('D', parent); }
inline std::string DentKey(Ino parent, std::string_view name) {
  std::string k = Key1('D', parent);
  k.append(name);
  return k;
}
inline std::string ChunkPrefix(Ino ino) { return Key1('C', ino); }
inline std::string ChunkKey(Ino ino, uint32_t idx) {
  std::string k = Key1('C', ino);
  PutBigEndian32(&k, idx);
  return k;
}
inline std::string SymKey(Ino ino) { return Key1('S', ino); }
inline std::string XattrPrefix(Ino ino) { return Key1('X', ino); }
inline std::string XattrKey(Ino ino, std::string_view name) {
  std::string k = Key1('X', ino);
  k.append(name);
  return k;
}
inline std::string LockKey(char type, Ino ino, uint64_t sid, uint64_t owner) {
  std::string k = Key1(type, ino);
  PutBigEndian64(&k, sid);
  PutBigEndian64(&k, owner);
  return k;
}
inline std::string SustainPrefix(uint64_t sid) { return Key1('U', sid); }
inline std::string SustainKey(uint64_t sid, Ino ino) {
  std::string k = Key1('U', sid);
  PutBigEndian64(&k, ino);
  return k;
}
// Sessions and the slice deletion queue are one group each (group id 0), so
// listing them costs a range read, not a scan of the whole key space.
inline std::string SessionPrefix() { return Key1('E', 0); }
inline std::string SessionKey(uint64_t sid) {
  std::string k = SessionPrefix();
  PutBigEndian64(&k, sid);
  return k;
}
inline std::string DelSlicePrefix() { return Key1('Q', 0); }
inline std::string DelSliceKey(uint64_t id) {
  std::string k = DelSlicePrefix();
  PutBigEndian64(&k, id);
  return k;
}
inline std::string QuotaPrefix() { return Key1('P', 0); }
inline std::string QuotaKey(Ino dir) {
  std::string k = QuotaPrefix();
  PutBigEndian64(&k, dir);
  return k;
}
// Slices shared by clones (kv_meta_tree.cc): how many chunks beyond the first
// reference the slice; absent = one owner.
inline std::string SliceRefKey(uint64_t id) { return Key1('R', id); }
// H<sid><lock key>: the locks a session holds, for cleanup without a scan.
inline std::string HeldPrefix(uint64_t sid) { return Key1('H', sid); }
inline std::string HeldKey(uint64_t sid, const std::string& lock_key) { return Key1('H', sid) + lock_key; }
inline const std::string kFormatKey = "Mformat";
inline const std::string kNextInode = "Knextinode";
inline const std::string kNextSlice = "Knextslice";
inline const std::string kNextSession = "Knextsession";
inline const std::string kUsedSpace = "Kusedspace";
inline const std::string kInodes = "Kinodes";

inline constexpr size_t kAttrLen = 64;
std::string EncodeAttr(const Attr& a);
bool DecodeAttr(std::string_view s, Attr* a);

inline constexpr size_t kSliceLen = 24;
void AppendSlice(std::string* s, const Slice& sl);
std::string EncodeSlices(const std::vector<Slice>& slices);
bool DecodeSlices(std::string_view s, std::vector<Slice>* out);

inline std::string EncodeDent(uint32_t mode, Ino ino) {
  std::string v(1, static_cast<char>((mode >> 12) & 0xf));
  PutBigEndian64(&v, ino);
  return v;
}
inline bool DecodeDent(std::string_view v, uint32_t* type_mode, Ino* ino) {
  // The type byte holds the 4-bit S_IFMT nibble EncodeDent writes; anything
  // larger is damage, not a type (a fuzzer found it re-encoding differently).
  if (v.size() != 9 || static_cast<unsigned char>(v[0]) > 0xf) return false;
  *type_mode = static_cast<uint32_t>(static_cast<unsigned char>(v[0])) << 12;
  *ino = DecodeBigEndian64(v.data() + 1);
  return true;
}

struct PlockRange {
  uint32_t type = 0;
  uint64_t start = 0, end = 0;
  uint32_t pid = 0;
};
std::string EncodePlocks(const std::vector<PlockRange>& r);
std::vector<PlockRange> DecodePlocks(std::string_view s);

}  // namespace strata::fsmeta::codec
