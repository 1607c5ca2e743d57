// RateLimiter and the limited sources: one budget shared by every thread.
// Only lower bounds on elapsed time are checked (a sleep never ends early, so
// a loaded machine cannot make them fail); upper bounds belong in bench/.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <strata/objstore/rate_limit.h>

#include "testutil/testutil.h"

namespace strata::objstore {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(RateLimiterTest, ThreadsShareOneBudget) {
  RateLimiter limit(1 << 20);  // 1 MiB/s
  const auto t = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 16; ++k) limit.Acquire(4096 * 4);  // 256 KiB per thread
    });
  }
  for (auto& th : threads) th.join();
  // 1 MiB in all: a second, less the burst an idle limiter lends.
  EXPECT_GE(Seconds(t), 1.0 - 0.05 - 0.01);
}

TEST(RateLimiterTest, IdleTimeIsNotBankedBeyondTheBurst) {
  RateLimiter limit(1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t = Clock::now();
  limit.Acquire(512 << 10);  // half a second's worth, right after 300 ms idle
  EXPECT_GE(Seconds(t), 0.5 - 0.05 - 0.01);
}

TEST(RateLimiterTest, SourcesReadEverythingInSmallChunks) {
  const std::string data(300 << 10, 'x');
  StringSource inner(data);
  RateLimiter limit(8 << 20);
  RateLimitedSource src(inner, &limit);
  std::string got;
  char buf[1 << 20];
  for (;;) {
    ASSERT_OK_AND_ASSIGN(size_t n, src.Read(buf, sizeof(buf)));
    if (n == 0) break;
    EXPECT_LE(n, kRateLimitChunk);
    got.append(buf, n);
  }
  EXPECT_EQ(got, data);
  // Rewind reaches the inner source (a retried upload starts over).
  ASSERT_TRUE(src.Rewind());
  ASSERT_OK_AND_ASSIGN(size_t n, src.Read(buf, 10));
  EXPECT_EQ(n, 10u);
  // No limiter: reads pass through unchanged.
  StringSource inner2(data);
  RateLimitedSource plain(inner2, nullptr);
  ASSERT_OK_AND_ASSIGN(size_t m, plain.Read(buf, sizeof(buf)));
  EXPECT_EQ(m, data.size());
}

}  // namespace
}  // namespace strata::objstore
