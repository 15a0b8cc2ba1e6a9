// ParallelFor: every index exactly once, in contiguous ranges no smaller
// than the grain, nested and concurrent calls included.
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln::test {
namespace {

// Counts how often each index of [0, n) is visited.
std::vector<int> Visits(int64_t n, int64_t grain, int64_t *ranges = nullptr) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
  std::atomic<int64_t> count{0};
  kernels::ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    EXPECT_LT(begin, end);
    ++count;
    for (int64_t i = begin; i < end; ++i)
      ++seen[i];
  });
  if (ranges)
    *ranges = count;
  std::vector<int> out;
  for (auto &s : seen)
    out.push_back(s.load());
  return out;
}

TEST(ParallelFor, CoversEveryIndexOnce) {
  kernels::SetGemmThreads(4);
  for (int64_t n : {1, 2, 3, 7, 64, 1000})
    for (int64_t grain : {1, 3, 100}) {
      int64_t ranges = 0;
      std::vector<int> v = Visits(n, grain, &ranges);
      EXPECT_EQ(v, std::vector<int>(n, 1)) << "n " << n << " grain " << grain;
      EXPECT_LE(ranges, std::max<int64_t>(1, n / grain));
    }
  kernels::SetGemmThreads(0);
}

TEST(ParallelFor, OneThreadAndEmptyRunSerially) {
  kernels::SetGemmThreads(1);
  int64_t ranges = 0;
  EXPECT_EQ(Visits(100, 1, &ranges), std::vector<int>(100, 1));
  EXPECT_EQ(ranges, 1);
  kernels::SetGemmThreads(0);
  bool called = false;
  kernels::ParallelFor(0, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelFor, NestedAndConcurrentCalls) {
  kernels::SetGemmThreads(4);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int rep = 0; rep < 50; ++rep)
      kernels::ParallelFor(8, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          kernels::ParallelFor(10, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
      });
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total.load(), 2 * 50 * 8 * 10);
  kernels::SetGemmThreads(0);
}

// Many jobs back to back and with pauses longer than the spin, with the
// spin off (every wait sleeps), short and long: the workers sleep, wake and
// claim ranges of the right job every time.
TEST(ParallelFor, BackToBackAndSleepingJobsWithAnySpin) {
  kernels::SetGemmThreads(4);
  for (int64_t spin : {0, 5, 100000}) {
    kernels::SetPoolSpinMicros(spin);
    EXPECT_EQ(kernels::PoolSpinMicros(), spin);
    int64_t expected = 0;
    std::atomic<int64_t> total{0};
    for (int job = 0; job < 2000; ++job) {
      const int64_t n = 1 + job % 13;
      kernels::ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          total += job * 100 + i;
      });
      for (int64_t i = 0; i < n; ++i)
        expected += job * 100 + i;
      if (job % 400 == 0) // longer than the short spins: the workers sleep
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(total.load(), expected) << "spin " << spin;
  }
  kernels::SetPoolSpinMicros(-1);
  EXPECT_EQ(kernels::PoolSpinMicros(), 100);
  kernels::SetPoolSpinMicros(1LL << 40);
  EXPECT_EQ(kernels::PoolSpinMicros(), 1000000);
  kernels::SetPoolSpinMicros(-1);
  kernels::SetGemmThreads(0);
}

} // namespace
} // namespace kiln::test
