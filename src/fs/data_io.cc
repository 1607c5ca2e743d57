#include "fs/data_io.h"

#include <algorithm>
#include <cerrno>
#include <thread>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/log.h>

namespace strata::fs {
namespace {
constexpr log::Logger kLog("fs");
constexpr uint64_t kChunk = fsmeta::kChunkSize;

class MetaAdapter final : public SliceMeta {
 public:
  explicit MetaAdapter(fsmeta::MetaEngine* m) : m_(m) {}
  Result<uint64_t> NewSliceId() override { return m_->NewSliceId(); }
  Result<std::vector<fsmeta::Slice>> ReadChunk(Ino ino, uint32_t c) override { return m_->Read(ino, c); }
  Status WriteChunk(Ino ino, uint32_t c, uint32_t pos, const fsmeta::Slice& s, int64_t mtime) override {
    return m_->Write(ino, c, pos, s, mtime);
  }
  Status WriteChunks(Ino ino, const std::vector<fsmeta::MetaEngine::SliceWrite>& writes) override {
    return m_->WriteSlices(ino, writes);
  }
  Status ReplaceSlices(Ino ino, uint32_t c, const std::vector<fsmeta::Slice>& e,
                       const std::vector<fsmeta::Slice>& r) override {
    return m_->ReplaceSlices(ino, c, e, r);
  }

 private:
  fsmeta::MetaEngine* m_;
};

// Counts a slice's outstanding uploads and keeps the first error.
struct UploadTracker {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  Status error;
  void Done(Status st) {
    std::lock_guard<std::mutex> lk(mu);
    if (!st.ok() && error.ok()) error = std::move(st);
    if (--pending == 0) cv.notify_all();
  }
  Status Wait() {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return pending == 0; });
    return error;
  }
  bool Idle() {
    std::lock_guard<std::mutex> lk(mu);
    return pending == 0;
  }
};
}  // namespace

std::unique_ptr<SliceMeta> NewMetaSliceMeta(fsmeta::MetaEngine* meta) {
  return std::make_unique<MetaAdapter>(meta);
}

std::vector<Segment> VisibleSegments(const std::vector<fsmeta::Slice>& slices, uint32_t from, uint32_t to) {
  // Walk slices newest first, keeping the still-uncovered intervals of [from, to).
  std::vector<std::pair<uint32_t, uint32_t>> gaps;  // [a, b)
  if (from < to) gaps.push_back({from, to});
  std::vector<Segment> out;
  for (auto it = slices.rbegin(); it != slices.rend() && !gaps.empty(); ++it) {
    const fsmeta::Slice& s = *it;
    uint64_t sa = s.pos, sb = static_cast<uint64_t>(s.pos) + s.len;
    std::vector<std::pair<uint32_t, uint32_t>> next;
    for (auto [a, b] : gaps) {
      uint64_t x = std::max<uint64_t>(a, sa), y = std::min<uint64_t>(b, sb);
      if (x >= y) {
        next.push_back({a, b});
        continue;
      }
      Segment seg;
      seg.pos = static_cast<uint32_t>(x);
      seg.len = static_cast<uint32_t>(y - x);
      seg.id = s.id;
      seg.size = s.size;
      seg.off = static_cast<uint32_t>(s.off + (x - sa));
      out.push_back(seg);
      if (a < x) next.push_back({a, static_cast<uint32_t>(x)});
      if (y < b) next.push_back({static_cast<uint32_t>(y), b});
    }
    gaps.swap(next);
  }
  for (auto [a, b] : gaps) {
    Segment seg;
    seg.pos = a;
    seg.len = b - a;
    out.push_back(seg);
  }
  std::sort(out.begin(), out.end(), [](const Segment& x, const Segment& y) { return x.pos < y.pos; });
  return out;
}

// Whole-block write buffers, reused: a sequential writer fills 4 MiB blocks
// one after another, and a fresh malloc of each would be an mmap whose pages
// the kernel faults in and zeroes, then an munmap (a third of the mount's CPU
// in a 1 GiB write). A buffer returns here when its last owner (the upload,
// the read-after-write block cache) drops it. The pool keeps as many as the
// write buffer can hold: a writer faster than the uploads fills the buffer,
// and a smaller pool would free the excess when the uploads catch up, only
// for the next burst to fault it in again. Trim() gives back all but a few
// once nobody took a buffer for a while.
class BlockBufferPool : public std::enable_shared_from_this<BlockBufferPool> {
 public:
  BlockBufferPool(size_t block_size, size_t max_free, size_t keep_idle)
      : block_size_(block_size), max_free_(max_free), keep_idle_(keep_idle) {}
  ~BlockBufferPool() {
    for (std::string* b : free_) delete b;
  }

  std::shared_ptr<std::string> Acquire() {
    std::string* b = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      used_ = true;
      if (!free_.empty()) {
        b = free_.back();
        free_.pop_back();
      }
    }
    if (b == nullptr) {
      b = new std::string();
      b->reserve(block_size_);
    }
    std::weak_ptr<BlockBufferPool> pool = weak_from_this();
    return std::shared_ptr<std::string>(b, [pool](std::string* p) {
      if (auto self = pool.lock()) return self->Release(p);
      delete p;
    });
  }

  // Frees all but keep_idle free buffers, unless one was taken since the
  // last call.
  void Trim() {
    std::vector<std::string*> drop;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!used_) {
        while (free_.size() > keep_idle_) {
          drop.push_back(free_.back());
          free_.pop_back();
        }
      }
      used_ = false;
    }
    for (std::string* b : drop) delete b;
  }

 private:
  void Release(std::string* b) {
    if (b->capacity() == block_size_) {
      b->clear();
      std::lock_guard<std::mutex> lk(mu_);
      if (free_.size() < max_free_) {
        free_.push_back(b);
        return;
      }
    }
    delete b;
  }

  const size_t block_size_;
  const size_t max_free_;
  const size_t keep_idle_;
  std::mutex mu_;
  std::vector<std::string*> free_;  // guarded by mu_
  bool used_ = false;               // Acquire() since the last Trim(); guarded by mu_
};

struct DataIO::DirtySlice {
  uint32_t chunk = 0;
  uint32_t pos = 0;  // in the chunk
  uint32_t len = 0;
  uint64_t id = 0;
  int64_t mtime_ns = 0;
  std::vector<std::shared_ptr<std::string>> blocks;
  uint32_t submitted = 0;  // blocks [0, submitted) are uploading or uploaded
  bool frozen = false;
  std::shared_ptr<UploadTracker> up = std::make_shared<UploadTracker>();
};

struct DataIO::Writer {
  std::mutex mu;
  // Per chunk, slices in creation order; only the last may be open.
  std::map<uint32_t, std::deque<std::unique_ptr<DirtySlice>>> chunks;  // guarded by mu
  uint64_t bytes = 0;      // buffered bytes, guarded by mu
  uint64_t dirty_end = 0;  // guarded by mu
  Status error;            // first failed commit, reported once; guarded by mu
};

DataIO::DataIO(SliceMeta* meta, ChunkStore* store, DataOptions options)
    : meta_(meta), store_(store), options_(options) {
  compact_pool_ = std::make_unique<ThreadPool>(1, 1024);
  const size_t bs = std::max<size_t>(1, store_->block_size());
  buffers_ = std::make_shared<BlockBufferPool>(
      bs, std::max<size_t>(16, static_cast<size_t>(options_.buffer_size / bs) + 8), 4);
}

DataIO::~DataIO() {
  (void)FlushAll();
  compact_pool_.reset();
}

std::shared_ptr<DataIO::Writer> DataIO::GetWriter(Ino ino, bool create) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = writers_.find(ino);
  if (it != writers_.end()) return it->second;
  if (!create) return nullptr;
  auto w = std::make_shared<Writer>();
  writers_.emplace(ino, w);
  return w;
}

void DataIO::TrimBuffers() { buffers_->Trim(); }

void DataIO::SubmitBlock(Writer* w, DirtySlice* s, uint32_t index) {
  std::shared_ptr<std::string> data = s->blocks[index];
  auto up = s->up;
  {
    std::lock_guard<std::mutex> lk(up->mu);
    up->pending++;
  }
  uint64_t id = s->id;
  store_->upload_pool()->Submit([this, id, index, data, up] {
    up->Done(store_->PutBlock(id, index, *data, data));
  });
}

void DataIO::Freeze(Writer* w, DirtySlice* s) {
  if (s->frozen) return;
  s->frozen = true;
  for (uint32_t i = s->submitted; i < s->blocks.size(); i++) SubmitBlock(w, s, i);
  s->submitted = static_cast<uint32_t>(s->blocks.size());
}

// Finishes a slice's uploads (the last block in this thread when nothing else
// is in flight: a small file at close waits for it anyway).
Status DataIO::UploadSlice(Writer* w, DirtySlice* s) {
  Status inline_put;
  if (!s->frozen && s->submitted + 1 == s->blocks.size() && s->up->Idle()) {
    s->frozen = true;
    std::shared_ptr<std::string> data = s->blocks[s->submitted];
    inline_put = store_->PutBlock(s->id, s->submitted, *data, data);
    s->submitted++;
  }
  Freeze(w, s);
  Status st = s->up->Wait();
  return st.ok() ? inline_put : st;
}

// Slices whose uploads are done wait in RAM until a flush, unless they hold
// enough bytes or are numerous enough to be worth a transaction now: a file
// written at scattered offsets then costs a transaction per kCoalesceSlices
// slices instead of one per write. Nothing requires them committed earlier:
// this mount's reads see them in RAM, other mounts see them after the close
// (close-to-open), and a crash may lose what was neither closed nor fsynced.
bool DataIO::EnoughToCommit(const Writer& w) const {
  constexpr size_t kCoalesceSlices = 64;
  constexpr uint64_t kCoalesceBytes = 8ull << 20;
  size_t n = 0;
  uint64_t bytes = 0;
  for (const auto& [chunk, q] : w.chunks) {
    for (const auto& s : q) {
      if (!s->frozen || !s->up->Idle()) break;
      n++;
      bytes += s->len;
      if (n >= kCoalesceSlices || bytes >= kCoalesceBytes) return true;
    }
  }
  return false;
}

// Commits slices from the front of each chunk's list: frozen ones whose
// uploads are done (or all frozen ones when wait), or every slice when all.
// The slices committed together go in one metadata transaction (a flush of a
// file that dirtied many chunks or wrote many slices costs one), in order.
Status DataIO::CommitFront(Ino ino, Writer* w, bool wait, bool all) {
  Status first;
  if (!wait && !all && !EnoughToCommit(*w)) return first;
  std::vector<fsmeta::MetaEngine::SliceWrite> writes;
  std::vector<std::unique_ptr<DirtySlice>> done;  // alive until committed
  for (auto it = w->chunks.begin(); it != w->chunks.end();) {
    auto& q = it->second;
    while (!q.empty()) {
      DirtySlice* s = q.front().get();
      if (!all && !s->frozen) break;
      if (!all && !wait && !s->up->Idle()) break;
      Status st = UploadSlice(w, s);
      if (!st.ok()) {
        kLog.Error("inode {}: uploading {} bytes at chunk {} pos {} failed: {}", ino, s->len,
                   s->chunk, s->pos, st.ToString());
        if (first.ok()) first = st;
      } else if (s->len > 0) {
        fsmeta::MetaEngine::SliceWrite sw;
        sw.chunk_index = s->chunk;
        sw.pos = s->pos;
        sw.slice.id = s->id;
        sw.slice.size = s->len;
        sw.slice.off = 0;
        sw.slice.len = s->len;
        sw.slice.pos = s->pos;
        sw.mtime_ns = s->mtime_ns;
        writes.push_back(sw);
      }
      w->bytes -= s->len;
      buffered_ -= s->len;
      done.push_back(std::move(q.front()));
      q.pop_front();
    }
    if (q.empty()) {
      it = w->chunks.erase(it);
    } else {
      ++it;
    }
  }
  if (w->chunks.empty()) w->dirty_end = 0;
  if (!writes.empty()) {
    Status st = meta_->WriteChunks(ino, writes);
    if (!st.ok()) {
      kLog.Error("inode {}: committing {} slices failed: {}", ino, writes.size(), st.ToString());
      if (first.ok()) first = st;
    }
    InvalidateSlices(ino);
    commit_seq_++;
  }
  return first;
}

Status DataIO::Write(Ino ino, uint64_t off, std::string_view data) {
  if (data.empty()) return Status::Ok();
  auto wp = GetWriter(ino, true);
  Writer* w = wp.get();
  std::lock_guard<std::mutex> lk(w->mu);
  const uint32_t bs = store_->block_size();
  int64_t now = NowUnixNanos();
  while (!data.empty()) {
    uint32_t chunk = static_cast<uint32_t>(off / kChunk);
    uint32_t pos = static_cast<uint32_t>(off % kChunk);
    size_t n = std::min<uint64_t>(data.size(), kChunk - pos);
    auto& q = w->chunks[chunk];
    DirtySlice* s = q.empty() ? nullptr : q.back().get();
    // Continue the open slice when the write starts inside it or right at its
    // end, and touches no block already handed to the uploader.
    if (s && !s->frozen && pos >= s->pos && pos <= s->pos + s->len &&
        (pos - s->pos) / bs >= s->submitted) {
      // fits
    } else {
      if (s) Freeze(w, s);
      auto ns = std::make_unique<DirtySlice>();
      auto id = meta_->NewSliceId();
      if (!id) return id.error();
      ns->id = *id;
      ns->chunk = chunk;
      ns->pos = pos;
      q.push_back(std::move(ns));
      s = q.back().get();
    }
    s->mtime_ns = now;
    uint32_t rel = pos - s->pos;
    size_t left = n;
    const char* src = data.data();
    while (left > 0) {
      uint32_t bi = rel / bs, bo = rel % bs;
      size_t m = std::min<size_t>(left, bs - bo);
      while (s->blocks.size() <= bi) {
        // A write that covers a good part of a new block is likely one of a
        // sequential stream: take a whole-block buffer from the pool.
        const bool big = s->blocks.size() == bi && bo == 0 && m >= bs / 8;
        s->blocks.push_back(big ? buffers_->Acquire() : std::make_shared<std::string>());
      }
      std::string& b = *s->blocks[bi];
      if (b.capacity() < bo + m) b.reserve(std::min<size_t>(bs, std::max<size_t>(bo + m, b.capacity() * 2)));
      if (bo == b.size()) {
        b.append(src, m);  // no zero fill first, and the only copy
      } else {
        if (b.size() < bo + m) b.resize(bo + m);
        std::memcpy(b.data() + bo, src, m);
      }
      src += m;
      left -= m;
      rel += static_cast<uint32_t>(m);
    }
    if (rel > s->len) {
      uint32_t grow = rel - s->len;
      s->len = rel;
      w->bytes += grow;
      buffered_ += grow;
    }
    // Hand full blocks (except one still being extended) to the uploader.
    while (s->submitted < s->blocks.size() && s->blocks[s->submitted]->size() == bs &&
           (s->submitted + 1) * static_cast<uint64_t>(bs) <= s->len) {
      SubmitBlock(w, s, s->submitted);
      s->submitted++;
    }
    if (static_cast<uint64_t>(s->pos) + s->len >= kChunk) Freeze(w, s);
    w->dirty_end = std::max<uint64_t>(w->dirty_end, static_cast<uint64_t>(chunk) * kChunk + s->pos + s->len);
    data.remove_prefix(n);
    off += n;
  }
  Status st = CommitFront(ino, w, /*wait=*/false, /*all=*/false);
  if (st.ok() && buffered_.load() > options_.buffer_size) {
    st = CommitFront(ino, w, /*wait=*/true, /*all=*/false);
    if (st.ok() && buffered_.load() > options_.buffer_size) st = CommitFront(ino, w, true, true);
  }
  if (!st.ok()) return st;
  if (!w->error.ok()) return std::exchange(w->error, Status::Ok());
  return Status::Ok();
}

Status DataIO::Flush(Ino ino) {
  auto wp = GetWriter(ino, false);
  if (!wp) return Status::Ok();
  Status st;
  {
    std::lock_guard<std::mutex> lk(wp->mu);
    st = CommitFront(ino, wp.get(), true, true);
    if (st.ok() && !wp->error.ok()) st = std::exchange(wp->error, Status::Ok());
  }
  std::lock_guard<std::mutex> lk(mu_);
  auto it = writers_.find(ino);
  if (it != writers_.end() && it->second == wp && wp.use_count() == 2) {
    std::lock_guard<std::mutex> wl(wp->mu);
    if (wp->chunks.empty()) writers_.erase(it);
  }
  return st;
}

Status DataIO::FlushAll() {
  std::vector<Ino> inos;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [ino, w] : writers_) inos.push_back(ino);
  }
  Status first;
  for (Ino ino : inos) {
    Status st = Flush(ino);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

uint64_t DataIO::DirtyLength(Ino ino) {
  auto wp = GetWriter(ino, false);
  if (!wp) return 0;
  std::lock_guard<std::mutex> lk(wp->mu);
  return wp->dirty_end;
}

bool DataIO::HasDirty(Ino ino) {
  auto wp = GetWriter(ino, false);
  if (!wp) return false;
  std::lock_guard<std::mutex> lk(wp->mu);
  return !wp->chunks.empty();
}

Status DataIO::ReadChunkRange(Ino ino, uint32_t chunk, uint32_t from, uint32_t to, char* buf,
                              std::vector<fsmeta::Slice>* slices_out) {
  // Overlay pieces copied from uncommitted slices: (pos, bytes), applied in order.
  std::vector<std::pair<uint32_t, std::string>> overlay;
  std::vector<fsmeta::Slice> slices;
  auto wp = GetWriter(ino, false);
  {
    std::unique_lock<std::mutex> lk;
    if (wp) lk = std::unique_lock<std::mutex>(wp->mu);
    STRATA_ASSIGN_OR_RETURN(slices, CachedSlices(ino, chunk));
    if (wp) {
      auto it = wp->chunks.find(chunk);
      if (it != wp->chunks.end()) {
        const uint32_t bs = store_->block_size();
        for (auto& sp : it->second) {
          const DirtySlice& s = *sp;
          uint32_t a = std::max(from, s.pos), b = std::min<uint64_t>(to, static_cast<uint64_t>(s.pos) + s.len);
          if (a >= b) continue;
          std::string bytes(b - a, '\0');
          uint32_t rel = a - s.pos, done = 0;
          while (done < b - a) {
            uint32_t bi = rel / bs, bo = rel % bs;
            const std::string& blk = *s.blocks[bi];
            uint32_t m = std::min<uint32_t>(b - a - done, bs - bo);
            // A block shorter than expected cannot happen (len covers it).
            std::memcpy(bytes.data() + done, blk.data() + bo, std::min<size_t>(m, blk.size() - bo));
            done += m;
            rel += m;
          }
          overlay.emplace_back(a, std::move(bytes));
        }
      }
    }
  }
  for (const Segment& seg : VisibleSegments(slices, from, to)) {
    char* dst = buf + (seg.pos - from);
    if (seg.id == 0) {
      std::memset(dst, 0, seg.len);
      continue;
    }
    STRATA_RETURN_IF_ERROR(store_->ReadSlice(seg.id, seg.size, seg.off, seg.len, dst));
  }
  for (auto& [pos, bytes] : overlay) std::memcpy(buf + (pos - from), bytes.data(), bytes.size());
  MaybeCompact(ino, chunk, slices.size());
  if (slices_out) *slices_out = std::move(slices);
  return Status::Ok();
}

Result<size_t> DataIO::Read(Ino ino, uint64_t off, size_t n, char* buf, uint64_t length,
                            ReadState* rs) {
  if (off >= length || n == 0) return size_t{0};
  n = static_cast<size_t>(std::min<uint64_t>(n, length - off));
  size_t done = 0;
  std::vector<fsmeta::Slice> last_slices;
  uint32_t last_chunk = 0;
  while (done < n) {
    uint64_t p = off + done;
    uint32_t chunk = static_cast<uint32_t>(p / kChunk);
    uint32_t from = static_cast<uint32_t>(p % kChunk);
    uint32_t m = static_cast<uint32_t>(std::min<uint64_t>(n - done, kChunk - from));
    Status st = ReadChunkRange(ino, chunk, from, from + m, buf + done, &last_slices);
    if (st.IsNotFound()) {
      // A cached slice list can name objects another client's compaction
      // replaced and deleted: read the list again, once.
      InvalidateSlices(ino);
      st = ReadChunkRange(ino, chunk, from, from + m, buf + done, &last_slices);
    }
    STRATA_RETURN_IF_ERROR(st);
    last_chunk = chunk;
    done += m;
  }
  if (rs && options_.prefetch_blocks > 0) {
    if (off == rs->next_off) {
      rs->sequential++;
    } else {
      rs->sequential = 0;
      rs->prefetched_to = 0;
    }
    rs->next_off = off + n;
    if (rs->sequential >= 1) {
      const uint64_t bs = store_->block_size();
      uint64_t want_to = std::min<uint64_t>(length, off + n + options_.prefetch_blocks * bs);
      uint64_t start = std::max<uint64_t>(rs->prefetched_to, off + n);
      // Across chunk boundaries too, so the first read of the next chunk
      // does not wait for a block fetch: that chunk's slice list is one
      // metadata read, cached for the reads that follow.
      for (uint64_t pos = start; pos < want_to;) {
        const uint32_t chunk = static_cast<uint32_t>(pos / kChunk);
        const uint64_t chunk_start = static_cast<uint64_t>(chunk) * kChunk;
        const uint64_t to = std::min<uint64_t>(want_to, chunk_start + kChunk);
        std::vector<fsmeta::Slice> slices;
        if (chunk == last_chunk && !last_slices.empty()) {
          slices = last_slices;
        } else {
          auto r = CachedSlices(ino, chunk);
          if (!r) break;  // only a hint: the read itself will report errors
          slices = std::move(*r);
        }
        PrefetchSegments(slices, static_cast<uint32_t>(pos - chunk_start), static_cast<uint32_t>(to - chunk_start));
        // Round to whole blocks so a block is requested once.
        rs->prefetched_to = std::max<uint64_t>(to, ((pos + bs - 1) / bs) * bs);
        pos = to;
      }
    }
  }
  return n;
}

void DataIO::PrefetchHead(Ino ino, uint64_t length) {
  if (options_.prefetch_blocks == 0 || length == 0 || length > store_->block_size()) return;
  auto slices = CachedSlices(ino, 0);  // the READ that follows finds them cached
  if (slices) PrefetchSegments(*slices, 0, static_cast<uint32_t>(length));
}

void DataIO::PrefetchSegments(const std::vector<fsmeta::Slice>& slices, uint32_t from, uint32_t to) {
  for (const Segment& seg : VisibleSegments(slices, from, to)) {
    if (seg.id != 0) store_->Prefetch(seg.id, seg.size, seg.off, seg.len);
  }
}

void DataIO::MaybeCompact(Ino ino, uint32_t chunk, size_t nslices) {
  if (!options_.background_compaction || nslices < options_.compact_threshold) return;
  uint64_t key = (ino << 20) ^ chunk;
  {
    std::lock_guard<std::mutex> lk(compact_mu_);
    if (!compacting_.insert(key).second) return;
  }
  compact_pool_->Submit([this, ino, chunk, key] {
    auto r = CompactChunk(ino, chunk, options_.compact_threshold);
    if (!r) kLog.Warn("compaction of inode {} chunk {} failed: {}", ino, chunk, r.error().ToString());
    std::lock_guard<std::mutex> lk(compact_mu_);
    compacting_.erase(key);
  });
}

void DataIO::InvalidateSlices(Ino ino) {
  std::lock_guard<std::mutex> lk(slices_mu_);
  slices_epoch_++;
  auto it = slices_.find(ino);
  if (it == slices_.end()) return;
  slices_entries_ -= it->second.size();
  slices_.erase(it);
}

Result<std::vector<fsmeta::Slice>> DataIO::CachedSlices(Ino ino, uint32_t chunk) {
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lk(slices_mu_);
    auto it = slices_.find(ino);
    if (it != slices_.end()) {
      auto c = it->second.find(chunk);
      if (c != it->second.end()) return c->second;
    }
    epoch = slices_epoch_;
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<fsmeta::Slice> slices, meta_->ReadChunk(ino, chunk));
  std::lock_guard<std::mutex> lk(slices_mu_);
  // An invalidation since the read began may concern this very list: keep
  // the result for this read only.
  if (epoch == slices_epoch_) {
    if (slices_entries_ >= 65536) {
      slices_.clear();
      slices_entries_ = 0;
    }
    if (slices_[ino].emplace(chunk, slices).second) slices_entries_++;
  }
  return slices;
}

void DataIO::WaitBackground() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(compact_mu_);
      if (compacting_.empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<bool> DataIO::CompactChunk(Ino ino, uint32_t chunk, size_t min_slices) {
  STRATA_ASSIGN_OR_RETURN(std::vector<fsmeta::Slice> slices, meta_->ReadChunk(ino, chunk));
  if (slices.size() < std::max<size_t>(min_slices, 2)) return false;
  uint32_t end = 0;
  for (const auto& s : slices) end = std::max<uint32_t>(end, s.pos + s.len);
  if (end == 0) return false;
  // The committed view only: uncommitted writes commit later and still override.
  std::string data(end, '\0');
  for (const Segment& seg : VisibleSegments(slices, 0, end)) {
    if (seg.id == 0) continue;
    STRATA_RETURN_IF_ERROR(store_->ReadSlice(seg.id, seg.size, seg.off, seg.len, data.data() + seg.pos));
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t id, meta_->NewSliceId());
  const uint32_t bs = store_->block_size();
  {
    TaskGroup g(store_->upload_pool());
    for (uint32_t i = 0; static_cast<uint64_t>(i) * bs < end; i++) {
      uint32_t len = store_->BlockLen(end, i);
      std::string_view piece(data.data() + static_cast<uint64_t>(i) * bs, len);
      g.Submit([this, id, i, piece] { return store_->PutBlock(id, i, piece); });
    }
    STRATA_RETURN_IF_ERROR(g.Wait());
  }
  fsmeta::Slice ns;
  ns.id = id;
  ns.size = end;
  ns.len = end;
  Status st = meta_->ReplaceSlices(ino, chunk, slices, {ns});
  InvalidateSlices(ino);
  if (!st.ok()) {
    (void)store_->DeleteSlice(id, end);  // lost a race with a writer: drop our copy
    if (fsmeta::ErrnoOf(st) == EAGAIN) return false;
    return st;
  }
  return true;
}

}  // namespace strata::fs
