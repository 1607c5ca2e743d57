// Block identity and the on-disk format of one cached block (private to cache).
//
// A block file is a header followed by the data:
//   magic "STRBLK01" (8) | header_len u32 | key_len u32 | etag_len u32 |
//   data_crc32c u32 | block_index u64 | data_len u64 | id_hi u64 | id_lo u64 |
//   header_crc32c u32 (over everything before it, then key and etag) |
//   key bytes | etag bytes | data
// all little-endian. It is written to NAME.tmp.XXXXXX and renamed to NAME, so a
// file under its final name was written completely by a process that did not
// crash before rename; the CRCs catch what a power loss or a disk can still do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <strata/core/result.h>

namespace strata::cache {

struct BlockId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const BlockId& o) const { return hi == o.hi && lo == o.lo; }
};

struct BlockIdHash {
  size_t operator()(const BlockId& b) const { return static_cast<size_t>(b.lo ^ (b.hi * 0x9e3779b97f4a7c15ull)); }
};

// SHA-256(key \0 etag \0 index) truncated to 128 bits.
BlockId MakeBlockId(std::string_view key, std::string_view etag, uint64_t index);
// 32 lower-case hex digits (the file name stem).
std::string BlockIdHex(const BlockId& id);
bool ParseBlockIdHex(std::string_view hex, BlockId* out);

struct BlockHeader {
  BlockId id;
  std::string key;
  std::string etag;
  uint64_t index = 0;
  uint64_t data_len = 0;
  uint32_t data_crc = 0;
  uint32_t header_len = 0;  // bytes before the data
};

inline constexpr size_t kBlockHeaderFixed = 8 + 4 * 4 + 8 * 4 + 4;

std::string EncodeBlockHeader(const BlockHeader& h);  // sets nothing in h; uses h.data_crc
// Parses and checks the header at the start of buf (magic, lengths, header
// CRC). kCorruption when anything is off.
Result<BlockHeader> DecodeBlockHeader(std::string_view buf);

// Writes header + data to dir/NAME.tmp.XXXXXX, optionally fsyncs, renames to
// dir/NAME.blk. Returns the final file's on-disk bytes (st_blocks * 512).
Result<uint64_t> WriteBlockFile(const std::string& dir, const BlockHeader& h, std::string_view data,
                                bool fsync);
// Reads and verifies a block file against what the caller expects (id, key,
// etag, index). kNotFound if the file is missing, kCorruption if anything does
// not match (the caller deletes the file).
Result<std::string> ReadBlockFile(const std::string& path, const BlockId& id, std::string_view key,
                                  std::string_view etag, uint64_t index);
// Reads only the header (for the scan at open).
Result<BlockHeader> ReadBlockFileHeader(const std::string& path, uint64_t* file_size);

}  // namespace strata::cache
