// Fuzzes the FS metadata value decoders (fsmeta/codec.h, fsmeta/acl.h): inode
// attributes, a file's slice list, directory entries, POSIX lock ranges and
// the POSIX ACL xattr (system.posix_acl_access / _default). The first byte
// picks the decoder; the rest is the stored value. What decodes must encode
// back to a value that decodes the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fsmeta/acl.h"
#include "fsmeta/codec.h"

namespace codec = strata::fsmeta::codec;
namespace acl = strata::fsmeta::acl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: {
      strata::fsmeta::Attr a;
      if (!codec::DecodeAttr(in, &a)) break;
      const std::string enc = codec::EncodeAttr(a);
      strata::fsmeta::Attr b;
      if (!codec::DecodeAttr(enc, &b) || codec::EncodeAttr(b) != enc) __builtin_trap();
      break;
    }
    case 1: {
      std::vector<strata::fsmeta::Slice> s;
      if (!codec::DecodeSlices(in, &s)) break;
      const std::string enc = codec::EncodeSlices(s);
      std::vector<strata::fsmeta::Slice> s2;
      if (!codec::DecodeSlices(enc, &s2) || s2.size() != s.size()) __builtin_trap();
      break;
    }
    case 2: {
      uint32_t mode = 0;
      strata::fsmeta::Ino ino = 0;
      if (codec::DecodeDent(in, &mode, &ino) && codec::EncodeDent(mode, ino) != in)
        __builtin_trap();
      break;
    }
    case 3: {
      auto r = codec::DecodePlocks(in);
      auto r2 = codec::DecodePlocks(codec::EncodePlocks(r));
      if (r2.size() != r.size()) __builtin_trap();
      break;
    }
    default: {
      auto a = acl::Parse(in);
      if (!a.has_value()) break;
      const std::string enc = acl::Encode(*a);
      auto b = acl::Parse(enc);
      if (!b.has_value() || acl::Encode(*b) != enc) __builtin_trap();
      (void)a->ModeBits();
      break;
    }
  }
  return 0;
}
