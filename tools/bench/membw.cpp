// Measures how fast this machine's cores read memory, the ceiling of a
// weight-streaming decode on the CPU (docs/benchmarks.md, "CPU at real
// size"). Each thread sums its share of a buffer much larger than the L3,
// with 64-byte vector loads, so the time is DRAM read bandwidth. Prints the
// best of several passes for 1..T threads, and a memcpy rate (read + write)
// beside it for comparison with other published copy rates.
// Build and run: tools/bench/membw.sh [max threads] [GB]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sums floats [begin, end) with four independent accumulators, so the loop
// is bound by loads, not by the adds' latency.
float SumRange(const float *p, size_t begin, size_t end) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = begin;
  for (; i + 32 <= end; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float out[8];
  _mm256_storeu_ps(out, s);
  float total = 0;
  for (float v : out) total += v;
  for (; i < end; ++i) total += p[i];
  return total;
}

double ReadGBps(const float *p, size_t n, int threads, int passes, float *sink) {
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<std::thread> pool;
    std::vector<float> sums(threads);
    double t0 = Now();
    for (int t = 0; t < threads; ++t) {
      size_t begin = n / threads * t / 32 * 32;
      size_t end = t + 1 == threads ? n : n / threads * (t + 1) / 32 * 32;
      pool.emplace_back([&, t, begin, end] { sums[t] = SumRange(p, begin, end); });
    }
    for (auto &th : pool) th.join();
    double s = Now() - t0;
    for (float v : sums) *sink += v;
    best = std::max(best, n * sizeof(float) / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  int max_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  double gb = argc > 2 ? std::atof(argv[2]) : 2.0;
  if (max_threads < 1 || gb <= 0) {
    std::fprintf(stderr, "usage: membw [max threads >= 1] [GB > 0]\n");
    return 2;
  }
  size_t bytes = static_cast<size_t>(gb * 1e9) / 64 * 64;
  size_t n = bytes / sizeof(float);
  auto *buf = static_cast<float *>(std::aligned_alloc(64, bytes));
  auto *dst = static_cast<float *>(std::aligned_alloc(64, bytes));
  if (!buf || !dst) {
    std::fprintf(stderr, "membw: cannot allocate 2 x %.1f GB\n", gb);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(i & 1023) * 1e-3f;
  std::memset(dst, 0, bytes);
  float sink = 0;
  std::printf("| threads | read GB/s (best of 5) |\n| ---: | ---: |\n");
  for (int t = 1; t <= max_threads; ++t)
    std::printf("| %d | %.1f |\n", t, ReadGBps(buf, n, t, 5, &sink));
  double best_copy = 0;
  for (int pass = 0; pass < 3; ++pass) {
    double t0 = Now();
    std::memcpy(dst, buf, bytes);
    best_copy = std::max(best_copy, bytes / (Now() - t0) / 1e9);
  }
  std::printf("\none-thread memcpy: %.1f GB/s copied (%.1f GB/s read + write)\n", best_copy,
              2 * best_copy);
  std::printf("(checksum %g)\n", static_cast<double>(sink + dst[n / 2]));
  std::free(buf);
  std::free(dst);
  return 0;
}
