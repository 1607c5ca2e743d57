#include "vector/segment.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <strata/core/checksum.h>
#include <strata/core/coding.h>
#include <strata/core/file_util.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::vector::internal {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'S', 'E', 'G', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 64;

struct Reader {
  const char* p;
  const char* end;
  bool ok = true;
  bool Need(size_t n) {
    if (!ok || size_t(end - p) < n) ok = false;
    return ok;
  }
  uint32_t U32() {
    uint32_t v = 0;
    if (Need(4)) v = DecodeFixed32(p), p += 4;
    return v;
  }
  uint64_t U64() {
    uint64_t v = 0;
    if (Need(8)) v = DecodeFixed64(p), p += 8;
    return v;
  }
  uint8_t U8() {
    uint8_t v = 0;
    if (Need(1)) v = static_cast<uint8_t>(*p++);
    return v;
  }
  std::string Str(size_t n) {
    std::string s;
    if (Need(n)) s.assign(p, n), p += n;
    return s;
  }
};

// Buffered writer over a file descriptor with a running offset.
class FileWriter {
 public:
  explicit FileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
    buf_.reserve(1 << 20);
  }
  void Write(const void* p, size_t n) {
    if (!st_.ok()) return;
    const char* c = static_cast<const char*>(p);
    offset_ += n;
    if (buf_.size() + n > (1 << 20)) Flush();
    if (n >= (1 << 20)) {
      Raw(c, n);
    } else {
      buf_.append(c, n);
    }
  }
  void PadTo(size_t align) {
    static const char zeros[64] = {};
    size_t pad = (align - offset_ % align) % align;
    Write(zeros, pad);
  }
  void Flush() {
    if (!buf_.empty()) Raw(buf_.data(), buf_.size());
    buf_.clear();
  }
  uint64_t offset() const { return offset_; }
  const Status& status() const { return st_; }

 private:
  void Raw(const char* p, size_t n) {
    if (st_.ok()) st_ = WriteAll(fd_, p, n, path_);
  }
  int fd_;
  std::string path_;
  std::string buf_;
  uint64_t offset_ = 0;
  Status st_;
};

}  // namespace

// ---------------------------------------------------------------------------
// SegmentFile

Result<std::shared_ptr<SegmentFile>> SegmentFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "stat " + path);
  }
  std::shared_ptr<SegmentFile> f(new SegmentFile());
  f->path_ = path;
  f->size_ = size_t(st.st_size);
  if (f->size_ < kHeaderSize) {
    ::close(fd);
    return Status::Corruption(
        fmt::format("segment file {} is truncated ({} bytes)", path, f->size_));
  }
  void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (m == MAP_FAILED) return Status::FromErrno(err, "mmap " + path);
  f->data_ = static_cast<const char*>(m);
  // Every error names the file and the byte offset of the bad field.
  auto corrupt = [&](uint64_t off, std::string why) {
    return Status::Corruption(
        fmt::format("segment file {} is damaged at offset {}: {}", path, off, why));
  };
  auto at = [&](const Reader& rd) { return uint64_t(rd.p - f->data_); };
  if (std::memcmp(f->data_, kMagic, 8) != 0) return corrupt(0, "bad magic");
  Reader h{f->data_ + 8, f->data_ + kHeaderSize};
  uint32_t version = h.U32();
  uint32_t nfields = h.U32();
  f->rows_ = h.U64();
  uint64_t meta_off = h.U64();
  uint64_t meta_len = h.U64();
  uint32_t meta_crc = h.U32();
  if (version != kVersion) return corrupt(8, fmt::format("unknown version {}", version));
  if (meta_off > f->size_ || meta_len > f->size_ - meta_off)
    return corrupt(24, "meta section out of bounds");
  if (Crc32c(0, f->data_ + meta_off, meta_len) != meta_crc)
    return corrupt(meta_off, "meta checksum mismatch");
  // The row count is in the header, outside the meta CRC; each row takes at
  // least kMinRowMeta bytes of meta (id, version, payload length), so a count
  // the meta cannot hold is corruption, not a reason to allocate gigabytes.
  constexpr uint64_t kMinRowMeta = 1 + 8 + 8 + 8 + 4;
  if (f->rows_ > (uint64_t(1) << 32) || f->rows_ > meta_len / kMinRowMeta)
    return corrupt(16, fmt::format("row count {} does not fit the meta section", f->rows_));
  Reader r{f->data_ + meta_off, f->data_ + meta_off + meta_len};
  const uint64_t words = (f->rows_ + 63) / 64;
  for (uint32_t i = 0; i < nfields; ++i) {
    const uint64_t field_at = at(r);
    Field fl;
    uint32_t nlen = r.U32();
    fl.name = r.Str(nlen);
    fl.dim = r.U32();
    uint64_t bitmap_off = r.U64();
    uint64_t vec_off = r.U64();
    fl.crc = r.U32();
    if (!r.ok) return corrupt(field_at, "field table truncated");
    uint64_t vec_bytes = 0;
    if (__builtin_mul_overflow(f->rows_, uint64_t(fl.dim) * 4, &vec_bytes) ||
        bitmap_off > f->size_ || words * 8 > f->size_ - bitmap_off || vec_off > f->size_ ||
        vec_bytes > f->size_ - vec_off || vec_off != bitmap_off + words * 8) {
      return corrupt(field_at, fmt::format("field {} out of bounds", i));
    }
    fl.present = reinterpret_cast<const uint64_t*>(f->data_ + bitmap_off);
    fl.vectors = reinterpret_cast<const float*>(f->data_ + vec_off);
    fl.bytes_offset = bitmap_off;
    fl.bytes_len = words * 8 + vec_bytes;
    f->fields_.push_back(std::move(fl));
  }
  const uint64_t rows_at = at(r);
  if (f->rows_ * kMinRowMeta > uint64_t(r.end - r.p))
    return corrupt(rows_at, fmt::format("row table of {} rows truncated", f->rows_));
  f->ids.resize(f->rows_);
  for (auto& id : f->ids) {
    id.is_uuid = r.U8() != 0;
    id.hi = r.U64();
    id.lo = r.U64();
  }
  f->versions.resize(f->rows_);
  for (auto& v : f->versions) v = r.U64();
  std::vector<uint32_t> lens(f->rows_);
  for (auto& l : lens) l = r.U32();
  if (!r.ok) return corrupt(rows_at, "row table truncated");
  const uint64_t payloads_at = at(r);
  f->payloads.resize(f->rows_);
  for (uint64_t i = 0; i < f->rows_; ++i) f->payloads[i] = r.Str(lens[i]);
  if (!r.ok) return corrupt(payloads_at, "payloads truncated");
  if (r.p < r.end) {
    const uint64_t sparse_at = at(r);
    if (r.Str(4) != "SPV1") return corrupt(sparse_at, "unknown section after the payloads");
    const uint32_t nsparse = r.U32();
    for (uint32_t i = 0; i < nsparse && r.ok; ++i) {
      std::string name = r.Str(r.U32());
      std::string_view rest(r.p, r.ok ? size_t(r.end - r.p) : 0);
      SparseColumn col;
      if (!r.ok || !col.Decode(uint32_t(f->rows_), &rest))
        return corrupt(sparse_at, fmt::format("sparse field {} truncated", i));
      r.p = rest.data();
      f->sparse.emplace_back(std::move(name), std::move(col));
    }
    if (!r.ok) return corrupt(sparse_at, "sparse section truncated");
  }
  // Vectors are read through the mapping on demand.
  ::madvise(const_cast<char*>(f->data_), f->size_, MADV_RANDOM);
  return f;
}

SegmentFile::~SegmentFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

Status SegmentFile::VerifyField(size_t i) const {
  const Field& fl = fields_.at(i);
  if (Crc32c(0, data_ + fl.bytes_offset, fl.bytes_len) != fl.crc) {
    return Status::Corruption(fmt::format(
        "segment file {}: vectors of field \"{}\" fail their checksum", path_, fl.name));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Segment

bool Segment::AllBuilt() const {
  for (const auto& f : fields) {
    if (f.index && !f.built) return false;
  }
  return true;
}

bool Segment::GetVector(size_t f, uint32_t row, float* out) const {
  if (file && f < file->fields().size()) {
    const auto& fl = file->fields()[f];
    if (row >= file->rows() || !((fl.present[row >> 6] >> (row & 63)) & 1)) return false;
    std::memcpy(out, fl.vectors + size_t(row) * fl.dim, size_t(fl.dim) * 4);
    return true;
  }
  if (f >= fields.size() || !fields[f].index) return false;
  return fields[f].index->Contains(row) && fields[f].index->GetVector(row, out).ok();
}

size_t Segment::MemoryBytes() const {
  size_t b = ids.capacity() * sizeof(PointId) + versions.capacity() * 8 + deleted.MemoryBytes();
  for (const auto& p : payloads) b += sizeof(std::string) + (p.size() > 15 ? p.capacity() : 0);
  for (const auto& f : fields) {
    if (f.index) b += f.index->MemoryBytes();
  }
  for (const auto& [k, idx] : payload_indexes) b += idx->MemoryBytes();
  for (const auto& c : sparse) b += c.MemoryBytes();
  return b;
}

bool Segment::Delete(uint32_t r) {
  if (r >= rows() || deleted.Test(r)) return false;
  deleted.Set(r);
  --live;
  return true;
}

Status WriteSegmentFile(const std::string& path, const Segment& seg, const CollectionSchema& schema,
                        const std::function<bool(size_t, uint32_t, float*)>& vec) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  const uint64_t rows = seg.rows();
  const uint64_t words = (rows + 63) / 64;
  FileWriter w(fd, tmp);
  char header[kHeaderSize] = {};
  w.Write(header, kHeaderSize);  // rewritten at the end

  struct FieldPos {
    uint64_t bitmap_off, vec_off;
    uint32_t crc;
  };
  std::vector<FieldPos> pos;
  for (size_t f = 0; f < schema.vectors.size(); ++f) {
    const uint32_t dim = schema.vectors[f].index.dim;
    w.PadTo(64);
    FieldPos fp{w.offset(), 0, 0};
    std::vector<uint64_t> bitmap(words, 0);
    std::vector<float> matrix_row(dim);
    // The bitmap first needs to know every row's presence: probe once.
    std::vector<float> all;
    all.reserve(size_t(rows) * dim);
    for (uint32_t r = 0; r < rows; ++r) {
      if (vec(f, r, matrix_row.data())) {
        bitmap[r >> 6] |= uint64_t{1} << (r & 63);
        all.insert(all.end(), matrix_row.begin(), matrix_row.end());
      } else {
        all.insert(all.end(), dim, 0.0f);
      }
    }
    uint32_t crc = Crc32c(0, bitmap.data(), bitmap.size() * 8);
    crc = Crc32c(crc, all.data(), all.size() * 4);
    w.Write(bitmap.data(), bitmap.size() * 8);
    fp.vec_off = w.offset();
    w.Write(all.data(), all.size() * 4);
    fp.crc = crc;
    pos.push_back(fp);
  }
  std::string meta;
  for (size_t f = 0; f < schema.vectors.size(); ++f) {
    const auto& name = schema.vectors[f].name;
    PutFixed32(&meta, uint32_t(name.size()));
    meta += name;
    PutFixed32(&meta, schema.vectors[f].index.dim);
    PutFixed64(&meta, pos[f].bitmap_off);
    PutFixed64(&meta, pos[f].vec_off);
    PutFixed32(&meta, pos[f].crc);
  }
  for (const auto& id : seg.ids) {
    meta.push_back(id.is_uuid ? 1 : 0);
    PutFixed64(&meta, id.hi);
    PutFixed64(&meta, id.lo);
  }
  for (uint64_t v : seg.versions) PutFixed64(&meta, v);
  for (const auto& p : seg.payloads) PutFixed32(&meta, uint32_t(p.size()));
  for (const auto& p : seg.payloads) meta += p;
  if (!schema.sparse.empty()) {
    meta += "SPV1";
    PutFixed32(&meta, uint32_t(schema.sparse.size()));
    for (size_t f = 0; f < schema.sparse.size(); ++f) {
      PutFixed32(&meta, uint32_t(schema.sparse[f].name.size()));
      meta += schema.sparse[f].name;
      if (f < seg.sparse.size()) {
        seg.sparse[f].Encode(uint32_t(rows), &meta);
      } else {
        SparseColumn().Encode(uint32_t(rows), &meta);
      }
    }
  }
  w.PadTo(64);
  const uint64_t meta_off = w.offset();
  w.Write(meta.data(), meta.size());
  w.Flush();
  Status st = w.status();
  if (st.ok()) {
    std::string h(kMagic, 8);
    PutFixed32(&h, kVersion);
    PutFixed32(&h, uint32_t(schema.vectors.size()));
    PutFixed64(&h, rows);
    PutFixed64(&h, meta_off);
    PutFixed64(&h, meta.size());
    PutFixed32(&h, Crc32c(0, meta.data(), meta.size()));
    h.resize(kHeaderSize, '\0');
    st = PwriteAll(fd, h.data(), h.size(), 0, tmp);
  }
  if (!st.ok()) {
    AbandonTempFile(fd, tmp);
    return st;
  }
  return CommitTempFile(fd, tmp, path);
}

}  // namespace strata::vector::internal
