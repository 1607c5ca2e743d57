// ThreadPool: a fixed set of worker threads running submitted tasks in FIFO
// order, with a bounded queue so a producer that outruns the workers blocks
// instead of buffering without limit (transfers submit millions of parts).
//
// TaskGroup tracks a batch of tasks: Wait() returns when all have run and
// gives the first non-OK Status any of them returned.
//
// Thread-safety: all methods are thread-safe. The destructor drains the queue
// and joins the workers; tasks must not submit to a pool being destroyed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <strata/core/status.h>

namespace strata {

class ThreadPool {
 public:
  // threads == 0: one per core. max_queued == 0: unbounded.
  explicit ThreadPool(size_t threads = 0, size_t max_queued = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Blocks while the queue is full.
  void Submit(std::function<void()> task);
  size_t size() const { return workers_.size(); }

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable not_empty_;              // with mu_
  std::condition_variable not_full_;               // with mu_
  std::deque<std::function<void()>> queue_;        // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  size_t max_queued_;
  std::vector<std::thread> workers_;
};

class TaskGroup {
 public:
  explicit TaskGroup(ThreadPool* pool) : pool_(pool) {}
  ~TaskGroup() { (void)Wait(); }

  void Submit(std::function<Status()> task);
  // Waits for every task submitted so far; the first error, or OK.
  Status Wait();
  // True once a task failed (lets long loops stop submitting early).
  bool failed();

 private:
  ThreadPool* pool_;
  std::mutex mu_;
  std::condition_variable done_;   // with mu_
  size_t pending_ = 0;             // guarded by mu_
  Status first_error_;             // guarded by mu_
};

}  // namespace strata
