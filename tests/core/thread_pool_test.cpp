#include "cpu/thread_pool.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <vector>

namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ctd::cpu::ThreadPool pool(threads);
    for (std::int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      pool.parallel_for(n, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  ctd::cpu::ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(100, [](std::int64_t b, std::int64_t) {
    if (b > 10) throw std::runtime_error("boom");
  }), std::runtime_error);
  std::atomic<std::int64_t> sum = 0;
  pool.parallel_for(100, [&](std::int64_t b, std::int64_t e) {
    for (auto i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, PiecesOnTheCallersPoolAreThoseOfAFreshPool) {
  // The same cut, each piece once, whether the loop makes its own pool or reuses the caller's.
  ctd::cpu::ThreadPool pool(3);
  for (std::int64_t n : {0, 1, 5, 64, 1001}) {
    std::vector<std::array<std::int64_t, 3>> fresh(static_cast<std::size_t>(n)), reused(fresh.size());
    const auto a = ctd::cpu::for_each_piece(n, 7, 0, [&](std::int64_t i, std::int64_t b, std::int64_t e) {
      fresh[static_cast<std::size_t>(i)] = {i, b, e};
    });
    for (int round = 0; round < 2; ++round) {
      const auto c = ctd::cpu::for_each_piece(pool, n, 7, [&](std::int64_t i, std::int64_t b, std::int64_t e) {
        reused[static_cast<std::size_t>(i)] = {i, b, e};
      });
      EXPECT_EQ(c, a) << n;
      EXPECT_EQ(reused, fresh) << n;
    }
    EXPECT_EQ(a, (n + 6) / 7);
  }
}

}  // namespace
