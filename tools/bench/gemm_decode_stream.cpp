// One decode step's products (one row of A; or M rows) on a Llama-1.1B
// layer's weight shapes, with the weight packed as f32 and as int8 with
// per-column scales (PackedGemm widening it to f32), and the int8 x int8
// product of a quantized row (QuantizeRows + Int8Gemm on the kI8x4 packing
// of --int8-activations plans): how fast each streams its weight. Each product reads a fresh
// copy of its weight (copies totalling more than the L3, cycled), so the
// rate is memory streaming as in a real decode step. Prints the median time
// and GB/s of weight read per shape, and the step's total weighted by the
// model's 22 layers (and one LM head). Build and run with
// tools/bench/gemm_decode_stream.sh [threads] [GB of weight copies] [rows].
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/products_int8_gemm.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

using namespace kiln::kernels;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Shape {
  int64_t k, n;
  int per_step; // how many a decode step reads
  const char *name;
};

// The three ways a step reads a weight.
enum Kind { kF32, kI8, kI8x4 };

// Copies of one weight, packed as `kind`.
std::vector<std::unique_ptr<PackedMatrix>> Copies(const Shape &s, Kind kind, int copies,
                                                  std::mt19937 &rng) {
  std::vector<std::unique_ptr<PackedMatrix>> out;
  std::vector<float> scale(s.n, 0.01f);
  for (int c = 0; c < copies; ++c) {
    if (kind != kF32) {
      std::vector<int8_t> q(s.k * s.n);
      for (auto &x : q)
        x = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      out.push_back(kind == kI8 ? PackedMatrix::PackI8(q.data(), scale.data(), s.k, s.n, s.n)
                                : PackedMatrix::PackI8x4(q.data(), scale.data(), s.k, s.n, s.n));
    } else {
      std::vector<float> w(s.k * s.n);
      for (auto &x : w)
        x = static_cast<float>(rng() % 2001) * 1e-3f - 1.0f;
      out.push_back(PackedMatrix::Pack(w.data(), s.k, s.n, s.n, false));
    }
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const double budget = argc > 2 ? std::atof(argv[2]) * 1e9 : 1.2e9;
  const int64_t m = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  // "avx2": the int8 x int8 column through Int8GemmAvx2 (the path of CPUs
  // without VNNI) instead of Int8Gemm's choice for this CPU.
  const bool avx2 = argc > 4 && std::strcmp(argv[4], "avx2") == 0;
  SetGemmThreads(threads);
  const Shape shapes[] = {{2048, 2560, 22, "qkv 2048x2560"},
                          {2048, 2048, 22, "o 2048x2048"},
                          {2048, 11264, 22, "gate_up 2048x11264"},
                          {5632, 2048, 22, "down 5632x2048"},
                          {2048, 32000, 1, "lm_head 2048x32000"}};
  const char *names[] = {"f32", "int8 (widened)", "int8 x int8"};
  std::mt19937 rng(1);
  double step_s[3] = {0, 0, 0}, step_bytes[3] = {0, 0, 0};
  std::printf("threads %d; %lld row(s) of A, median of the runs; int8 x int8 by %s\n"
              "| weight K x N | f32 ms | f32 GB/s | int8 ms | int8 GB/s | int8 x int8 ms | "
              "int8 x int8 GB/s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
              threads, static_cast<long long>(m), avx2 ? "Int8GemmAvx2" : "Int8Gemm");
  for (const Shape &s : shapes) {
    double ms[3], gbs[3];
    for (int kind = 0; kind < 3; ++kind) {
      const double bytes = double(s.k) * s.n * (kind == kF32 ? 4 : 1);
      const int copies = std::max(2, int(budget / bytes));
      auto packed = Copies(s, Kind(kind), copies, rng);
      if (packed.back() == nullptr) {
        std::fprintf(stderr, "out of memory packing %s\n", s.name);
        return 1;
      }
      std::vector<float> a(m * s.k, 0.5f), c(m * s.n), a_scale(m);
      std::vector<uint8_t> aq(m * QuantizedDepth(s.k));
      std::vector<double> t;
      for (int r = 0; r < 3 * copies + 6; ++r) {
        const double t0 = Now();
        const PackedMatrix &b = *packed[r % copies];
        if (kind == kI8x4) {
          QuantizeRows(a.data(), m, s.k, s.k, aq.data(), a_scale.data());
          if (avx2)
            Int8GemmAvx2(m, aq.data(), a_scale.data(), b, c.data(), s.n);
          else
            Int8Gemm(m, aq.data(), a_scale.data(), b, c.data(), s.n);
        } else {
          PackedGemm(m, a.data(), s.k, b, 1.0f, 0.0f, c.data(), s.n);
        }
        t.push_back(Now() - t0);
      }
      std::sort(t.begin(), t.end());
      const double med = t[t.size() / 2];
      ms[kind] = med * 1e3;
      gbs[kind] = bytes / med / 1e9;
      step_s[kind] += med * s.per_step;
      step_bytes[kind] += bytes * s.per_step;
    }
    std::printf("| %s | %.3f | %.1f | %.3f | %.1f | %.3f | %.1f |\n", s.name, ms[0], gbs[0], ms[1],
                gbs[1], ms[2], gbs[2]);
  }
  for (int kind = 0; kind < 3; ++kind)
    std::printf("a step's products, %s: %.1f ms (%.1f GB/s)\n", names[kind], step_s[kind] * 1e3,
                step_bytes[kind] / step_s[kind] / 1e9);
  return 0;
}
