// KvMeta: file contents. Create and Open/Close (this client's open counts),
// a chunk's slice list (Read, Write appends a slice, ReplaceSlices swaps in a
// compaction), Truncate and Fallocate (holes are id-0 slices), and the queue
// of slices no chunk references any more (QueueSlices, PendingSliceDeletes,
// ConfirmSliceDeletes), which the data layer empties.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>

#include <strata/core/clock.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

Result<Entry> KvMeta::Create(const Context& ctx, Ino parent, std::string_view name, uint32_t mode,
                             uint32_t umask, int) {
  return MakeNode(ctx, parent, name, S_IFREG | (mode & 07777), umask, 0, {}, true);
}

// ---- files ----------------------------------------------------------------

Result<Attr> KvMeta::Open(const Context& ctx, Ino ino, int flags) {
  // Never from the entry cache: close-to-open needs what is committed now.
  STRATA_ASSIGN_OR_RETURN(Attr a, ReadAttr(ino, false));
  int mask = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY:
      mask = R_OK;
      break;
    case O_WRONLY:
      mask = W_OK;
      break;
    case O_RDWR:
      mask = R_OK | W_OK;
      break;
    default:
      return FsError(EINVAL, "invalid open flags");
  }
  if (flags & O_TRUNC) mask |= W_OK;
  if (IsDir(a) && (mask & W_OK)) return FsError(EISDIR, "cannot open a directory for writing");
  STRATA_RETURN_IF_ERROR(Access(ctx, a, mask));
  std::lock_guard<std::mutex> lock(open_mu_);
  open_[ino]++;
  return a;
}

Status KvMeta::Close(Ino ino) {
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    auto it = open_.find(ino);
    if (it == open_.end()) return Status::Ok();
    if (--it->second > 0) return Status::Ok();
    open_.erase(it);
    // Not unlinked while open here: no sustain key to drop, no transaction.
    if (maybe_sustained_.erase(ino) == 0) return Status::Ok();
  }
  // Last close here: free the inode if it was unlinked while open.
  uint64_t sid = sid_;
  return Txn(
      [&](KvTxn& t) {
        if (!t.Get(SustainKey(sid, ino))) return Status::Ok();
        t.Delete(SustainKey(sid, ino));
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (a && a->nlink == 0) FreeInode(t, ino, *a);
        return Status::Ok();
      },
      false);
}

Result<std::vector<Slice>> KvMeta::Read(Ino ino, uint32_t chunk_index) {
  std::vector<Slice> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        auto v = t.Get(ChunkKey(ino, chunk_index));
        if (!v) {
          out.clear();
          if (!t.Get(AttrKey(ino)))
            return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
          return Status::Ok();
        }
        if (!DecodeSlices(*v, &out)) {
          return Status::Corruption("slice list of inode " + std::to_string(ino) + " chunk " +
                                    std::to_string(chunk_index) + " is corrupt; run fsck");
        }
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::Write(Ino ino, uint32_t chunk_index, uint32_t pos, const Slice& slice,
                     int64_t mtime_ns) {
  SliceWrite w;
  w.chunk_index = chunk_index;
  w.pos = pos;
  w.slice = slice;
  w.mtime_ns = mtime_ns;
  return WriteSlices(ino, {w});
}

// The slices a flush of one file commits (every chunk it dirtied, at close or
// fsync) go in one transaction: one attribute update, one quota charge.
Status KvMeta::WriteSlices(Ino ino, const std::vector<SliceWrite>& writes) {
  if (writes.empty()) return Status::Ok();
  uint64_t end = 0;
  // (chunk key, encoded slices) in order; several writes to one chunk append in order.
  std::vector<std::pair<std::string, std::string>> appends;
  int64_t mtime_ns = 0;
  for (const SliceWrite& w : writes) {
    if (static_cast<uint64_t>(w.pos) + w.slice.len > kChunkSize) {
      return FsError(EINVAL, "slice crosses the chunk boundary");
    }
    if (w.slice.id != 0 && static_cast<uint64_t>(w.slice.off) + w.slice.len > w.slice.size) {
      return FsError(EINVAL, "slice range exceeds the slice object");
    }
    uint64_t e = static_cast<uint64_t>(w.chunk_index) * kChunkSize + w.pos + w.slice.len;
    if (e > kMaxFileSize) return FsError(EFBIG, "file would exceed the maximum size");
    end = std::max(end, e);
    mtime_ns = std::max(mtime_ns, w.mtime_ns);
    Slice s = w.slice;
    s.pos = w.pos;
    std::string key = ChunkKey(ino, w.chunk_index);
    if (appends.empty() || appends.back().first != key) appends.emplace_back(std::move(key), "");
    AppendSlice(&appends.back().second, s);
  }
  const auto qdirs = QuotaDirs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (!IsReg(*a))
          return FsError(EPERM, "inode " + std::to_string(ino) + " is not a regular file");
        if (end > a->size) {
          int64_t delta = static_cast<int64_t>((end + 4095) / 4096 * 4096) -
                          static_cast<int64_t>((a->size + 4095) / 4096 * 4096);
          STRATA_RETURN_IF_ERROR(CheckSpace(delta, 0));
          if (delta && a->nlink > 0) {
            QuotaDeltas quota(qdirs.get(), as);
            quota.Charge(a->parent, delta, 0);
            STRATA_RETURN_IF_ERROR(quota.Apply(t));
          }
          if (delta) t.IncrBy(kUsedSpace, delta);
          a->size = end;
        }
        for (const auto& [key, v] : appends) t.Append(key, v);
        a->mtime_ns = a->ctime_ns = mtime_ns;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::Truncate(const Context& ctx, Ino ino, uint64_t length) {
  Attr in;
  in.size = length;
  return SetAttr(ctx, ino, kSetSize, in).status();
}

// Shrinks or extends a regular file inside a transaction: chunks past the new
// end are dropped (their slices queued for deletion) and the tail of the last
// kept chunk is covered by a hole, so bytes reappearing on a later extension
// read as zeros.
void KvMeta::TruncateInTxn(KvTxn& t, Ino ino, Attr* a, uint64_t length, int64_t now) {
  uint64_t old = a->size;
  if (length < old) {
    uint64_t first_drop = (length + kChunkSize - 1) / kChunkSize;
    std::vector<std::pair<std::string, std::string>> drop;
    t.Scan(ChunkPrefix(ino),
           first_drop == 0 ? "" : ChunkKey(ino, static_cast<uint32_t>(first_drop - 1)), 0, false,
           [&](const std::string& k, const std::string& v) {
             drop.emplace_back(k, v);
             return true;
           });
    for (auto& [k, v] : drop) {
      QueueSlices(t, v);
      t.Delete(k);
    }
    if (length % kChunkSize != 0) {
      uint32_t idx = static_cast<uint32_t>(length / kChunkSize);
      uint64_t chunk_start = static_cast<uint64_t>(idx) * kChunkSize;
      uint64_t chunk_end = std::min(old, chunk_start + kChunkSize);
      Slice hole;
      hole.pos = static_cast<uint32_t>(length - chunk_start);
      hole.len = static_cast<uint32_t>(chunk_end - length);
      hole.size = hole.len;
      std::string v;
      AppendSlice(&v, hole);
      t.Append(ChunkKey(ino, idx), v);
    }
  }
  int64_t delta = static_cast<int64_t>((length + 4095) / 4096 * 4096) -
                  static_cast<int64_t>((old + 4095) / 4096 * 4096);
  if (delta) t.IncrBy(kUsedSpace, delta);
  a->size = length;
  a->mtime_ns = a->ctime_ns = now;
}

void KvMeta::QueueSlices(KvTxn& t, std::string_view chunk_value) {
  std::vector<Slice> slices;
  DecodeSlices(chunk_value, &slices);
  std::set<uint64_t> seen;
  for (const auto& s : slices) {
    if (s.id == 0 || !seen.insert(s.id).second) continue;
    ReleaseSlice(t, s.id, s.size);
  }
}

void KvMeta::ReleaseSlice(KvTxn& t, uint64_t id, uint32_t size) {
  if (auto refs = t.Get(SliceRefKey(id))) {
    const int64_t n = std::strtoll(refs->c_str(), nullptr, 10);
    if (n > 1) {
      t.Set(SliceRefKey(id), std::to_string(n - 1));
      return;
    }
    t.Delete(SliceRefKey(id));
    if (n == 1) return;  // the other owner keeps the objects
  }
  std::string v;
  PutBigEndian32(&v, size);
  t.Set(DelSliceKey(id), v);
}

Status KvMeta::Fallocate(const Context& ctx, Ino ino, int mode, uint64_t offset, uint64_t length) {
  if (length == 0) return FsError(EINVAL, "fallocate length must be > 0");
  if (mode & ~(kFallocKeepSize | kFallocPunchHole | kFallocZeroRange)) {
    return FsError(EOPNOTSUPP, "unsupported fallocate mode " + std::to_string(mode));
  }
  if ((mode & kFallocPunchHole) && !(mode & kFallocKeepSize)) {
    return FsError(EINVAL, "punch hole requires keep size");
  }
  if ((mode & kFallocPunchHole) && (mode & kFallocZeroRange)) {
    return FsError(EINVAL, "punch hole and zero range are exclusive");
  }
  if (offset + length < offset || offset + length > kMaxFileSize) {
    return FsError(EFBIG, "fallocate range exceeds the maximum file size");
  }
  int64_t now = NowUnixNanos();
  const auto qdirs = QuotaDirs();
  return Txn(
      [&](KvTxn& t) {
        AttrCache as(t);
        Attr* a = as.Get(ino);
        if (!a) return FsError(ENOENT, "inode " + std::to_string(ino) + " does not exist");
        if (IsDir(*a)) return FsError(EISDIR, "cannot fallocate a directory");
        if (!IsReg(*a)) return FsError(ENODEV, "cannot fallocate a special file");
        if (!ctx.write_handle) STRATA_RETURN_IF_ERROR(Access(ctx, *a, W_OK));
        uint64_t end = offset + length;
        if (mode & (kFallocPunchHole | kFallocZeroRange)) {
          // Holes over [offset, zero_end): never past EOF, so chunks stay within the length.
          uint64_t zero_end = (mode & kFallocKeepSize) ? std::min(end, a->size) : end;
          for (uint64_t p = offset; p < zero_end;) {
            uint32_t idx = static_cast<uint32_t>(p / kChunkSize);
            uint64_t cend = std::min(zero_end, (static_cast<uint64_t>(idx) + 1) * kChunkSize);
            Slice hole;
            hole.pos = static_cast<uint32_t>(p % kChunkSize);
            hole.len = static_cast<uint32_t>(cend - p);
            hole.size = hole.len;
            std::string v;
            AppendSlice(&v, hole);
            t.Append(ChunkKey(ino, idx), v);
            p = cend;
          }
        }
        if (!(mode & kFallocKeepSize) && end > a->size) {
          int64_t delta = static_cast<int64_t>((end + 4095) / 4096 * 4096) -
                          static_cast<int64_t>((a->size + 4095) / 4096 * 4096);
          STRATA_RETURN_IF_ERROR(CheckSpace(delta, 0));
          if (delta && a->nlink > 0) {
            QuotaDeltas quota(qdirs.get(), as);
            quota.Charge(a->parent, delta, 0);
            STRATA_RETURN_IF_ERROR(quota.Apply(t));
          }
          if (delta) t.IncrBy(kUsedSpace, delta);
          a->size = end;
        }
        a->mtime_ns = a->ctime_ns = now;
        as.Dirty(ino);
        as.Flush();
        return Status::Ok();
      },
      false);
}

Status KvMeta::ReplaceSlices(Ino ino, uint32_t chunk_index, const std::vector<Slice>& expected,
                             const std::vector<Slice>& replacement) {
  for (const auto& s : replacement) {
    if (static_cast<uint64_t>(s.pos) + s.len > kChunkSize)
      return FsError(EINVAL, "slice crosses the chunk boundary");
  }
  return Txn(
      [&](KvTxn& t) {
        std::string key = ChunkKey(ino, chunk_index);
        auto v = t.Get(key);
        std::vector<Slice> cur;
        if (v && !DecodeSlices(*v, &cur)) return Status::Corruption("corrupt slice list");
        if (cur != expected)
          return FsError(EAGAIN, "chunk changed since it was read; compaction skipped");
        std::set<uint64_t> kept;
        for (const auto& s : replacement) kept.insert(s.id);
        std::set<uint64_t> seen;
        for (const auto& s : cur) {
          if (s.id == 0 || kept.count(s.id) || !seen.insert(s.id).second) continue;
          ReleaseSlice(t, s.id, s.size);
        }
        if (replacement.empty())
          t.Delete(key);
        else
          t.Set(key, EncodeSlices(replacement));
        return Status::Ok();
      },
      false);
}

Status KvMeta::ListSlices(const std::function<Status(Ino, uint32_t, const Slice&)>& fn) {
  Status inner;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("C", [&](const std::string& k, const std::string& v) {
    if (k.size() != 13) return true;
    std::vector<Slice> slices;
    DecodeSlices(v, &slices);
    for (const auto& s : slices) {
      if (s.id == 0) continue;
      inner = fn(DecodeBigEndian64(k.data() + 1), DecodeBigEndian32(k.data() + 9), s);
      if (!inner.ok()) return false;
    }
    return true;
  }));
  return inner;
}

Result<std::vector<SliceRef>> KvMeta::PendingSliceDeletes(size_t limit) {
  std::vector<SliceRef> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        t.Scan(DelSlicePrefix(), "", limit, false, [&](const std::string& k, const std::string& v) {
          if (k.size() == 17 && v.size() == 4)
            out.push_back({DecodeBigEndian64(k.data() + 9), DecodeBigEndian32(v.data())});
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Status KvMeta::ConfirmSliceDeletes(const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < ids.size(); i += 500) {
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          for (size_t j = i; j < std::min(ids.size(), i + 500); ++j) t.Delete(DelSliceKey(ids[j]));
          return Status::Ok();
        },
        false));
  }
  return Status::Ok();
}

}  // namespace strata::fsmeta
