// Clocks. Wall time (Unix nanoseconds) for what is stored or shown: object
// mtimes, inode times, timestamps in logs and file names. Monotonic time for
// what is measured: timeouts, latencies, rates, cache ages. Thread-safe.
#pragma once

#include <cstdint>

namespace strata {

// Nanoseconds since the Unix epoch (CLOCK_REALTIME); may step backwards.
int64_t NowUnixNanos();
// Nanoseconds since an arbitrary start (CLOCK_MONOTONIC); never steps backwards.
int64_t MonotonicNanos();

}  // namespace strata
