#include "objstore/data_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include <strata/core/checksum.h>
#include <strata/core/coding.h>
#include <strata/core/file_sync.h>
#include <strata/core/file_util.h>

namespace strata::objstore {
namespace {

struct ScratchCache {
  std::unique_ptr<char[]> buf[2];
  size_t size[2] = {0, 0};
};
thread_local ScratchCache tl_scratch;

std::atomic<bool> g_use_mmap{true};

}  // namespace

void SetDataFileMmapForTest(bool enabled) { g_use_mmap.store(enabled); }

// ---- ScratchBuffer ----------------------------------------------------------

ScratchBuffer::ScratchBuffer(size_t size) {
  for (int i = 0; i < 2; ++i) {
    if (tl_scratch.buf[i] && tl_scratch.size[i] >= size) {
      buf_ = std::move(tl_scratch.buf[i]);
      size_ = tl_scratch.size[i];
      tl_scratch.size[i] = 0;
      return;
    }
  }
  buf_.reset(new char[size]);
  size_ = size;
}

ScratchBuffer::~ScratchBuffer() {
  if (!buf_) return;
  // Keep the buffer for the next request on this thread: fill an empty slot, or
  // replace a smaller one.
  int slot = !tl_scratch.buf[0] ? 0 : !tl_scratch.buf[1] ? 1 : -1;
  if (slot < 0) slot = tl_scratch.size[0] <= tl_scratch.size[1] ? 0 : 1;
  if (tl_scratch.buf[slot] && tl_scratch.size[slot] >= size_) return;
  tl_scratch.buf[slot] = std::move(buf_);
  tl_scratch.size[slot] = size_;
}

// ---- sealed blocks ----------------------------------------------------------

crypto::GcmIv SealIv(uint64_t nonce, uint64_t block) {
  crypto::GcmIv iv{};
  for (int i = 0; i < 8; ++i) iv[i] = static_cast<uint8_t>(nonce >> (8 * i));
  for (int i = 0; i < 4; ++i) iv[8 + i] = static_cast<uint8_t>(block >> (24 - 8 * i));
  return iv;
}

Status SealBlock(std::string_view key, uint64_t nonce, uint64_t block, const char* in, size_t n,
                 char* out) {
  if (block > UINT32_MAX) return Status::InvalidArgument("too many blocks to seal");
  return crypto::AesGcmSeal(key, SealIv(nonce, block), {}, in, n, out);
}

Status OpenBlock(std::string_view key, uint64_t nonce, uint64_t block, const char* in, size_t n,
                 char* out) {
  Status st = crypto::AesGcmOpen(key, SealIv(nonce, block), {}, in, n, out);
  if (!st.ok())
    return Status(st.code(), "sealed block " + std::to_string(block) + ": " + st.message());
  return st;
}

Status SealingWriter::SealOne(const char* data, size_t n) {
  sealed_.resize(static_cast<size_t>(block_size_) + kSealTagBytes);
  STRATA_RETURN_IF_ERROR(SealBlock(key_, nonce_, index_++, data, n, sealed_.data()));
  return w_->Append(sealed_.data(), n + kSealTagBytes);
}

Status SealingWriter::Append(const char* data, size_t n) {
  while (n > 0) {
    if (plain_.empty() && n >= block_size_) {
      STRATA_RETURN_IF_ERROR(SealOne(data, block_size_));
      data += block_size_;
      n -= block_size_;
      continue;
    }
    size_t take = std::min<size_t>(n, block_size_ - plain_.size());
    plain_.append(data, take);
    data += take;
    n -= take;
    if (plain_.size() == block_size_) {
      STRATA_RETURN_IF_ERROR(SealOne(plain_.data(), plain_.size()));
      plain_.clear();
    }
  }
  return Status::Ok();
}

Status SealingWriter::Flush() {
  if (plain_.empty()) return Status::Ok();
  Status st = SealOne(plain_.data(), plain_.size());
  plain_.clear();
  return st;
}

// ---- DataFileWriter ---------------------------------------------------------

DataFileWriter::~DataFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

Status DataFileWriter::Open(std::string path, uint32_t block_size) {
  path_ = std::move(path);
  block_size_ = block_size;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::FromErrno(errno, "create " + path_);
  return Status::Ok();
}

Status DataFileWriter::Append(const char* data, size_t n) {
  const char* p = data;
  size_t left = n;
  while (left > 0) {
    size_t take = std::min<uint64_t>(left, block_size_ - block_fill_);
    block_crc_ = Crc32c(block_crc_, p, take);
    block_fill_ += take;
    p += take;
    left -= take;
    if (block_fill_ == block_size_) {
      crcs_.push_back(block_crc_);
      block_crc_ = 0;
      block_fill_ = 0;
    }
  }
  length_ += n;
  return WriteAll(fd_, data, n, path_);
}

Status DataFileWriter::Finish(bool sync) {
  if (block_fill_ > 0) {
    crcs_.push_back(block_crc_);
    block_crc_ = 0;
    block_fill_ = 0;
  }
  std::string footer(crcs_.size() * 4 + kTrailerSize, '\0');
  char* p = footer.data();
  for (uint32_t c : crcs_) {
    EncodeFixed32(p, c);
    p += 4;
  }
  EncodeFixed64(p, kDataFileMagic);
  EncodeFixed64(p + 8, length_);
  EncodeFixed32(p + 16, block_size_);
  EncodeFixed32(p + 20, static_cast<uint32_t>(crcs_.size()));
  EncodeFixed32(p + 24, kDataFileVersion);
  EncodeFixed32(p + 28, Crc32c(0, footer.data(), footer.size() - 4));
  STRATA_RETURN_IF_ERROR(WriteAll(fd_, footer.data(), footer.size(), path_));
  if (sync) STRATA_RETURN_IF_ERROR(SyncFileData(fd_, path_));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(path_.c_str());
    return Status::FromErrno(errno, "close " + path_);
  }
  return Status::Ok();
}

// ---- VerifiedFile -----------------------------------------------------------

VerifiedFile::~VerifiedFile() {
  if (map_) ::munmap(const_cast<char*>(map_), length_);
  if (fd_ >= 0) ::close(fd_);
}

Status VerifiedFile::LoadFooter() {
  std::call_once(footer_once_, [this] {
    uint64_t blocks = BlockCount(length_, block_size_);
    std::string footer(FooterSize(length_, block_size_), '\0');
    Status st = PreadFull(fd_, footer.data(), footer.size(), length_, "data file");
    if (!st.ok()) {
      footer_status_ = st.code() == StatusCode::kCorruption
                           ? Status::Corruption("footer is missing: " + st.message())
                           : st;
      return;
    }
    const char* t = footer.data() + blocks * 4;
    if (DecodeFixed64(t) != kDataFileMagic) {
      footer_status_ = Status::Corruption("footer magic is wrong");
    } else if (DecodeFixed64(t + 8) != length_ || DecodeFixed32(t + 16) != block_size_ ||
               DecodeFixed32(t + 20) != blocks) {
      footer_status_ = Status::Corruption("footer does not match the metadata (length " +
                                          std::to_string(DecodeFixed64(t + 8)) + ", expected " +
                                          std::to_string(length_) + ")");
    } else if (DecodeFixed32(t + 28) != Crc32c(0, footer.data(), footer.size() - 4)) {
      footer_status_ = Status::Corruption("footer checksum mismatch");
    } else {
      crcs_.resize(blocks);
      for (uint64_t i = 0; i < blocks; ++i) crcs_[i] = DecodeFixed32(footer.data() + 4 * i);
      verified_.reset(new std::atomic<uint8_t>[blocks]);
      for (uint64_t i = 0; i < blocks; ++i) verified_[i].store(0, std::memory_order_relaxed);
      if (length_ > 0 && g_use_mmap.load(std::memory_order_relaxed)) {
        // The footer check above proved the file holds all `length_` bytes, so
        // the mapping is backed (a file truncated later by hand would SIGBUS;
        // the engine never truncates). On failure we fall back to pread.
        void* p = ::mmap(nullptr, length_, PROT_READ, MAP_SHARED, fd_, 0);
        if (p != MAP_FAILED) map_ = static_cast<const char*>(p);
      }
    }
  });
  return footer_status_;
}

Status VerifiedFile::Verify(uint64_t offset, uint64_t n) {
  if (n == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(LoadFooter());
  uint64_t first = offset / block_size_;
  uint64_t last = (offset + n - 1) / block_size_;
  std::optional<ScratchBuffer> buf;
  for (uint64_t b = first; b <= last; ++b) {
    if (verified_[b].load(std::memory_order_acquire)) continue;
    uint64_t start = b * block_size_;
    size_t len = static_cast<size_t>(std::min<uint64_t>(block_size_, length_ - start));
    const char* bytes;
    if (map_) {
      bytes = map_ + start;
    } else {
      if (!buf) buf.emplace(block_size_);
      Status st = PreadFull(fd_, buf->data(), len, start, "data file");
      if (!st.ok()) return Status(st.code(), "block " + std::to_string(b) + ": " + st.message());
      bytes = buf->data();
    }
    uint32_t crc = Crc32c(0, bytes, len);
    if (crc != crcs_[b]) {
      char msg[128];
      std::snprintf(msg, sizeof(msg), "block %llu (bytes %llu..%llu) checksum mismatch",
                    static_cast<unsigned long long>(b), static_cast<unsigned long long>(start),
                    static_cast<unsigned long long>(start + len));
      return Status::Corruption(msg);
    }
    verified_[b].store(1, std::memory_order_release);
  }
  return Status::Ok();
}

Status VerifiedFile::Read(uint64_t offset, char* dst, uint64_t n) {
  if (map_) {
    std::memcpy(dst, map_ + offset, n);
    return Status::Ok();
  }
  return PreadFull(fd_, dst, n, offset, "data file");
}

}  // namespace strata::objstore
