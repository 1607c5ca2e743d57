// Block compression of Strata FS volumes (lz4, zstd), see compression.h.
#include <cctype>
#include <cstring>

#include <fmt/format.h>
#include <lz4.h>
#include <zstd.h>

#include <strata/fs/compression.h>

namespace strata::fs {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

bool ParseCompression(std::string_view name, Compression* out) {
  if (name.empty() || IEquals(name, "none")) {
    *out = Compression::kNone;
  } else if (IEquals(name, "lz4")) {
    *out = Compression::kLz4;
  } else if (IEquals(name, "zstd")) {
    *out = Compression::kZstd;
  } else {
    return false;
  }
  return true;
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
    default:
      return "none";
  }
}

Result<std::string> CompressBlock(Compression c, std::string_view data) {
  std::string out;
  if (c == Compression::kLz4) {
    int cap = LZ4_compressBound(static_cast<int>(data.size()));
    out.resize(static_cast<size_t>(cap));
    int n = LZ4_compress_default(data.data(), out.data(), static_cast<int>(data.size()), cap);
    if (n <= 0) return Status::Internal("lz4 compression failed");
    out.resize(static_cast<size_t>(n));
  } else if (c == Compression::kZstd) {
    size_t cap = ZSTD_compressBound(data.size());
    out.resize(cap);
    size_t n = ZSTD_compress(out.data(), cap, data.data(), data.size(), 1);
    if (ZSTD_isError(n))
      return Status::Internal(fmt::format("zstd compression failed: {}", ZSTD_getErrorName(n)));
    out.resize(n);
  } else {
    out.assign(data);
  }
  return out;
}

Status DecompressBlock(Compression c, std::string_view data, char* out, size_t out_len) {
  if (c == Compression::kLz4) {
    int n = LZ4_decompress_safe(data.data(), out, static_cast<int>(data.size()),
                                static_cast<int>(out_len));
    if (n < 0 || static_cast<size_t>(n) != out_len)
      return Status::Corruption(
          fmt::format("lz4 block decodes to {} bytes, expected {}", n, out_len));
  } else if (c == Compression::kZstd) {
    size_t n = ZSTD_decompress(out, out_len, data.data(), data.size());
    if (ZSTD_isError(n) || n != out_len)
      return Status::Corruption(
          fmt::format("zstd block does not decode to {} bytes{}", out_len,
                      ZSTD_isError(n) ? std::string(": ") + ZSTD_getErrorName(n) : ""));
  } else {
    if (data.size() != out_len)
      return Status::Corruption(
          fmt::format("block holds {} bytes, expected {}", data.size(), out_len));
    std::memcpy(out, data.data(), out_len);
  }
  return Status::Ok();
}

}  // namespace strata::fs
