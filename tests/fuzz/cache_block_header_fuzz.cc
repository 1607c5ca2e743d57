// Fuzzes the cache's block-file header decoder (cache/block_file.h): magic,
// lengths, the header CRC, the id, key and etag. A header that decodes must
// say where its data starts within what was read, and encode back to the
// same header.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/block_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto h = strata::cache::DecodeBlockHeader(in);
  if (!h.has_value()) return 0;
  if (h->header_len > in.size() || h->header_len < strata::cache::kBlockHeaderFixed)
    __builtin_trap();
  const std::string enc = strata::cache::EncodeBlockHeader(*h);
  if (enc.size() != h->header_len || in.substr(0, enc.size()) != enc) __builtin_trap();
  return 0;
}
