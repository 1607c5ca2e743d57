// Fuzzes the FS metadata value decoders (fsmeta/codec.h): inode attributes, a
// file's slice list, directory entries and POSIX lock ranges. (The POSIX ACL
// xattr parser, fsmeta/acl.h, is not here yet: its errors come from
// meta_engine.cc, which pulls in the whole engine, and fsmeta does not build
// with clang 14 yet: structured bindings captured by lambdas.) The first byte
// picks the decoder; the rest is the stored value. What decodes must encode
// back to a value that decodes the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fsmeta/codec.h"

namespace codec = strata::fsmeta::codec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
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
    default: {
      auto r = codec::DecodePlocks(in);
      auto r2 = codec::DecodePlocks(codec::EncodePlocks(r));
      if (r2.size() != r.size()) __builtin_trap();
      break;
    }
  }
  return 0;
}
