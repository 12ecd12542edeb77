#pragma once
// A fixed set of worker threads that run parallel loops. Each loop index is handled by exactly one
// thread and the caller waits for all of them, so a loop whose iterations write disjoint outputs
// gives the same result whatever the thread count.

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ctd::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the calling thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) over consecutive chunks covering [0, n). Rethrows the first exception
  // a chunk threw, after all threads have stopped.
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  int busy_ = 0;
  bool stopping_ = false;

  // The loop in flight.
  const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
  std::int64_t n_ = 0, chunk_ = 1, next_ = 0;  // next_ guarded by mutex_
  std::exception_ptr error_;
};

// std::thread::hardware_concurrency(), at least 1.
int hardware_threads();

// Cuts [0, n) into pieces of `piece` indices (the last may be shorter) and calls
// body(index, begin, end) for each on up to `threads` threads (0: all hardware threads). The cut
// does not depend on the thread count, so per-piece results combined in piece order give the
// same bits on any machine. Returns the number of pieces.
// The same on the caller's pool, for a loop run many times over: its threads start once (starting
// 16 threads for each of a few hundred small loops took longer than the loops).
template <class Body>
std::int64_t for_each_piece(ThreadPool& pool, std::int64_t n, std::int64_t piece, Body&& body) {
  if (n <= 0) return 0;
  const std::int64_t pieces = (n + piece - 1) / piece;
  pool.parallel_for(pieces, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) body(i, i * piece, std::min(n, (i + 1) * piece));
  });
  return pieces;
}
template <class Body>
std::int64_t for_each_piece(std::int64_t n, std::int64_t piece, int threads, Body&& body) {
  if (n <= 0) return 0;
  const int wanted = threads > 0 ? threads : hardware_threads();
  ThreadPool pool(int(std::min<std::int64_t>(wanted, (n + piece - 1) / piece)));
  return for_each_piece(pool, n, piece, std::forward<Body>(body));
}

// Sums of N terms over [0, n): body(i, sums) adds index i's terms to `sums`, in pieces of 2^16
// indices on all cores; the pieces' sums are added in order, so the result does not depend on the
// thread count (below 2^16 indices, the serial order).
template <std::size_t N, class Body>
std::array<double, N> sum_in_pieces(std::int64_t n, Body&& body) {
  constexpr std::int64_t kPiece = std::int64_t(1) << 16;
  std::vector<std::array<double, N>> parts(std::size_t(std::max<std::int64_t>(0, (n + kPiece - 1) / kPiece)));
  for_each_piece(n, kPiece, 0, [&](std::int64_t piece, std::int64_t begin, std::int64_t end) {
    std::array<double, N> sums{};
    for (std::int64_t i = begin; i < end; ++i) body(i, sums);
    parts[std::size_t(piece)] = sums;
  });
  std::array<double, N> total{};
  for (const auto& part : parts)
    for (std::size_t k = 0; k < N; ++k) total[k] += part[k];
  return total;
}

}  // namespace ctd::cpu
