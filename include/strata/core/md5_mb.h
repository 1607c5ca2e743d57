// MD5 (RFC 1321) that hashes many streams at once.
//
// S3 computes the MD5 ETag of every PUT body, and one MD5 stream cannot be
// parallelised (each 64-byte block depends on the previous one). The server,
// however, ingests many bodies at the same time. Md5Stream::Update hands its
// whole blocks to a process-wide batching service: whichever caller finds the
// service idle becomes its combiner and advances up to 8 streams together in the
// 8 x 32-bit lanes of AVX2 (one stream per lane; exactly two streams run as two
// interleaved scalar chains instead), picking up the blocks of other callers as
// they arrive and handing the combiner role to another waiting caller when its
// own blocks are done. A stream hashed alone is hashed with the scalar code in
// its caller's thread, so it is not slower than a plain MD5. Waiting callers
// sleep on a condition variable; nothing spins. One combiner at a time: the
// process hashes at most one core's worth (~2.7 GB/s with full lanes).
//
// Update returns only once all its bytes are absorbed, so callers may reuse
// their buffer right away; UpdateAsync returns at once and the buffer is the
// batcher's until Wait() (a caller reads its next chunk meanwhile, so more
// streams meet in the batcher). The partial last block and the final padding
// are handled with the scalar code on the stream's own state.
//
// Thread-safety: one Md5Stream is used by one thread at a time (like Hasher);
// different streams may be used from any number of threads concurrently.
// STRATA_MD5_SIMD=scalar in the environment turns the batching off (every
// stream is then hashed with the scalar code in its caller's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata {
namespace md5 {
struct Job;
}

// The explicit MD5 state: chaining words, total length, partial block.
struct Md5State {
  uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  uint64_t total = 0;      // bytes absorbed so far
  uint32_t buf_len = 0;    // bytes in buf (< 64)
  unsigned char buf[64];   // the partial block
};

class Md5Stream {
 public:
  Md5Stream();
  ~Md5Stream();  // waits for a pending UpdateAsync
  Md5Stream(const Md5Stream&) = delete;
  Md5Stream& operator=(const Md5Stream&) = delete;

  // Absorbs n bytes; blocks until they are hashed (the buffer is then free).
  void Update(const void* data, size_t n);
  // Like Update, but returns at once: the caller keeps data unchanged and
  // alive until Wait() returns (Update, UpdateAsync, Digest, Reset and the
  // destructor wait first). Lets a caller read its next chunk while this one
  // is hashed, so more streams meet in the batcher at the same time.
  void UpdateAsync(const void* data, size_t n);
  void Wait();
  // The 16-byte raw digest; the stream must be Reset() before reuse.
  std::string Digest();
  void Digest(unsigned char out[16]);
  void Reset();

 private:
  void Close();  // the stream no longer submits chunks (see md5::StreamOpen)

  Md5State st_;
  std::unique_ptr<md5::Job> job_;  // reused for every UpdateAsync
  bool pending_ = false;           // job_ is submitted and not yet waited for
  bool open_ = false;              // counted as an open stream by the batcher
};

namespace md5 {

// One-shot scalar MD5 of data (no batching), 16 raw bytes.
std::string ScalarDigest(const void* data, size_t n);

// Advances h by n whole 64-byte blocks with the scalar code.
void ScalarBlocks(uint32_t h[4], const unsigned char* blocks, size_t n);

// Two streams at once (independent chains interleaved), n blocks each.
void ScalarBlocks2(uint32_t h0[4], const unsigned char* p0, uint32_t h1[4],
                   const unsigned char* p1, size_t n);

// True when the CPU has AVX2 (and STRATA_MD5_SIMD does not say "scalar").
bool BatchingEnabled();

// Streams that submit with UpdateAsync register while open, so the batcher
// knows how many chunks to hold free lanes for (keyed like SubmitJob, by h).
void StreamOpen(const uint32_t* h);
void StreamClose(const uint32_t* h);

// The 8-lane kernel: advances 8 states, laid out st[word][lane], by n blocks
// each; data[lane] points at n * 64 bytes. Only call when the CPU has AVX2.
void Avx2Blocks8(uint32_t st[4][8], const unsigned char* const data[8], size_t n);
bool CpuHasAvx2();

// Counters of the batching service since the process started.
struct BatchStats {
  uint64_t kernel_calls = 0;   // 8-lane kernel invocations
  uint64_t kernel_blocks = 0;  // blocks hashed by the kernel (busy lanes only)
  uint64_t idle_blocks = 0;    // lane-blocks the kernel spent on idle lanes
  uint64_t scalar_blocks = 0;  // blocks the service hashed with the scalar code
  uint64_t pair_blocks = 0;    // blocks hashed two streams at a time (ScalarBlocks2)
  uint64_t handoffs = 0;       // combiner role handed to another caller
  uint64_t fill_timeouts = 0;  // waits for open streams' next chunks that ran out
};
BatchStats GetBatchStats();

}  // namespace md5
}  // namespace strata
