// Chooses kiln's CPU BLAS by measurement: single-precision GEMM throughput of
// OpenBLAS (cblas_sgemm) and oneDNN (dnnl_sgemm) at the shapes a small decoder
// runs (M = tokens in the step, K x N = weight). Build and run with
// tools/bench/gemm_blas.sh; the result is recorded in docs/benchmarks.md.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

namespace {

template <typename F> double BestSeconds(F &&f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main() {
  struct Shape { int m, k, n; };
  const Shape shapes[] = {{1, 256, 256},  {1, 256, 704},   {1, 704, 256},  {1, 256, 2048},
                          {64, 256, 256}, {64, 256, 704},  {64, 704, 256}, {64, 256, 2048},
                          {256, 1024, 1024}, {1, 4096, 4096}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::printf("| M | K | N | OpenBLAS GFLOP/s | oneDNN GFLOP/s | OpenBLAS / oneDNN |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
    for (float &x : a) x = dist(rng);
    for (float &x : b) x = dist(rng);
    // Enough repetitions for ~50 ms per measurement.
    int inner = std::max(1, int(2e8 / (2.0 * s.m * s.k * s.n)));
    auto openblas = [&] {
      for (int i = 0; i < inner; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), s.k,
                    b.data(), s.n, 0.f, c.data(), s.n);
    };
    auto onednn = [&] {
      for (int i = 0; i < inner; ++i)
        dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.n, 0.f, c.data(),
                   s.n);
    };
    openblas();
    onednn();
    double flops = 2.0 * s.m * s.k * s.n * inner;
    double g_ob = flops / BestSeconds(openblas, 7) / 1e9;
    double g_dn = flops / BestSeconds(onednn, 7) / 1e9;
    std::printf("| %d | %d | %d | %.1f | %.1f | %.2f |\n", s.m, s.k, s.n, g_ob, g_dn, g_ob / g_dn);
  }
  return 0;
}
