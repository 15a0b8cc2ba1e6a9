// Measures kiln's products on a Llama-1.1B layer's weight shapes: OpenBLAS
// sgemm on the row-major weight against PackedGemm on its PackedMatrix (what
// the CPU backend runs). Each product reads a fresh copy of its weight (more
// weight bytes than the L3 holds, cycled), so few-row products measure
// memory streaming as in a real model. Prints GFLOP/s by best wall time and
// by CPU time (user + sys of all threads, averaged), and the packed
// product's GB/s of weight read. Build and run with
// tools/bench/gemm_packed.sh [threads] [GB of weight copies] [rows,rows,...].
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <algorithm>
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln::kernels;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Shape {
  int64_t k, n;
  const char *name;
};

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Best wall seconds per product over `reps`, cycling through `copies`
// weights; *cpu gets CPU seconds (all threads) per product, which a machine
// busy with other work distorts less than wall time.
template <typename F> double Time(int reps, int copies, F &&run, double *cpu) {
  std::vector<double> t;
  const double c0 = CpuNow();
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    run(r % copies);
    t.push_back(Now() - t0);
  }
  *cpu = (CpuNow() - c0) / reps;
  return *std::min_element(t.begin(), t.end());
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const double budget_bytes = argc > 2 ? std::atof(argv[2]) * 1e9 : 1.5e9;
  std::vector<int64_t> rows;
  std::stringstream list(argc > 3 ? argv[3] : "1,16,64,256");
  for (std::string item; std::getline(list, item, ',');)
    rows.push_back(std::atoll(item.c_str()));
  SetGemmThreads(threads);
  const Shape shapes[] = {{2048, 2560, "qkv 2048x2560"},
                          {2048, 2048, "o 2048x2048"},
                          {2048, 11264, "gate_up 2048x11264"},
                          {5632, 2048, "down 5632x2048"},
                          {2048, 32000, "lm_head 2048x32000"}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::printf("threads %d; GFLOP/s by best wall time, GFLOP per CPU-second in brackets\n"
              "| weight K x N | M | OpenBLAS sgemm GFLOP/s | packed GFLOP/s | packed GB/s | "
              "packed / sgemm (wall) |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
              threads);
  for (const Shape &s : shapes) {
    const double wbytes = double(s.k) * s.n * 4;
    const int copies = std::max(2, int(budget_bytes / wbytes));
    std::vector<std::vector<float>> w(copies, std::vector<float>(s.k * s.n));
    for (auto &v : w)
      for (auto &x : v)
        x = dist(rng);
    std::vector<std::unique_ptr<PackedMatrix>> packed;
    for (auto &v : w)
      packed.push_back(PackedMatrix::Pack(v.data(), s.k, s.n, s.n, false));
    for (int64_t m : rows) {
      std::vector<float> a(m * s.k), c(m * s.n);
      for (auto &x : a)
        x = dist(rng);
      const int reps = std::max(3 * copies, 9);
      double cpu_blas = 0, cpu_pack = 0;
      const double t_blas = Time(
          reps, copies,
          [&](int i) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, s.n, s.k, 1.0f, a.data(), s.k,
                        w[i].data(), s.n, 0.0f, c.data(), s.n);
          },
          &cpu_blas);
      const double t_pack = Time(
          reps, copies,
          [&](int i) { PackedGemm(m, a.data(), s.k, *packed[i], 1.0f, 0.0f, c.data(), s.n); },
          &cpu_pack);
      const double flops = 2.0 * m * s.k * s.n;
      std::printf("| %s | %lld | %.1f (%.1f) | %.1f (%.1f) | %.1f | %.2f |\n", s.name, (long long)m,
                  flops / t_blas / 1e9, flops / cpu_blas / 1e9, flops / t_pack / 1e9,
                  flops / cpu_pack / 1e9, wbytes / t_pack / 1e9, t_blas / t_pack);
      std::fflush(stdout);
    }
  }
  return 0;
}
