// Fuzzes the object engine's RocksDB value decoders (objstore/record.h):
// bucket, object (full, summary only, pieces only), multipart upload and part
// records, every record version the engine has written (1-4). The first byte
// picks the decoder; the rest is the stored value. A value that decodes is
// encoded again (the current version) and must decode, to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "objstore/record.h"

namespace o = strata::objstore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0: {
      o::BucketRecord r;
      if (!o::DecodeBucket(in, &r).ok()) break;
      std::string enc, enc2;
      o::EncodeBucket(r, &enc);
      o::BucketRecord r2;
      if (!o::DecodeBucket(enc, &r2).ok()) __builtin_trap();
      o::EncodeBucket(r2, &enc2);
      if (enc != enc2) __builtin_trap();
      break;
    }
    case 1: {
      o::ObjectMeta m;
      std::vector<o::Piece> pieces;
      if (!o::DecodeObject(in, &m, &pieces).ok()) break;
      std::string enc, enc2;
      o::EncodeObject(m, pieces, &enc);
      o::ObjectMeta m2;
      std::vector<o::Piece> p2;
      if (!o::DecodeObject(enc, &m2, &p2).ok()) __builtin_trap();
      o::EncodeObject(m2, p2, &enc2);
      if (enc != enc2) __builtin_trap();
      if (!o::DecodeObjectSummary(enc, &m2).ok()) __builtin_trap();
      if (!o::DecodeObjectPieces(enc, &p2).ok() || p2.size() != pieces.size()) __builtin_trap();
      break;
    }
    case 2: {
      o::ObjectMeta m;
      (void)o::DecodeObjectSummary(in, &m);
      break;
    }
    case 3: {
      std::vector<o::Piece> pieces;
      (void)o::DecodeObjectPieces(in, &pieces);
      break;
    }
    case 4: {
      o::UploadRecord r;
      if (!o::DecodeUpload(in, &r).ok()) break;
      std::string enc;
      o::EncodeUpload(r, &enc);
      o::UploadRecord r2;
      if (!o::DecodeUpload(enc, &r2).ok()) __builtin_trap();
      break;
    }
    default: {
      o::PartRecord r;
      if (!o::DecodePart(in, &r).ok()) break;
      std::string enc;
      o::EncodePart(r, &enc);
      o::PartRecord r2;
      if (!o::DecodePart(enc, &r2).ok()) __builtin_trap();
      break;
    }
  }
  return 0;
}
