// Scalar MD5, the Md5Stream front end, and the batching service that feeds the
// 8-lane AVX2 kernel (md5_avx2.cc). See include/strata/core/md5_mb.h.
//
// The service is flat combining rather than a dedicated hasher thread: a caller
// with whole blocks queues a Job; if no caller is combining, it becomes the
// combiner itself. The combiner owns the 8 lanes: it refills idle lanes from the
// queue, runs the kernel in chunks of at most kMaxChunk blocks while two or more
// lanes are busy (idle lanes just re-read a busy lane's data and their result is
// dropped) -- two interleaved scalar chains when exactly two are -- and runs the scalar code while only its own job is left, checking
// for newcomers every kScalarChunk blocks. When its own job is done it hands the
// role to the owner of a still-busy lane and returns. A lone stream therefore
// never leaves its thread, and no thread wakes up without work to do.
#include <strata/core/md5_mb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>
#include <thread>
#include <string_view>
#include <utility>

#include "core/md5_tables.h"

namespace strata {
namespace md5 {
namespace {

inline uint32_t Rotl(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

inline uint32_t LoadLe32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

template <int I>
inline __attribute__((always_inline)) void Step(uint32_t v[4], const uint32_t* m) {
  constexpr int ia = (64 - I) % 4;
  constexpr int ib = (ia + 1) % 4, ic = (ia + 2) % 4, id = (ia + 3) % 4;
  const uint32_t b = v[ib], c = v[ic], d = v[id];
  uint32_t f;
  if constexpr (I < 16) {
    f = d ^ (b & (c ^ d));
  } else if constexpr (I < 32) {
    // (b & d) | (c & ~d) with the OR as an ADD (the terms are disjoint): only
    // b & d waits for the newest word b.
    v[ia] = b + Rotl(v[ia] + m[MsgIndex(I)] + kK[I] + (c & ~d) + (b & d), kS[I]);
    return;
  } else if constexpr (I < 48) {
    f = b ^ c ^ d;
  } else {
    f = c ^ (b | ~d);
  }
  v[ia] = b + Rotl(v[ia] + m[MsgIndex(I)] + kK[I] + f, kS[I]);
}

template <size_t... I>
inline __attribute__((always_inline)) void Rounds(uint32_t v[4], const uint32_t* m,
                                                  std::index_sequence<I...>) {
  (Step<static_cast<int>(I)>(v, m), ...);
}

// Two independent streams step by step: MD5 is bound by the latency of its
// dependency chain, so a core runs two chains side by side at nearly twice the
// throughput of one. The combiner uses this when exactly two lanes are busy,
// where the 8-lane kernel would waste six.
template <size_t... I>
inline __attribute__((always_inline)) void Rounds2(uint32_t v[4], const uint32_t* m,
                                                   uint32_t w[4], const uint32_t* n,
                                                   std::index_sequence<I...>) {
  ((Step<static_cast<int>(I)>(v, m), Step<static_cast<int>(I)>(w, n)), ...);
}

}  // namespace

// The final padding (0x80, zeros, the bit length) with the scalar code.
void Finish(Md5State& st, unsigned char out[16]) {
  unsigned char tmp[128] = {};
  std::memcpy(tmp, st.buf, st.buf_len);
  tmp[st.buf_len] = 0x80;
  const size_t len = st.buf_len < 56 ? 64 : 128;
  const uint64_t bits = st.total * 8;
  for (int i = 0; i < 8; ++i) tmp[len - 8 + i] = static_cast<unsigned char>(bits >> (8 * i));
  ScalarBlocks(st.h, tmp, len / 64);
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < 4; ++i) out[4 * w + i] = static_cast<unsigned char>(st.h[w] >> (8 * i));
  }
}

namespace {

// Updates with fewer whole blocks than this are hashed in place: queueing
// costs a lock and maybe a wake-up, which a 1 KiB update does not repay.
constexpr size_t kMinBatchBlocks = 16;
// Blocks per lane per kernel call: bounds how long a newcomer waits for a lane.
constexpr size_t kMaxChunk = 256;
// Blocks the combiner hashes alone before looking for newcomers.
constexpr size_t kScalarChunk = 256;
// How long the combiner holds free lanes open for the next chunks of streams
// that are still reading them (see Combine).
constexpr auto kFillWait = std::chrono::milliseconds(2);

}  // namespace

// Whole blocks of one stream handed to the batcher. h, p and blocks belong to
// the combiner from Submit until done.
struct Job {
  Job() = default;
  Job(uint32_t* state, const unsigned char* data, size_t n) : h(state), p(data), blocks(n) {}
  uint32_t* h = nullptr;
  const unsigned char* p = nullptr;
  size_t blocks = 0;
  std::condition_variable cv;
  bool done = false;     // all blocks absorbed; guarded by Batcher::mu_
  bool lead = false;     // handed the combiner role; guarded by Batcher::mu_
  bool waiting = false;  // its owner sleeps in Wait(); guarded by Batcher::mu_
  bool sync = false;     // its owner blocks until done (Update, not UpdateAsync)
};

namespace {

class Batcher {
 public:
  // Submit + Wait.
  void Run(Job* j) {
    std::unique_lock<std::mutex> lk(mu_);
    j->sync = true;
    ++sync_jobs_;
    Push(j);
    WaitLocked(lk, j);
  }

  // An UpdateAsync stream starts or ends: while one is open, its next chunk
  // is worth holding a free lane for.
  void StreamOpen() {
    std::lock_guard<std::mutex> lk(mu_);
    ++streams_;
  }
  void StreamClose() {
    std::lock_guard<std::mutex> lk(mu_);
    --streams_;
    if (filling_) fill_cv_.notify_one();
  }

  // Queues j without waiting; some caller of Wait (at the latest j's owner)
  // hashes it.
  void Submit(Job* j) {
    std::lock_guard<std::mutex> lk(mu_);
    j->sync = false;
    Push(j);
  }

  // Returns once j is done, combining if no one else is.
  void Wait(Job* j) {
    std::unique_lock<std::mutex> lk(mu_);
    WaitLocked(lk, j);
  }

  BatchStats Stats() const {
    BatchStats s;
    s.kernel_calls = kernel_calls_.load(std::memory_order_relaxed);
    s.kernel_blocks = kernel_blocks_.load(std::memory_order_relaxed);
    s.idle_blocks = idle_blocks_.load(std::memory_order_relaxed);
    s.scalar_blocks = scalar_blocks_.load(std::memory_order_relaxed);
    s.pair_blocks = pair_blocks_.load(std::memory_order_relaxed);
    s.handoffs = handoffs_.load(std::memory_order_relaxed);
    s.fill_timeouts = fill_timeouts_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  void Push(Job* j) {
    j->done = j->lead = j->waiting = false;
    queue_.push_back(j);
    queued_.store(queue_.size(), std::memory_order_relaxed);
    if (filling_) fill_cv_.notify_one();
  }

  void WaitLocked(std::unique_lock<std::mutex>& lk, Job* j) {
    j->waiting = true;
    for (;;) {
      if (j->done) break;
      if (!active_ || j->lead) {
        active_ = true;
        j->lead = false;
        Combine(lk, j);
        break;
      }
      j->cv.wait(lk);
    }
    j->waiting = false;
  }

  // The combiner role goes to a caller sleeping in Wait, else lapses (the next
  // caller of Wait takes it; jobs left in lanes or the queue keep their place).
  void HandOff() {
    for (Job* l : lane_) {
      if (l != nullptr && l->waiting) return Lead(l);
    }
    for (Job* q : queue_) {
      if (q->waiting) return Lead(q);
    }
    active_ = false;
  }

  void Lead(Job* j) {
    j->lead = true;
    j->cv.notify_one();
    handoffs_.fetch_add(1, std::memory_order_relaxed);
  }

  // Called with lk held by the combiner; returns with lk held once me is done.
  //
  // Lanes are only worth as much as they are full: the kernel costs the same
  // with three busy lanes as with eight. Open UpdateAsync streams submit
  // their chunks one after another, each while the stream reads the next, so
  // when a lane frees up and fewer jobs are queued than streams are open, the
  // combiner waits (at most kFillWait, sleeping, which on a busy machine
  // gives the readers the core) for the missing chunks before it hashes.
  // Nobody waits for this: the combiner's own chunk is in a lane, the other
  // owners are reading, and a job of a blocking Update() is hashed at once.
  void Combine(std::unique_lock<std::mutex>& lk, Job* me) {
    bool changed = true;  // lanes were refilled or freed since the last wait
    bool have_deadline = false;
    std::chrono::steady_clock::time_point deadline;
    for (;;) {
      int busy = 0;
      for (Job*& l : lane_) {
        if (l == nullptr && !queue_.empty()) {
          l = queue_.front();
          queue_.pop_front();
          changed = true;
        }
        if (l != nullptr) ++busy;
      }
      queued_.store(queue_.size(), std::memory_order_relaxed);
      if (me->done) {
        HandOff();
        return;
      }
      if (changed && busy < 8 && busy < streams_ && sync_jobs_ == 0) {
        const auto now = std::chrono::steady_clock::now();
        if (!have_deadline) {
          deadline = now + kFillWait;
          have_deadline = true;
        }
        if (now < deadline) {
          filling_ = true;
          fill_cv_.wait_until(lk, deadline);
          filling_ = false;
          continue;
        }
        fill_timeouts_.fetch_add(1, std::memory_order_relaxed);
      }
      changed = false;
      have_deadline = false;
      lk.unlock();
      if (busy == 2) {
        Job* two[2];
        int k = 0;
        for (Job* l : lane_) {
          if (l != nullptr) two[k++] = l;
        }
        const size_t n = std::min({two[0]->blocks, two[1]->blocks, kMaxChunk});
        ScalarBlocks2(two[0]->h, two[0]->p, two[1]->h, two[1]->p, n);
        for (Job* j : two) {
          j->p += n * 64;
          j->blocks -= n;
        }
        pair_blocks_.fetch_add(2 * n, std::memory_order_relaxed);
      } else if (busy == 1) {
        Job* j = nullptr;
        for (Job* l : lane_) {
          if (l != nullptr) j = l;
        }
        do {
          const size_t n = std::min(j->blocks, kScalarChunk);
          ScalarBlocks(j->h, j->p, n);
          j->p += n * 64;
          j->blocks -= n;
          scalar_blocks_.fetch_add(n, std::memory_order_relaxed);
        } while (j->blocks > 0 && queued_.load(std::memory_order_relaxed) == 0);
      } else {
        RunKernel(busy);
      }
      lk.lock();
      for (Job*& l : lane_) {
        if (l != nullptr && l->blocks == 0) {
          changed = true;
          if (l->sync) --sync_jobs_;
          l->done = true;
          if (l != me && l->waiting) l->cv.notify_one();
          l = nullptr;
        }
      }
    }
  }

  // Runs the kernel over the busy lanes (lane_ is owned by the combiner).
  void RunKernel(int busy) {
    size_t n = kMaxChunk;
    const unsigned char* any = nullptr;
    for (Job* l : lane_) {
      if (l != nullptr) {
        n = std::min(n, l->blocks);
        any = l->p;
      }
    }
    alignas(32) uint32_t st[4][8];
    const unsigned char* data[8];
    for (int i = 0; i < 8; ++i) {
      const Job* l = lane_[i];
      for (int w = 0; w < 4; ++w) st[w][i] = l ? l->h[w] : 0;
      data[i] = l ? l->p : any;
    }
    Avx2Blocks8(st, data, n);
    for (int i = 0; i < 8; ++i) {
      Job* l = lane_[i];
      if (l == nullptr) continue;
      for (int w = 0; w < 4; ++w) l->h[w] = st[w][i];
      l->p += n * 64;
      l->blocks -= n;
    }
    kernel_calls_.fetch_add(1, std::memory_order_relaxed);
    kernel_blocks_.fetch_add(n * busy, std::memory_order_relaxed);
    idle_blocks_.fetch_add(n * (8 - busy), std::memory_order_relaxed);
  }

  std::mutex mu_;
  std::deque<Job*> queue_;   // jobs waiting for a lane; guarded by mu_
  bool active_ = false;      // a caller is combining; guarded by mu_
  Job* lane_[8] = {};        // owned by the active combiner
  std::atomic<size_t> queued_{0};  // queue_.size(), read without mu_ by the scalar loop
  int streams_ = 0;          // open UpdateAsync streams; guarded by mu_
  int sync_jobs_ = 0;        // Run() jobs not yet done; guarded by mu_
  bool filling_ = false;     // the combiner waits on fill_cv_; guarded by mu_
  std::condition_variable fill_cv_;
  std::atomic<uint64_t> kernel_calls_{0}, kernel_blocks_{0}, idle_blocks_{0},
      scalar_blocks_{0}, pair_blocks_{0}, handoffs_{0}, fill_timeouts_{0};
};

// One combiner hashes at most one core's worth (8 lanes, ~2.7 GB/s here), so
// a machine with many cores gets one batcher per four of them. A stream always
// meets the same batcher (chosen by its state's address); its jobs never run
// concurrently anyway (each Update and Digest waits for the one before).
std::vector<Batcher*>& Batchers() {
  // Never destroyed: callers may outlive static teardown.
  static auto* b = [] {
    auto* v = new std::vector<Batcher*>();
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < std::max(1u, cores / 4); ++i) v->push_back(new Batcher);
    return v;
  }();
  return *b;
}

Batcher& BatcherFor(const uint32_t* h) {
  auto& all = Batchers();
  if (all.size() == 1) return *all[0];
  const uint64_t x = reinterpret_cast<uintptr_t>(h) * 0x9e3779b97f4a7c15ull;
  return *all[(x >> 32) % all.size()];
}

void Absorb(uint32_t h[4], const unsigned char* p, size_t blocks) {
  if (blocks >= kMinBatchBlocks && BatchingEnabled()) {
    Job j{h, p, blocks};
    BatcherFor(h).Run(&j);
  } else {
    ScalarBlocks(h, p, blocks);
  }
}

}  // namespace

void SubmitJob(Job* j) { BatcherFor(j->h).Submit(j); }
void StreamOpen(const uint32_t* h) { BatcherFor(h).StreamOpen(); }
void StreamClose(const uint32_t* h) { BatcherFor(h).StreamClose(); }
void WaitJob(Job* j) { BatcherFor(j->h).Wait(j); }
bool Batchable(size_t blocks) { return blocks >= kMinBatchBlocks && BatchingEnabled(); }

void ScalarBlocks(uint32_t h[4], const unsigned char* p, size_t n) {
  uint32_t v[4] = {h[0], h[1], h[2], h[3]};
  for (; n > 0; --n, p += 64) {
    uint32_t m[16];
    for (int i = 0; i < 16; ++i) m[i] = LoadLe32(p + 4 * i);
    const uint32_t a = v[0], b = v[1], c = v[2], d = v[3];
    Rounds(v, m, std::make_index_sequence<64>{});
    v[0] += a;
    v[1] += b;
    v[2] += c;
    v[3] += d;
  }
  h[0] = v[0];
  h[1] = v[1];
  h[2] = v[2];
  h[3] = v[3];
}

void ScalarBlocks2(uint32_t h0[4], const unsigned char* p0, uint32_t h1[4],
                   const unsigned char* p1, size_t n) {
  uint32_t v[4] = {h0[0], h0[1], h0[2], h0[3]};
  uint32_t w[4] = {h1[0], h1[1], h1[2], h1[3]};
  for (; n > 0; --n, p0 += 64, p1 += 64) {
    uint32_t m0[16], m1[16];
    for (int i = 0; i < 16; ++i) {
      m0[i] = LoadLe32(p0 + 4 * i);
      m1[i] = LoadLe32(p1 + 4 * i);
    }
    const uint32_t a = v[0], b = v[1], c = v[2], d = v[3];
    const uint32_t e = w[0], f = w[1], g = w[2], h = w[3];
    Rounds2(v, m0, w, m1, std::make_index_sequence<64>{});
    v[0] += a;
    v[1] += b;
    v[2] += c;
    v[3] += d;
    w[0] += e;
    w[1] += f;
    w[2] += g;
    w[3] += h;
  }
  for (int i = 0; i < 4; ++i) {
    h0[i] = v[i];
    h1[i] = w[i];
  }
}

bool CpuHasAvx2() {
#if defined(__x86_64__)
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
#else
  return false;
#endif
}

bool BatchingEnabled() {
  static const bool on = [] {
    const char* cap = std::getenv("STRATA_MD5_SIMD");
    return CpuHasAvx2() && !(cap && std::string_view(cap) == "scalar");
  }();
  return on;
}

#if !defined(__x86_64__)
void Avx2Blocks8(uint32_t[4][8], const unsigned char* const[8], size_t) { std::abort(); }
#endif

BatchStats GetBatchStats() {
  BatchStats sum;
  for (Batcher* b : Batchers()) {
    const BatchStats s = b->Stats();
    sum.kernel_calls += s.kernel_calls;
    sum.kernel_blocks += s.kernel_blocks;
    sum.idle_blocks += s.idle_blocks;
    sum.scalar_blocks += s.scalar_blocks;
    sum.pair_blocks += s.pair_blocks;
    sum.handoffs += s.handoffs;
    sum.fill_timeouts += s.fill_timeouts;
  }
  return sum;
}

std::string ScalarDigest(const void* data, size_t n) {
  Md5State st;
  const auto* p = static_cast<const unsigned char*>(data);
  ScalarBlocks(st.h, p, n / 64);
  st.total = n;
  st.buf_len = static_cast<uint32_t>(n % 64);
  std::memcpy(st.buf, p + n / 64 * 64, st.buf_len);
  std::string out(16, '\0');
  Finish(st, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace md5

void Md5Stream::Update(const void* data, size_t n) {
  Wait();
  const auto* p = static_cast<const unsigned char*>(data);
  st_.total += n;
  if (st_.buf_len > 0) {
    const size_t take = std::min<size_t>(64 - st_.buf_len, n);
    std::memcpy(st_.buf + st_.buf_len, p, take);
    st_.buf_len += static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (st_.buf_len < 64) return;
    md5::ScalarBlocks(st_.h, st_.buf, 1);
    st_.buf_len = 0;
  }
  const size_t blocks = n / 64;
  if (blocks > 0) {
    md5::Absorb(st_.h, p, blocks);
    p += blocks * 64;
    n -= blocks * 64;
  }
  if (n > 0) {
    std::memcpy(st_.buf, p, n);
    st_.buf_len = static_cast<uint32_t>(n);
  }
}

Md5Stream::Md5Stream() = default;

Md5Stream::~Md5Stream() {
  Wait();
  Close();
}

void Md5Stream::Close() {
  if (open_) {
    md5::StreamClose(st_.h);
    open_ = false;
  }
}

void Md5Stream::Wait() {
  if (pending_) {
    md5::WaitJob(job_.get());
    pending_ = false;
  }
}

void Md5Stream::Reset() {
  Wait();
  Close();
  st_ = Md5State();
}

void Md5Stream::UpdateAsync(const void* data, size_t n) {
  Wait();
  const auto* p = static_cast<const unsigned char*>(data);
  // The head that completes a buffered partial block, and short updates, go
  // the ordinary way; only a run of whole blocks is left to the batcher.
  if (st_.buf_len > 0) {
    const size_t take = std::min<size_t>(64 - st_.buf_len, n);
    Update(p, take);
    p += take;
    n -= take;
  }
  const size_t blocks = n / 64;
  if (st_.buf_len != 0 || !md5::Batchable(blocks)) {
    Update(p, n);
    return;
  }
  if (!job_) job_ = std::make_unique<md5::Job>();
  job_->h = st_.h;
  job_->p = p;
  job_->blocks = blocks;
  st_.total += n;
  // The tail is only copied now; it is hashed after the blocks, by a later
  // update or Digest, both of which Wait() first.
  st_.buf_len = static_cast<uint32_t>(n - blocks * 64);
  std::memcpy(st_.buf, p + blocks * 64, st_.buf_len);
  if (!open_) {
    md5::StreamOpen(st_.h);
    open_ = true;
  }
  md5::SubmitJob(job_.get());
  pending_ = true;
}

void Md5Stream::Digest(unsigned char out[16]) {
  Wait();
  Close();
  md5::Finish(st_, out);
}

std::string Md5Stream::Digest() {
  std::string out(16, '\0');
  Digest(reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace strata
