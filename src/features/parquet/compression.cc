#include "features/parquet/compression.h"

#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <fmt/format.h>

#include <strata/core/coding.h>

#include "features/parquet/format.h"

namespace strata::features::pq {

namespace {

Status SizeMismatch(const char* codec, size_t got, size_t want) {
  return Status::Corruption(
      fmt::format("{} page decompressed to {} bytes, its header says {}", codec, got, want));
}

Status Gunzip(std::string_view src, size_t want, std::string* out) {
  out->resize(want);
  z_stream zs{};
  // 15 + 32: zlib or gzip header, detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Status::Internal("inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src.data()));
  zs.avail_in = static_cast<uInt>(src.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(want);
  Status st;
  while (true) {
    const int rc = inflate(&zs, Z_FINISH);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members: go on while input remains.
      if (zs.avail_in > 0 && zs.avail_out > 0) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) {
      st = Status::Corruption(fmt::format("GZIP page inflates to more than the {} bytes its header says", want));
      break;
    }
    if (rc != Z_OK) {
      st = Status::Corruption(fmt::format("GZIP page is corrupt ({})", zs.msg ? zs.msg : "inflate error"));
      break;
    }
  }
  const size_t got = want - zs.avail_out;
  inflateEnd(&zs);
  STRATA_RETURN_IF_ERROR(st);
  if (got != want) return SizeMismatch("GZIP", got, want);
  return Status::Ok();
}

// Hadoop's LZ4 framing: repeated [u32 BE raw size][u32 BE compressed size][block].
bool TryHadoopLz4(std::string_view src, size_t want, std::string* out) {
  out->resize(want);
  size_t in = 0, done = 0;
  while (in < src.size()) {
    if (src.size() - in < 8) return false;
    const uint32_t raw = DecodeBigEndian32(src.data() + in);
    const uint32_t comp = DecodeBigEndian32(src.data() + in + 4);
    in += 8;
    if (comp > src.size() - in || raw > want - done) return false;
    const int got = LZ4_decompress_safe(src.data() + in, out->data() + done, static_cast<int>(comp),
                                        static_cast<int>(raw));
    if (got < 0 || static_cast<uint32_t>(got) != raw) return false;
    in += comp;
    done += raw;
  }
  return done == want;
}

}  // namespace

Status Decompress(int32_t codec, std::string_view src, size_t want, std::string* out) {
  if (want > (size_t{1} << 31)) {
    return Status::Corruption(fmt::format("page claims {} uncompressed bytes (more than 2 GiB)", want));
  }
  if (codec == UNCOMPRESSED) {
    if (src.size() != want) return SizeMismatch("uncompressed", src.size(), want);
    out->assign(src.data(), src.size());
    return Status::Ok();
  }
  // An empty page (v2 pages of all NULLs) is never handed to a codec: some
  // writers store zero bytes for it, which no decoder accepts.
  if (want == 0) {
    out->clear();
    return Status::Ok();
  }
  switch (codec) {
    case SNAPPY: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(src.data(), src.size(), &n)) {
        return Status::Corruption("SNAPPY page has a corrupt length header");
      }
      if (n != want) return SizeMismatch("SNAPPY", n, want);
      out->resize(n);
      if (!snappy::RawUncompress(src.data(), src.size(), out->data())) {
        return Status::Corruption("SNAPPY page is corrupt");
      }
      return Status::Ok();
    }
    case ZSTD: {
      out->resize(want);
      const size_t n = ZSTD_decompress(out->data(), want, src.data(), src.size());
      if (ZSTD_isError(n)) {
        return Status::Corruption(fmt::format("ZSTD page is corrupt: {}", ZSTD_getErrorName(n)));
      }
      if (n != want) return SizeMismatch("ZSTD", n, want);
      return Status::Ok();
    }
    case GZIP: return Gunzip(src, want, out);
    case LZ4_RAW: {
      out->resize(want);
      const int n = LZ4_decompress_safe(src.data(), out->data(), static_cast<int>(src.size()),
                                        static_cast<int>(want));
      if (n < 0) return Status::Corruption("LZ4_RAW page is corrupt");
      if (static_cast<size_t>(n) != want) return SizeMismatch("LZ4_RAW", static_cast<size_t>(n), want);
      return Status::Ok();
    }
    case LZ4: {
      if (TryHadoopLz4(src, want, out)) return Status::Ok();
      out->resize(want);
      const int n = LZ4_decompress_safe(src.data(), out->data(), static_cast<int>(src.size()),
                                        static_cast<int>(want));
      if (n >= 0 && static_cast<size_t>(n) == want) return Status::Ok();
      return Status::Corruption("LZ4 page is neither Hadoop-framed nor a raw LZ4 block");
    }
    default:
      return Status::NotSupported(fmt::format(
          "compression codec {} is not supported (supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, "
          "LZ4, LZ4_RAW)",
          CodecName(codec)));
  }
}

Status Compress(int32_t codec, std::string_view src, int level, std::string* out) {
  switch (codec) {
    case UNCOMPRESSED: out->assign(src.data(), src.size()); return Status::Ok();
    case SNAPPY: {
      out->resize(snappy::MaxCompressedLength(src.size()));
      size_t n = 0;
      snappy::RawCompress(src.data(), src.size(), out->data(), &n);
      out->resize(n);
      return Status::Ok();
    }
    case ZSTD: {
      out->resize(ZSTD_compressBound(src.size()));
      const size_t n = ZSTD_compress(out->data(), out->size(), src.data(), src.size(),
                                     level == 0 ? 3 : level);
      if (ZSTD_isError(n)) return Status::Internal(fmt::format("ZSTD: {}", ZSTD_getErrorName(n)));
      out->resize(n);
      return Status::Ok();
    }
    case GZIP: {
      z_stream zs{};
      if (deflateInit2(&zs, level == 0 ? 6 : level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        return Status::Internal("deflateInit2 failed");
      }
      out->resize(deflateBound(&zs, src.size()) + 32);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src.data()));
      zs.avail_in = static_cast<uInt>(src.size());
      zs.next_out = reinterpret_cast<Bytef*>(out->data());
      zs.avail_out = static_cast<uInt>(out->size());
      const int rc = deflate(&zs, Z_FINISH);
      const size_t n = out->size() - zs.avail_out;
      deflateEnd(&zs);
      if (rc != Z_STREAM_END) return Status::Internal("gzip deflate did not finish");
      out->resize(n);
      return Status::Ok();
    }
    case LZ4_RAW: {
      out->resize(LZ4_compressBound(static_cast<int>(src.size())));
      const int n = LZ4_compress_default(src.data(), out->data(), static_cast<int>(src.size()),
                                         static_cast<int>(out->size()));
      if (n <= 0) return Status::Internal("LZ4 compression failed");
      out->resize(n);
      return Status::Ok();
    }
    default:
      return Status::NotSupported(fmt::format("cannot write codec {}", CodecName(codec)));
  }
}

}  // namespace strata::features::pq
