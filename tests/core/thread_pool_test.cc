#include <strata/core/thread_pool.h>

#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskAndReportsTheFirstError) {
  ThreadPool pool(4, 8);  // a small queue: Submit must block, not drop
  TaskGroup group(&pool);
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) {
    group.Submit([&ran, i] {
      ran.fetch_add(1);
      return i == 500 ? Status::IOError("task 500 failed") : Status::Ok();
    });
  }
  Status st = group.Wait();
  EXPECT_EQ(ran.load(), 1000);
  EXPECT_EQ(st.code(), StatusCode::kIOError);
  EXPECT_EQ(st.message(), "task 500 failed");
  EXPECT_TRUE(group.failed());
}

TEST(ThreadPoolTest, TasksRunConcurrently) {
  ThreadPool pool(4);
  TaskGroup group(&pool);
  std::atomic<int> inside{0}, peak{0};
  for (int i = 0; i < 8; ++i) {
    group.Submit([&] {
      int now = inside.fetch_add(1) + 1;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      inside.fetch_sub(1);
      return Status::Ok();
    });
  }
  EXPECT_TRUE(group.Wait().ok());
  EXPECT_GE(peak.load(), 2);
}

TEST(ThreadPoolTest, DestructorDrainsTheQueue) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 100; ++i) pool.Submit([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace strata
