#include "cache/block_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include <strata/core/checksum.h>
#include <strata/core/coding.h>
#include <strata/core/fault_injection.h>
#include <strata/core/file_util.h>

namespace strata::cache {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'B', 'L', 'K', '0', '1'};
constexpr uint32_t kMaxKeyLen = 64 * 1024;
constexpr uint32_t kMaxEtagLen = 1024;

Status ReadCacheBlock(int fd, char* buf, size_t n, uint64_t off, const std::string& path) {
  return PreadFull(fd, buf, n, off, "cache block " + path);
}

}  // namespace

BlockId MakeBlockId(std::string_view key, std::string_view etag, uint64_t index) {
  std::string buf;
  buf.reserve(key.size() + etag.size() + 24);
  buf.append(key);
  buf.push_back('\0');
  buf.append(etag);
  buf.push_back('\0');
  buf.append(std::to_string(index));
  const std::string d = Sha256(buf);
  return BlockId{DecodeFixed64(d.data()), DecodeFixed64(d.data() + 8)};
}

std::string BlockIdHex(const BlockId& id) { return fmt::format("{:016x}{:016x}", id.hi, id.lo); }

bool ParseBlockIdHex(std::string_view hex, BlockId* out) {
  if (hex.size() != 32) return false;
  uint64_t parts[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else return false;
    parts[i / 16] = (parts[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  out->hi = parts[0];
  out->lo = parts[1];
  return true;
}

std::string EncodeBlockHeader(const BlockHeader& h) {
  std::string s;
  const uint32_t header_len =
      static_cast<uint32_t>(kBlockHeaderFixed + h.key.size() + h.etag.size());
  s.reserve(header_len);
  s.append(kMagic, sizeof(kMagic));
  PutFixed32(&s, header_len);
  PutFixed32(&s, static_cast<uint32_t>(h.key.size()));
  PutFixed32(&s, static_cast<uint32_t>(h.etag.size()));
  PutFixed32(&s, h.data_crc);
  PutFixed64(&s, h.index);
  PutFixed64(&s, h.data_len);
  PutFixed64(&s, h.id.hi);
  PutFixed64(&s, h.id.lo);
  uint32_t crc = Crc32c(0, s.data(), s.size());
  crc = Crc32c(crc, h.key.data(), h.key.size());
  crc = Crc32c(crc, h.etag.data(), h.etag.size());
  PutFixed32(&s, crc);
  s.append(h.key);
  s.append(h.etag);
  return s;
}

Result<BlockHeader> DecodeBlockHeader(std::string_view buf) {
  if (buf.size() < kBlockHeaderFixed) return Status::Corruption("cache block header is truncated");
  if (std::memcmp(buf.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption("cache block has a bad magic (not a Strata cache block)");
  }
  const char* p = buf.data() + 8;
  BlockHeader h;
  h.header_len = DecodeFixed32(p);
  const uint32_t key_len = DecodeFixed32(p + 4);
  const uint32_t etag_len = DecodeFixed32(p + 8);
  h.data_crc = DecodeFixed32(p + 12);
  h.index = DecodeFixed64(p + 16);
  h.data_len = DecodeFixed64(p + 24);
  h.id.hi = DecodeFixed64(p + 32);
  h.id.lo = DecodeFixed64(p + 40);
  const uint32_t stored_crc = DecodeFixed32(p + 48);
  if (key_len > kMaxKeyLen || etag_len > kMaxEtagLen ||
      h.header_len != kBlockHeaderFixed + key_len + etag_len) {
    return Status::Corruption("cache block header has impossible lengths");
  }
  if (buf.size() < h.header_len) return Status::Corruption("cache block header is truncated");
  uint32_t crc = Crc32c(0, buf.data(), kBlockHeaderFixed - 4);
  crc = Crc32c(crc, buf.data() + kBlockHeaderFixed, key_len + etag_len);
  if (crc != stored_crc) return Status::Corruption("cache block header CRC32C mismatch");
  h.key.assign(buf.data() + kBlockHeaderFixed, key_len);
  h.etag.assign(buf.data() + kBlockHeaderFixed + key_len, etag_len);
  return h;
}

namespace {

// Blocks this large are written with O_DIRECT: the disk tier is a copy of
// what the RAM tier and the reader already hold, so routing it through the
// page cache would only double the memory a cold read allocates (after a
// drop_caches on a VM, each new page is a host fault too: most of a cold
// read's CPU went there). Small blocks stay buffered: O_DIRECT's alignment
// padding and synchronous device write cost more than the copy.
constexpr size_t kDirectMin = 256 << 10;
constexpr size_t kDirectAlign = 4096;

struct AlignedBuf {
  char* p = nullptr;
  size_t cap = 0;
  ~AlignedBuf() { std::free(p); }
  bool Reserve(size_t n) {
    if (cap >= n) return true;
    std::free(p);
    cap = 0;
    p = static_cast<char*>(std::aligned_alloc(kDirectAlign, n));
    if (p == nullptr) return false;
    cap = n;
    return true;
  }
};

// Writes header + data to a new file with O_DIRECT. false (nothing left
// behind but an empty `tmp`, which the caller reuses) when the filesystem
// does not do O_DIRECT; a real I/O error is returned as such.
Result<bool> WriteDirect(const std::string& tmp, int* fd_out, std::string_view header,
                         std::string_view data) {
  const size_t total = header.size() + data.size();
  const size_t padded = (total + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  // Reused per thread: already-touched pages, no fault per block.
  static thread_local AlignedBuf buf;
  if (!buf.Reserve(padded)) return false;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0644);
  if (fd < 0) {
    if (errno == EINVAL) return false;  // no O_DIRECT here (tmpfs, some FUSE)
    return Status::FromErrno(errno, "create cache block " + tmp);
  }
  *fd_out = fd;
  std::memcpy(buf.p, header.data(), header.size());
  std::memcpy(buf.p + header.size(), data.data(), data.size());
  std::memset(buf.p + total, 0, padded - total);
  size_t done = 0;
  while (done < padded) {
    ssize_t w = ::pwrite(fd, buf.p + done, padded - done, static_cast<off_t>(done));
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && done == 0) return false;
      return Status::FromErrno(errno, "write cache block " + tmp);
    }
    done += static_cast<size_t>(w);
  }
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
    return Status::FromErrno(errno, "truncate cache block " + tmp);
  }
  return true;
}

// A write fault armed by a test (core/fault_injection.h): leaves what a full
// or failing disk would (the part of the file written before the error) and
// returns the error, in place of both write paths below.
Status InjectedWriteFault(const std::string& tmp, std::string_view header, std::string_view data) {
  size_t first = 0;
  const int err = fault::internal::OnWrite(tmp, header.size() + data.size(), &first);
  if (err == 0) return Status::Ok();
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.valid()) {
    const size_t h = std::min(first, header.size());
    if (::write(fd.get(), header.data(), h) == static_cast<ssize_t>(h) && first > h) {
      (void)!::write(fd.get(), data.data(), first - h);
    }
  }
  return Status::FromErrno(err, "write cache block " + tmp);
}

}  // namespace

Result<uint64_t> WriteBlockFile(const std::string& dir, const BlockHeader& h, std::string_view data,
                                bool fsync) {
  const std::string name = BlockIdHex(h.id);
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp = fmt::format("{}/{}.tmp.{:012x}", dir, name, rng() & 0xffffffffffffull);
  const std::string final_path = dir + "/" + name + ".blk";
  const std::string header = EncodeBlockHeader(h);
  auto fail = [&](Status st) {
    ::unlink(tmp.c_str());
    return st;
  };
  if (Status st = InjectedWriteFault(tmp, header, data); !st.ok()) return fail(st);
  if (data.size() >= kDirectMin) {
    int raw = -1;
    Result<bool> direct = WriteDirect(tmp, &raw, header, data);
    UniqueFd dfd(raw);
    if (!direct) return fail(direct.error());
    if (*direct) {
      if (fsync && ::fdatasync(dfd.get()) != 0) return fail(Status::FromErrno(errno, "fsync cache block " + tmp));
      if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
        return fail(Status::FromErrno(errno, "rename cache block to " + final_path));
      }
      struct stat st;
      if (::fstat(dfd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + final_path);
      return static_cast<uint64_t>(st.st_blocks) * 512;
    }
    if (raw >= 0) ::unlink(tmp.c_str());  // created, then O_DIRECT writes refused
  }
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::FromErrno(errno, "create cache block " + tmp);
  struct iovec iov[2] = {{const_cast<char*>(header.data()), header.size()},
                         {const_cast<char*>(data.data()), data.size()}};
  size_t total = header.size() + data.size();
  size_t written = 0;
  while (written < total) {
    // Rebuild the iovecs past what was written (short writes are rare).
    struct iovec cur[2];
    int n = 0;
    size_t skip = written;
    for (auto& v : iov) {
      if (skip >= v.iov_len) {
        skip -= v.iov_len;
        continue;
      }
      cur[n].iov_base = static_cast<char*>(v.iov_base) + skip;
      cur[n].iov_len = v.iov_len - skip;
      skip = 0;
      ++n;
    }
    ssize_t w = ::writev(fd.get(), cur, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail(Status::FromErrno(errno, "write cache block " + tmp));
    }
    written += static_cast<size_t>(w);
  }
  if (fsync && ::fdatasync(fd.get()) != 0) {
    return fail(Status::FromErrno(errno, "fsync cache block " + tmp));
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return fail(Status::FromErrno(errno, "rename cache block to " + final_path));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + final_path);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

Result<BlockHeader> ReadBlockFileHeader(const std::string& path, uint64_t* file_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::NotFound("cache block " + path + " is gone");
    return Status::FromErrno(errno, "open " + path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  char buf[4096];
  const size_t want = std::min<size_t>(sizeof(buf), static_cast<size_t>(st.st_size));
  STRATA_RETURN_IF_ERROR(ReadCacheBlock(fd.get(), buf, want, 0, path));
  STRATA_ASSIGN_OR_RETURN(BlockHeader h, DecodeBlockHeader(std::string_view(buf, want)));
  if (static_cast<uint64_t>(st.st_size) != h.header_len + h.data_len) {
    return Status::Corruption(fmt::format("cache block {} is {} bytes, its header says {}", path,
                                          st.st_size, h.header_len + h.data_len));
  }
  if (file_size) *file_size = static_cast<uint64_t>(st.st_blocks) * 512;
  return h;
}

Result<std::string> ReadBlockFile(const std::string& path, const BlockId& id, std::string_view key,
                                  std::string_view etag, uint64_t index) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::NotFound("cache block " + path + " is gone");
    return Status::FromErrno(errno, "open " + path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  const size_t head_want = std::min<uint64_t>(kBlockHeaderFixed + key.size() + etag.size(), file_size);
  std::string head(head_want, '\0');
  STRATA_RETURN_IF_ERROR(ReadCacheBlock(fd.get(), head.data(), head_want, 0, path));
  STRATA_ASSIGN_OR_RETURN(BlockHeader h, DecodeBlockHeader(head));
  if (!(h.id == id) || h.key != key || h.etag != etag || h.index != index) {
    return Status::Corruption("cache block " + path + " holds another block");
  }
  if (file_size != h.header_len + h.data_len) {
    return Status::Corruption(fmt::format("cache block {} is {} bytes, its header says {}", path,
                                          file_size, h.header_len + h.data_len));
  }
  std::string data(h.data_len, '\0');
  STRATA_RETURN_IF_ERROR(ReadCacheBlock(fd.get(), data.data(), data.size(), h.header_len, path));
  if (Crc32c(0, data.data(), data.size()) != h.data_crc) {
    return Status::Corruption("cache block " + path + " data CRC32C mismatch");
  }
  return data;
}

}  // namespace strata::cache
