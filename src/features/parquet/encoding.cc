#include "features/parquet/encoding.h"

#include <cstring>

#include <fmt/format.h>

#include <strata/core/coding.h>

namespace strata::features::pq {

namespace {

// ULEB128 (core's varint) from [p, end), advancing p.
bool ReadUleb(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  const char* q = DecodeVarint64(reinterpret_cast<const char*>(p), reinterpret_cast<const char*>(end), v);
  if (q == nullptr) return false;
  p = reinterpret_cast<const uint8_t*>(q);
  return true;
}

bool ReadZigzag(const uint8_t*& p, const uint8_t* end, int64_t* v) {
  uint64_t u;
  if (!ReadUleb(p, end, &u)) return false;
  *v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  return true;
}

// Value i of a little-endian, LSB-first bit-packed array.
inline uint64_t Unpack(const uint8_t* data, uint64_t i, int width) {
  if (width == 0) return 0;
  uint64_t bit = i * static_cast<uint64_t>(width);
  uint64_t out = 0;
  int got = 0;
  while (got < width) {
    const uint64_t byte = bit >> 3;
    const int off = static_cast<int>(bit & 7);
    const int take = std::min(8 - off, width - got);
    const uint64_t bits = (data[byte] >> off) & ((1u << take) - 1);
    out |= bits << got;
    got += take;
    bit += take;
  }
  return out;
}

Status Truncated(const char* what) {
  return Status::Corruption(fmt::format("{} data runs past the end of its page", what));
}

}  // namespace

int BitWidth(uint64_t v) {
  int w = 0;
  while (v != 0) {
    ++w;
    v >>= 1;
  }
  return w;
}

Status RleDecoder::NextRun() {
  uint64_t header;
  if (!ReadUleb(p_, end_, &header)) return Truncated("RLE/bit-packed");
  if (header & 1) {
    const uint64_t groups = header >> 1;
    if (groups == 0) return Status::Corruption("bit-packed run of zero groups");
    const uint64_t bytes = groups * static_cast<uint64_t>(bit_width_);
    // A final literal run may be cut short by the writer: take what is there.
    const uint64_t avail = static_cast<uint64_t>(end_ - p_);
    const uint64_t use = std::min(bytes, avail);
    literal_ = true;
    lit_ = p_;
    lit_pos_ = 0;
    left_ = bit_width_ == 0 ? groups * 8 : std::min(groups * 8, use * 8 / bit_width_);
    if (left_ == 0) return Truncated("bit-packed");
    p_ += use;
  } else {
    const uint64_t count = header >> 1;
    if (count == 0) return Status::Corruption("RLE run of length zero");
    const int bytes = (bit_width_ + 7) / 8;
    if (end_ - p_ < bytes) return Truncated("RLE");
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(p_[i]) << (8 * i);
    p_ += bytes;
    literal_ = false;
    rle_value_ = v;
    left_ = count;
  }
  return Status::Ok();
}

Status RleDecoder::Get(uint32_t* out, size_t n) {
  if (bit_width_ < 0 || bit_width_ > 32) {
    return Status::Corruption(fmt::format("bit width {} is out of range (0..32)", bit_width_));
  }
  size_t done = 0;
  while (done < n) {
    if (left_ == 0) STRATA_RETURN_IF_ERROR(NextRun());
    const size_t take = static_cast<size_t>(std::min<uint64_t>(left_, n - done));
    if (literal_) {
      for (size_t k = 0; k < take; ++k) {
        out[done + k] = static_cast<uint32_t>(Unpack(lit_, lit_pos_ + k, bit_width_));
      }
      lit_pos_ += take;
    } else {
      std::fill(out + done, out + done + take, rle_value_);
    }
    left_ -= take;
    done += take;
  }
  return Status::Ok();
}

void RleEncode(const uint32_t* v, size_t n, int bit_width, std::string* out) {
  const int value_bytes = (bit_width + 7) / 8;
  auto run_len = [&](size_t i) {
    size_t j = i + 1;
    while (j < n && v[j] == v[i]) ++j;
    return j - i;
  };
  size_t i = 0;
  while (i < n) {
    const size_t r = run_len(i);
    if (r >= 8 || i + r == n) {
      PutVarint64(out, static_cast<uint64_t>(r) << 1);
      for (int b = 0; b < value_bytes; ++b) out->push_back(static_cast<char>((v[i] >> (8 * b)) & 0xff));
      i += r;
      continue;
    }
    // Literal groups of 8 until a run of 8+ starts on a group boundary.
    size_t j = i;
    do {
      j += 8;
    } while (j < n && run_len(j) < 8);
    const size_t end = std::min(j, n);
    const size_t groups = (j - i) / 8;
    PutVarint64(out, (static_cast<uint64_t>(groups) << 1) | 1);
    const size_t bytes = groups * static_cast<size_t>(bit_width);
    const size_t base = out->size();
    out->resize(base + bytes, '\0');
    uint8_t* dst = reinterpret_cast<uint8_t*>(out->data() + base);
    uint64_t bit = 0;
    for (size_t k = i; k < i + groups * 8; ++k) {
      const uint64_t val = k < end ? v[k] : 0;
      for (int b = 0; b < bit_width; ++b, ++bit) {
        if ((val >> b) & 1) dst[bit >> 3] |= static_cast<uint8_t>(1u << (bit & 7));
      }
    }
    i = end;
  }
}

Status DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, size_t n, std::vector<int64_t>* out,
                               size_t* consumed) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  uint64_t block_size, miniblocks, total;
  int64_t first;
  if (!ReadUleb(p, end, &block_size) || !ReadUleb(p, end, &miniblocks) ||
      !ReadUleb(p, end, &total) || !ReadZigzag(p, end, &first)) {
    return Truncated("DELTA_BINARY_PACKED header");
  }
  if (block_size == 0 || block_size % 128 != 0 || miniblocks == 0 || block_size % miniblocks != 0 ||
      (block_size / miniblocks) % 32 != 0 || miniblocks > 1024) {
    return Status::Corruption(fmt::format(
        "DELTA_BINARY_PACKED header is invalid (block size {}, {} miniblocks)", block_size, miniblocks));
  }
  if (total < n) {
    return Status::Corruption(fmt::format("DELTA_BINARY_PACKED holds {} values, the page needs {}", total, n));
  }
  const uint64_t per_mini = block_size / miniblocks;
  out->clear();
  out->reserve(n);
  if (total > 0 && n > 0) out->push_back(first);
  uint64_t last = static_cast<uint64_t>(first);
  std::vector<uint8_t> widths(miniblocks);
  uint64_t produced = total > 0 ? 1 : 0;
  while (produced < total) {
    int64_t min_delta;
    if (!ReadZigzag(p, end, &min_delta)) return Truncated("DELTA_BINARY_PACKED block");
    if (static_cast<uint64_t>(end - p) < miniblocks) return Truncated("DELTA_BINARY_PACKED widths");
    std::memcpy(widths.data(), p, miniblocks);
    p += miniblocks;
    for (uint64_t m = 0; m < miniblocks && produced < total; ++m) {
      const int w = widths[m];
      if (w > 64) return Status::Corruption(fmt::format("DELTA_BINARY_PACKED bit width {} > 64", w));
      const uint64_t bytes = per_mini * static_cast<uint64_t>(w) / 8;
      if (static_cast<uint64_t>(end - p) < bytes) return Truncated("DELTA_BINARY_PACKED miniblock");
      for (uint64_t k = 0; k < per_mini && produced < total; ++k) {
        uint64_t delta;
        if (w <= 57) {
          delta = Unpack(p, k, w);
        } else {  // wide values: assemble bit by bit
          delta = 0;
          const uint64_t bit0 = k * w;
          for (int b = 0; b < w; ++b) {
            const uint64_t bit = bit0 + b;
            delta |= static_cast<uint64_t>((p[bit >> 3] >> (bit & 7)) & 1) << b;
          }
        }
        last = last + static_cast<uint64_t>(min_delta) + delta;
        if (out->size() < n) out->push_back(static_cast<int64_t>(last));
        ++produced;
      }
      p += bytes;
    }
  }
  *consumed = static_cast<size_t>(p - data);
  return Status::Ok();
}

Status DecodeDeltaLengthByteArray(const uint8_t* data, size_t size, size_t n,
                                  std::vector<std::string_view>* out) {
  std::vector<int64_t> lens;
  size_t used = 0;
  STRATA_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(data, size, n, &lens, &used));
  const char* p = reinterpret_cast<const char*>(data) + used;
  size_t left = size - used;
  out->clear();
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (lens[i] < 0 || static_cast<uint64_t>(lens[i]) > left) return Truncated("DELTA_LENGTH_BYTE_ARRAY");
    out->emplace_back(p, static_cast<size_t>(lens[i]));
    p += lens[i];
    left -= static_cast<size_t>(lens[i]);
  }
  return Status::Ok();
}

Status DecodeDeltaByteArray(const uint8_t* data, size_t size, size_t n, std::string* storage,
                            std::vector<std::string_view>* out) {
  std::vector<int64_t> prefixes;
  size_t used = 0;
  STRATA_RETURN_IF_ERROR(DecodeDeltaBinaryPacked(data, size, n, &prefixes, &used));
  std::vector<std::string_view> suffixes;
  STRATA_RETURN_IF_ERROR(DecodeDeltaLengthByteArray(data + used, size - used, n, &suffixes));
  // Lay values out first, then take views (storage must not move afterwards).
  std::vector<std::pair<size_t, size_t>> spans;
  spans.reserve(n);
  storage->clear();
  size_t prev_off = 0, prev_len = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t pre = prefixes[i];
    if (pre < 0 || static_cast<size_t>(pre) > prev_len) {
      return Status::Corruption(fmt::format(
          "DELTA_BYTE_ARRAY prefix length {} exceeds the previous value's {} bytes", pre, prev_len));
    }
    const size_t off = storage->size();
    storage->append(*storage, prev_off, static_cast<size_t>(pre));
    storage->append(suffixes[i].data(), suffixes[i].size());
    prev_off = off;
    prev_len = storage->size() - off;
    spans.emplace_back(off, prev_len);
  }
  out->clear();
  out->reserve(n);
  for (auto [off, len] : spans) out->emplace_back(storage->data() + off, len);
  return Status::Ok();
}

Status DecodeByteStreamSplit(const uint8_t* data, size_t size, size_t n, size_t width,
                             std::string* out) {
  if (width == 0 || size < n * width) return Truncated("BYTE_STREAM_SPLIT");
  // Streams span the whole page (all values of the page, nulls excluded).
  const size_t total = size / width;
  if (total < n) return Truncated("BYTE_STREAM_SPLIT");
  out->assign(n * width, '\0');
  for (size_t b = 0; b < width; ++b) {
    const uint8_t* stream = data + b * total;
    for (size_t i = 0; i < n; ++i) (*out)[i * width + b] = static_cast<char>(stream[i]);
  }
  return Status::Ok();
}

}  // namespace strata::features::pq
