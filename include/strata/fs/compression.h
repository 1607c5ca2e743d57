// Block compression of a Strata FS volume (Format::compress): each block
// object holds the compressed bytes of one whole block. Pure functions,
// thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <strata/core/result.h>
#include <strata/core/status.h>

namespace strata::fs {

enum class Compression { kNone, kLz4, kZstd };
// "none" | "lz4" | "zstd" (case-insensitive); false if unknown.
bool ParseCompression(std::string_view name, Compression* out);
std::string_view CompressionName(Compression c);

// Compress/decompress one block (exposed for tests).
Result<std::string> CompressBlock(Compression c, std::string_view data);
Status DecompressBlock(Compression c, std::string_view data, char* out, size_t out_len);

}  // namespace strata::fs
