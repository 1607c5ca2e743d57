#include <strata/core/clock.h>

#include <time.h>

namespace strata {
namespace {

int64_t Read(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t NowUnixNanos() { return Read(CLOCK_REALTIME); }
int64_t MonotonicNanos() { return Read(CLOCK_MONOTONIC); }

}  // namespace strata
