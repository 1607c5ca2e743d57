#include <algorithm>
#include <thread>

#include <strata/objstore/rate_limit.h>

namespace strata::objstore {

RateLimiter::RateLimiter(uint64_t bytes_per_second)
    : rate_(std::max<uint64_t>(1, bytes_per_second)) {}

void RateLimiter::Acquire(uint64_t n) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point until;
  {
    std::lock_guard l(mu_);
    const Clock::time_point now = Clock::now();
    // An idle limiter does not bank more than kBurst of unused bandwidth.
    paid_until_ = std::max(paid_until_, now - std::chrono::duration_cast<Clock::duration>(kBurst));
    paid_until_ += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(n) / static_cast<double>(rate_)));
    until = paid_until_;
  }
  std::this_thread::sleep_until(until);
}

Result<size_t> RateLimitedSource::Read(char* buf, size_t n) {
  if (limiter_ == nullptr) return inner_.Read(buf, n);
  STRATA_ASSIGN_OR_RETURN(size_t got, inner_.Read(buf, std::min(n, kRateLimitChunk)));
  limiter_->Acquire(got);
  return got;
}

Result<size_t> RateLimitedStream::Read(char* buf, size_t n) {
  if (limiter_ == nullptr) return inner_.Read(buf, n);
  STRATA_ASSIGN_OR_RETURN(size_t got, inner_.Read(buf, std::min(n, kRateLimitChunk)));
  limiter_->Acquire(got);
  return got;
}

}  // namespace strata::objstore
