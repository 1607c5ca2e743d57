// RateLimiter: a bandwidth limit shared by every thread that moves bytes
// (`--bwlimit`), and ByteSources that draw from one.
//
// A limiter hands out `bytes_per_second`, allowing a burst of at most
// kBurst worth of bytes after an idle spell, so that a transfer of N bytes
// takes at least N / rate - kBurst seconds however many workers share it.
// Acquire blocks the calling thread (outside the lock) until its bytes are
// paid for; callers acquire in small chunks so that the flow stays smooth.
//
// Thread-safety: Acquire may be called from any number of threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include <strata/objstore/object_store.h>

namespace strata::objstore {

class RateLimiter {
 public:
  static constexpr std::chrono::milliseconds kBurst{50};

  explicit RateLimiter(uint64_t bytes_per_second);
  uint64_t bytes_per_second() const { return rate_; }
  // Blocks until `n` more bytes fit under the limit.
  void Acquire(uint64_t n);

 private:
  const uint64_t rate_;
  std::mutex mu_;
  // The moment by which every byte granted so far has been paid for;
  // guarded by mu_.
  std::chrono::steady_clock::time_point paid_until_{};
};

// A RewindableSource whose reads draw from a limiter (nullptr = unlimited).
// Neither is owned.
class RateLimitedSource final : public RewindableSource {
 public:
  RateLimitedSource(RewindableSource& inner, RateLimiter* limiter)
      : inner_(inner), limiter_(limiter) {}
  Result<size_t> Read(char* buf, size_t n) override;
  bool Rewind() override { return inner_.Rewind(); }

 private:
  RewindableSource& inner_;
  RateLimiter* limiter_;
};

// The same for a source that cannot start over (stdin).
class RateLimitedStream final : public ByteSource {
 public:
  RateLimitedStream(ByteSource& inner, RateLimiter* limiter) : inner_(inner), limiter_(limiter) {}
  Result<size_t> Read(char* buf, size_t n) override;

 private:
  ByteSource& inner_;
  RateLimiter* limiter_;
};

// Reads at most this much per limited read: at 1 MiB/s a 64 KiB chunk is
// 60 ms, so parallel workers interleave instead of stalling for seconds.
inline constexpr size_t kRateLimitChunk = 64 << 10;

}  // namespace strata::objstore
