// Page codecs: UNCOMPRESSED, SNAPPY (raw blocks), GZIP (zlib, concatenated
// members allowed), ZSTD, LZ4_RAW and the legacy LZ4 (Hadoop framing, or a raw
// block as some writers produced). BROTLI and LZO are refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <strata/core/status.h>

namespace strata::features::pq {

// Decompresses `src` into `out`, which must come out exactly `uncompressed_size`
// bytes long (a page header's claim, checked, never trusted for allocation
// beyond it).
Status Decompress(int32_t codec, std::string_view src, size_t uncompressed_size, std::string* out);
// Compresses `src` into `out` (replacing it). level: ZSTD/GZIP level, 0 = default.
Status Compress(int32_t codec, std::string_view src, int level, std::string* out);

}  // namespace strata::features::pq
