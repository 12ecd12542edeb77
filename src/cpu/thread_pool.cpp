#include "cpu/thread_pool.hpp"

#include <system_error>

#include <algorithm>

namespace ctd::cpu {

int hardware_threads() {
  // Read once: each call reads /sys (5 ms over the ~300 loops of an automatic h).
  static const int threads = [] {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
  }();
  return threads;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error&) {
      break;  // no memory for another thread's stack: run on the threads there are
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    body(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    n_ = n;
    // A few chunks per thread balance uneven work without much locking.
    chunk_ = std::max<std::int64_t>(1, n / (4 * threads()));
    next_ = 0;
    error_ = nullptr;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  body_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::run_chunks() {
  for (;;) {
    std::int64_t begin;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= n_ || error_) return;
      begin = next_;
      next_ = std::min(n_, next_ + chunk_);
    }
    try {
      (*body_)(begin, std::min(n_, begin + chunk_));
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard lock(mutex_);
      --busy_;
    }
    done_.notify_one();
  }
}

}  // namespace ctd::cpu
