// Whether the int8 x int8 decode product (Int8Gemm, one row) streams its
// weight as fast as plain reads of the same packed panels can: the product
// beside read-only loops over the kI8x4 panels with software prefetch at
// several distances and hints, and with 1, 2 or 4 panels read side by side,
// on 2 threads split the way the product splits them (ForPanels). Variants
// alternate, one pass over all weight copies each, for several rounds, so
// the machine's changing memory speed hits every variant alike. Prints the
// median and 25th-percentile GB/s of each. Build and run with
// tools/bench/int8_read_sweep.sh [K] [N] [rounds].
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/products_int8_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

using namespace kiln::kernels;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Variant {
  int prefetch; // groups ahead (0: none; -1: Int8Gemm itself)
  int streams;  // panels read side by side
  int hint;     // 0 NTA, 2 T1, 3 T0
  const char *name;
};

// Sums panels [j0, j1) of b, `streams` panels at a time, one 256-byte group
// of each in turn; prefetches `prefetch` groups ahead with hint HINT.
template <int HINT>
__attribute__((target("avx512f,avx512bw"))) int ReadPanels(const PackedMatrix &b, int64_t j0,
                                                           int64_t j1, int prefetch, int streams) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  const int64_t groups = (b.k() + 3) / 4;
  for (int64_t j = j0; j < j1; j += streams) {
    const int64_t side = std::min<int64_t>(streams, j1 - j);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t s = 0; s < side; ++s) {
        const int8_t *bg = b.panel_i8x4(j + s) + g * 256;
        if (prefetch > 0)
          for (int q = 0; q < 4; ++q)
            _mm_prefetch(reinterpret_cast<const char *>(bg) + prefetch * 256 + 64 * q,
                         static_cast<_mm_hint>(HINT));
        acc0 = _mm512_add_epi32(acc0, _mm512_loadu_si512(bg));
        acc1 = _mm512_add_epi32(acc1, _mm512_loadu_si512(bg + 64));
        acc2 = _mm512_add_epi32(acc2, _mm512_loadu_si512(bg + 128));
        acc3 = _mm512_add_epi32(acc3, _mm512_loadu_si512(bg + 192));
      }
  }
  return _mm512_reduce_add_epi32(
      _mm512_add_epi32(_mm512_add_epi32(acc0, acc1), _mm512_add_epi32(acc2, acc3)));
}

} // namespace

int main(int argc, char **argv) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
    std::fprintf(stderr, "this bench needs AVX-512 (F and BW)\n");
    return 2;
  }
  const int64_t k = argc > 1 ? std::atoll(argv[1]) : 2048,
                n = argc > 2 ? std::atoll(argv[2]) : 11264;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 6;
  if (k <= 0 || n <= 0) {
    std::fprintf(stderr, "usage: int8_read_sweep [K > 0] [N > 0] [rounds]\n");
    return 2;
  }
  SetGemmThreads(2);
  const double bytes = double(k) * n;
  const int copies = std::max(4, int(1.2e9 / bytes));
  std::mt19937 rng(1);
  std::vector<float> scale(n, 0.01f);
  std::vector<std::unique_ptr<PackedMatrix>> packed;
  for (int c = 0; c < copies; ++c) {
    std::vector<int8_t> q(k * n);
    for (auto &x : q)
      x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    packed.push_back(PackedMatrix::PackI8x4(q.data(), scale.data(), k, n, n));
    if (!packed.back()) {
      std::fprintf(stderr, "out of memory packing copy %d\n", c);
      return 1;
    }
  }
  std::vector<float> a(k, 0.5f), c(n), a_scale(1);
  std::vector<uint8_t> aq(QuantizedDepth(k));
  const Variant variants[] = {{-1, 0, 0, "Int8Gemm"},        {0, 1, 0, "no prefetch"},
                              {16, 1, 2, "T1, 16 ahead"},    {32, 1, 2, "T1, 32 ahead"},
                              {64, 1, 2, "T1, 64 ahead"},    {32, 1, 3, "T0, 32 ahead"},
                              {32, 1, 0, "NTA, 32 ahead"},   {0, 2, 0, "no prefetch, 2 panels"},
                              {32, 2, 2, "T1 32, 2 panels"}, {0, 4, 0, "no prefetch, 4 panels"}};
  const int nv = sizeof(variants) / sizeof(variants[0]);
  std::vector<std::vector<double>> times(nv);
  std::atomic<int> sink{0};
  int next = 0;
  for (int round = 0; round < rounds; ++round)
    for (int v = 0; v < nv; ++v)
      for (int it = 0; it < copies; ++it) {
        const PackedMatrix &b = *packed[next++ % copies];
        const Variant &var = variants[v];
        const double t0 = Now();
        if (var.prefetch < 0) {
          QuantizeRows(a.data(), 1, k, k, aq.data(), a_scale.data());
          Int8Gemm(1, aq.data(), a_scale.data(), b, c.data(), n);
        } else {
          ForPanels(1, b, [&](int64_t j0, int64_t j1) {
            const int s =
                var.hint == 2   ? ReadPanels<_MM_HINT_T1>(b, j0, j1, var.prefetch, var.streams)
                : var.hint == 3 ? ReadPanels<_MM_HINT_T0>(b, j0, j1, var.prefetch, var.streams)
                                : ReadPanels<_MM_HINT_NTA>(b, j0, j1, var.prefetch, var.streams);
            sink += s;
          });
        }
        times[v].push_back(Now() - t0);
      }
  std::printf("K %lld x N %lld int8 (%.1f MB), 2 threads, %d rounds x %d copies\n"
              "| reader | median GB/s | 25th percentile GB/s |\n| --- | ---: | ---: |\n",
              static_cast<long long>(k), static_cast<long long>(n), bytes / 1e6, rounds, copies);
  for (int v = 0; v < nv; ++v) {
    std::vector<double> t = times[v];
    std::sort(t.begin(), t.end());
    std::printf("| %s | %.1f | %.1f |\n", variants[v].name, bytes / t[t.size() / 2] / 1e9,
                bytes / t[t.size() * 3 / 4] / 1e9);
  }
  return sink.load() == 42 ? 3 : 0; // keeps the reads
}
