// kiln_gemv_bench: kiln's GEMV (kernels/cuda/products_gemv.h) against cuBLASLt (the
// backend's gemm_lt path, as the product ops call it) on the decode shapes
// of a Llama-3-8B-shaped bf16 plan, timed with CUDA events. Prints one table:
// microseconds per product, GB/s of weight bytes read, and that as a
// fraction of the H200's measured 4,276 GB/s copy rate.
//
// Each product is first checked against a plain reference kernel (one
// thread per result, f32 sums); a mismatch ends the program with exit code
// 1, so it never reports a fast wrong kernel. The timed loop cycles through
// enough copies of the weight to exceed the L2 cache, so every run reads
// the weights from HBM as a decode step does.
//
// usage: kiln_gemv_bench [--iters N] (default 50)
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/gemm_lt.h"
#include "kernels/cuda/pointwise_activation.h"
#include "kernels/cuda/products_gemv.h"
#include "tools/gpu/bench_util.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using kiln::kernels::cuda::Activation;
using kiln::kernels::cuda::FloatElem;
using kiln::kernels::cuda::GemvArgs;

constexpr double kCopyGBs = 4276.0;             // the H200's device copy rate (docs/benchmarks.md)
constexpr uint64_t kRotateBytes = 512ull << 20; // weights cycled through: well past L2

using kiln::bench::Check;
[[noreturn]] void Die(const std::string &what) { kiln::bench::Fail(what); }

void Check(const kiln::Status &st, const char *what) {
  if (!st.ok())
    Die(std::string(what) + ": " + st.message());
}

// Uniform values in [-scale, scale) from a hash of the index.
__global__ void FillKernel(__nv_bfloat16 *p, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9e3779b1u ^ seed ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    p[i] = __float2bfloat16_rn((static_cast<float>(h >> 8) / 8388608.0f - 1.0f) * scale);
  }
}

// The reference: one thread per result. gated: act = SiLU of the sum over
// column c, times the sum over column n + c.
__global__ void ReferenceKernel(const __nv_bfloat16 *x, const __nv_bfloat16 *w, float *y, int64_t m,
                                int64_t k, int64_t n, int64_t ldw, bool gated) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= m * n)
    return;
  const int64_t r = i / n, c = i % n;
  float a = 0.0f, b = 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    const float xv = __bfloat162float(x[r * k + j]);
    a += xv * __bfloat162float(w[j * ldw + c]);
    if (gated)
      b += xv * __bfloat162float(w[j * ldw + n + c]);
  }
  y[i] = gated ? a / (1.0f + expf(-a)) * b : a;
}

struct Shape {
  const char *name;
  int64_t k, n; // W [k, n]; gated: n = 2F columns, F results
  bool gated;
};

struct Buffers {
  __nv_bfloat16 *x = nullptr;
  std::vector<__nv_bfloat16 *> w; // copies of W, cycled through
  __nv_bfloat16 *y = nullptr;
  float *acc = nullptr; // cuBLASLt's f32 gate/up product
  float *ref = nullptr;
};

void Free(Buffers &b) {
  cudaFree(b.x);
  for (auto *p : b.w)
    cudaFree(p);
  cudaFree(b.y);
  cudaFree(b.acc);
  cudaFree(b.ref);
  b = Buffers();
}

// The product as each path runs it: kiln's one GEMV, or cuBLASLt (with the
// activation kernel after it for the gated product, as RunGatedMlp does).
void RunKiln(const Buffers &b, int copy, int64_t m, const Shape &s, cudaStream_t stream) {
  GemvArgs a;
  a.t = FloatElem::kBF16;
  a.m = m;
  a.n = s.gated ? s.n / 2 : s.n;
  a.k = s.k;
  a.x = b.x;
  a.ldx = s.k;
  a.w = b.w[copy];
  a.ldw = s.n;
  a.y = b.y;
  a.ldy = a.n;
  a.gated = s.gated;
  a.act = s.gated ? Activation::kSilu : Activation::kNone;
  Check(kiln::kernels::cuda::Gemv(a, stream), "kiln GEMV");
}

void RunLt(kiln::ExecContext &ctx, const Buffers &b, int copy, int64_t m, const Shape &s) {
  kiln::cuda::LtGemmShape g;
  g.ab = kiln::DType::kBF16;
  g.d = s.gated ? kiln::DType::kF32 : kiln::DType::kBF16;
  g.m = m;
  g.n = s.n;
  g.k = s.k;
  g.lda = s.k;
  g.ldb = g.ldd = s.n;
  void *d = s.gated ? static_cast<void *>(b.acc) : static_cast<void *>(b.y);
  Check(kiln::cuda::LtGemm(ctx, g, {b.x, b.w[copy], d}), "cuBLASLt");
  if (s.gated)
    Check(kiln::kernels::cuda::GatedActivation(Activation::kSilu, b.acc, b.y, FloatElem::kBF16, m,
                                               s.n / 2, kiln::cuda::Stream(ctx)),
          "gated activation");
}

// Compares y (bf16) with the reference: each result within bf16's rounding
// of itself plus a small share of the largest result.
void Verify(const Buffers &b, int64_t m, const Shape &s, const char *path) {
  const int64_t outs = m * (s.gated ? s.n / 2 : s.n);
  std::vector<__nv_bfloat16> got(outs);
  std::vector<float> want(outs);
  Check(cudaDeviceSynchronize(), path);
  Check(cudaMemcpy(got.data(), b.y, outs * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost), "copy");
  Check(cudaMemcpy(want.data(), b.ref, outs * sizeof(float), cudaMemcpyDeviceToHost), "copy");
  double peak = 0;
  for (float v : want)
    peak = std::max(peak, static_cast<double>(std::fabs(v)));
  for (int64_t i = 0; i < outs; ++i) {
    const double g = __bfloat162float(got[i]), w = want[i];
    if (!(std::fabs(g - w) <= std::fabs(w) / 128 + 2e-3 * peak))
      Die(std::string(path) + " is wrong on " + s.name + " at M=" + std::to_string(m) +
          ": result " + std::to_string(i) + " is " + std::to_string(g) + ", the reference " +
          std::to_string(w) + " (largest " + std::to_string(peak) + ")");
  }
}

template <typename Fn> double TimeUs(Fn run, int copies, int iters, cudaStream_t stream) {
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "event");
  Check(cudaEventCreate(&stop), "event");
  for (int i = 0; i < copies; ++i) // warm-up: one pass over every copy
    run(i);
  Check(cudaEventRecord(start, stream), "event");
  for (int i = 0; i < iters; ++i)
    run(i % copies);
  Check(cudaEventRecord(stop, stream), "event");
  Check(cudaEventSynchronize(stop), "event");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, start, stop), "event");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms / iters;
}

} // namespace

int main(int argc, char **argv) {
  const int iters = kiln::bench::ParseIters(argc, argv, "kiln_gemv_bench", 50);
  auto backend = kiln::cuda::CreateCudaBackend(0);
  if (!backend.ok())
    Die(backend.status().message());
  kiln::ExecContext &ctx = (*backend)->context();
  const cudaStream_t stream = kiln::cuda::Stream(ctx);
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "device properties");

  const Shape shapes[] = {{"qkv", 4096, 6144, false},
                          {"o_proj", 4096, 4096, false},
                          {"gate_up+act", 4096, 28672, true},
                          {"down", 14336, 4096, false},
                          {"lm_head", 4096, 128256, false}};
  std::printf("# kiln_gemv_bench --iters %d on %s (%d SMs), bf16, fractions of %.0f GB/s\n", iters,
              prop.name, prop.multiProcessorCount, kCopyGBs);
  std::printf("%-12s %3s %6s %7s | %9s %8s %6s | %9s %8s %6s | %7s\n", "shape", "M", "K", "N",
              "kiln us", "GB/s", "frac", "Lt us", "GB/s", "frac", "speedup");
  for (const Shape &s : shapes) {
    const uint64_t w_bytes = static_cast<uint64_t>(s.k * s.n) * sizeof(__nv_bfloat16);
    const int copies = static_cast<int>(std::max<uint64_t>(1, kRotateBytes / w_bytes + 1));
    Buffers b;
    const int64_t max_m = 16, outs = max_m * s.n;
    Check(cudaMalloc(&b.x, max_m * s.k * sizeof(__nv_bfloat16)), "cudaMalloc");
    Check(cudaMalloc(&b.y, outs * sizeof(__nv_bfloat16)), "cudaMalloc");
    Check(cudaMalloc(&b.acc, outs * sizeof(float)), "cudaMalloc");
    Check(cudaMalloc(&b.ref, outs * sizeof(float)), "cudaMalloc");
    FillKernel<<<1024, 256, 0, stream>>>(b.x, max_m * s.k, 1u, 1.0f);
    for (int c = 0; c < copies; ++c) {
      __nv_bfloat16 *w = nullptr;
      Check(cudaMalloc(&w, w_bytes), "cudaMalloc");
      b.w.push_back(w);
      // Every copy holds the same values, so any copy's result is checked.
      FillKernel<<<4096, 256, 0, stream>>>(w, s.k * s.n, 7u, 0.05f);
    }
    Check(cudaGetLastError(), "fill");
    for (int64_t m : {1, 4, 16}) {
      const int64_t n_out = s.gated ? s.n / 2 : s.n;
      ReferenceKernel<<<static_cast<unsigned>((m * n_out + 255) / 256), 256, 0, stream>>>(
          b.x, b.w[0], b.ref, m, s.k, n_out, s.n, s.gated);
      Check(cudaGetLastError(), "reference");
      RunKiln(b, copies - 1, m, s, stream);
      Verify(b, m, s, "kiln GEMV");
      RunLt(ctx, b, copies - 1, m, s);
      Verify(b, m, s, "cuBLASLt");
      const double kiln_us =
          TimeUs([&](int c) { RunKiln(b, c, m, s, stream); }, copies, iters, stream);
      const double lt_us = TimeUs([&](int c) { RunLt(ctx, b, c, m, s); }, copies, iters, stream);
      const double kiln_gbs = w_bytes / kiln_us / 1e3, lt_gbs = w_bytes / lt_us / 1e3;
      std::printf("%-12s %3lld %6lld %7lld | %9.2f %8.0f %6.3f | %9.2f %8.0f %6.3f | %7.2f\n",
                  s.name, static_cast<long long>(m), static_cast<long long>(s.k),
                  static_cast<long long>(s.n), kiln_us, kiln_gbs, kiln_gbs / kCopyGBs, lt_us,
                  lt_gbs, lt_gbs / kCopyGBs, lt_us / kiln_us);
    }
    Check(cudaDeviceSynchronize(), "products");
    Free(b);
  }
  return 0;
}
