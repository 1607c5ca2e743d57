#include <strata/core/thread_pool.h>

namespace strata {

ThreadPool::ThreadPool(size_t threads, size_t max_queued) : max_queued_(max_queued) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  not_empty_.notify_all();
  not_full_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  not_full_.wait(lock, [&] { return max_queued_ == 0 || queue_.size() < max_queued_ || stopping_; });
  queue_.push_back(std::move(task));
  lock.unlock();
  not_empty_.notify_one();
}

void ThreadPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      not_empty_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    not_full_.notify_one();
    task();
  }
}

void TaskGroup::Submit(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  pool_->Submit([this, task = std::move(task)] {
    Status st = task();
    std::lock_guard<std::mutex> lock(mu_);
    if (!st.ok() && first_error_.ok()) first_error_ = st;
    if (--pending_ == 0) done_.notify_all();
  });
}

Status TaskGroup::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  return first_error_;
}

bool TaskGroup::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !first_error_.ok();
}

}  // namespace strata
