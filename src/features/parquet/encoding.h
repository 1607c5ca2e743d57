// Parquet's value and level encodings (apache/parquet-format Encodings.md):
// the RLE/bit-packed hybrid (levels, dictionary indices, booleans),
// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and
// BYTE_STREAM_SPLIT decoders, and the hybrid encoder the writer uses.
// Decoders check every length against their buffer; none allocates more than
// the caller's declared value count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/status.h>

namespace strata::features::pq {

class RleDecoder {
 public:
  RleDecoder(const uint8_t* data, size_t size, int bit_width)
      : p_(data), end_(data + size), bit_width_(bit_width) {}
  // Decodes exactly n values into out; Corruption if the data runs out.
  Status Get(uint32_t* out, size_t n);

 private:
  Status NextRun();

  const uint8_t* p_;
  const uint8_t* end_;
  int bit_width_;
  // current run
  bool literal_ = false;
  uint64_t left_ = 0;      // values left in the run
  uint32_t rle_value_ = 0;
  const uint8_t* lit_ = nullptr;  // literal run data
  uint64_t lit_pos_ = 0;          // next literal value index
};

// Appends the RLE/bit-packed hybrid encoding of `values` (each < 2^bit_width).
void RleEncode(const uint32_t* values, size_t n, int bit_width, std::string* out);

// Bits needed for values up to max_value (0 for 0).
int BitWidth(uint64_t max_value);

// DELTA_BINARY_PACKED: decodes `n` values (int32 or int64, 64-bit arithmetic
// with wrap-around as the spec says); `*consumed` is the bytes it took.
Status DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, size_t n, std::vector<int64_t>* out,
                               size_t* consumed);
// DELTA_LENGTH_BYTE_ARRAY: views into `data`.
Status DecodeDeltaLengthByteArray(const uint8_t* data, size_t size, size_t n,
                                  std::vector<std::string_view>* out);
// DELTA_BYTE_ARRAY: values are rebuilt into `storage` (each value's bytes are
// stored contiguously); views point into it and stay valid until it changes.
Status DecodeDeltaByteArray(const uint8_t* data, size_t size, size_t n, std::string* storage,
                            std::vector<std::string_view>* out);
// BYTE_STREAM_SPLIT of n values of `width` bytes into contiguous little-endian values.
Status DecodeByteStreamSplit(const uint8_t* data, size_t size, size_t n, size_t width,
                             std::string* out);

}  // namespace strata::features::pq
