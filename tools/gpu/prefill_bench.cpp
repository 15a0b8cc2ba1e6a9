// kiln_prefill_bench: times the pieces of a 1024-token prefill at the
// Llama-3-8B shape on one GPU (issue 12), each checked before it is timed:
//   - paged attention of the prompt (32 query heads, 8 KV heads, D 128,
//     bf16, blocks of 16): the tensor-core prefill kernel (attention_mma.h)
//     against the split-key kernel (kernels/cuda/attention_paged.h) and a double
//     reference on sampled rows;
//   - bf16 GEMMs [1024, 4096] x [4096, N] (and the MLP's down projection,
//     and the lm_head over every row, though a prefill samples only the
//     last) through kiln's LtGemm against direct cuBLASLt calls with a 32 MiB
//     workspace (the same layout with the heuristic's first choice and with
//     the fastest of its first eight, and the weight stored transposed),
//     and a double reference on sampled elements; LtGemm's first call
//     (plan, heuristic, module load) is timed on its own;
//   - gated_mlp's gate/up product into f32 scratch plus its SiLU gate,
//     against the same product written in bf16;
//   - rotary over [1, 32, 1024, 128] bf16 against a double reference.
// Exits 1 on any mismatch or CUDA error; prints one table per part.
//
// usage: kiln_prefill_bench [--iters N] (default 20)
#include "backends/cuda/gemm_lt.h"
#include "kernels/cuda/pointwise_activation.h"
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_paged.h"
#include "kernels/cuda/attention_rotary.h"
#include "tools/gpu/bench_util.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace kc = kiln::kernels::cuda;

namespace {

using kiln::bench::Check;
using kiln::bench::Fail;
void Check(cublasStatus_t st, const char *what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    Fail(std::string(what) + ": cuBLASLt status " + std::to_string(static_cast<int>(st)));
}
void Check(const kiln::Status &st, const char *what) {
  if (!st.ok())
    Fail(std::string(what) + ": " + st.message());
}

float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

// A device buffer of bf16 values, with its host copy.
struct Buffer {
  std::vector<__nv_bfloat16> host;
  void *dev = nullptr;
  explicit Buffer(size_t n) : host(n) { Check(cudaMalloc(&dev, n * 2 + 16), "cudaMalloc"); }
  ~Buffer() { cudaFree(dev); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void Random(std::mt19937 &rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (auto &v : host)
      v = __float2bfloat16(u(rng));
    Check(cudaMemcpy(dev, host.data(), host.size() * 2, cudaMemcpyHostToDevice), "upload");
  }
  std::vector<float> Download() const {
    std::vector<__nv_bfloat16> h(host.size());
    Check(cudaMemcpy(h.data(), dev, h.size() * 2, cudaMemcpyDeviceToHost), "download");
    std::vector<float> f(h.size());
    for (size_t i = 0; i < h.size(); ++i)
      f[i] = ToFloat(h[i]);
    return f;
  }
};

// Mean microseconds of fn over `iters` calls on `stream`, after two warm-ups.
double TimeUs(cudaStream_t stream, int iters, const std::function<void()> &fn) {
  fn();
  fn();
  cudaEvent_t a, b;
  Check(cudaEventCreate(&a), "cudaEventCreate");
  Check(cudaEventCreate(&b), "cudaEventCreate");
  Check(cudaEventRecord(a, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i)
    fn();
  Check(cudaEventRecord(b, stream), "cudaEventRecord");
  Check(cudaEventSynchronize(b), "cudaEventSynchronize");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1e3 * ms / iters;
}

// max |got - want| / max |want| over the pairs given.
double RelErr(const std::vector<double> &got, const std::vector<double> &want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    ref = std::max(ref, std::fabs(want[i]));
  }
  return err / std::max(ref, 1e-30);
}

void Expect(double err, double tol, const std::string &what) {
  std::printf("  check %-46s rel err %.2e (max %.1e)\n", what.c_str(), err, tol);
  if (!(err <= tol))
    Fail("mismatch: " + what);
}

// ---- attention -------------------------------------------------------------

void BenchAttention(cudaStream_t stream, int iters) {
  const int64_t t = 1024, hq = 32, hkv = 8, d = 128, bs = 16, nb = t / bs + 8;
  std::mt19937 rng(7);
  Buffer q(hq * t * d), k_new(hkv * t * d), v_new(hkv * t * d), k_cache(nb * hkv * bs * d),
      v_cache(nb * hkv * bs * d), out_old(hq * t * d), out_new(hq * t * d);
  q.Random(rng, -2, 2);
  k_new.Random(rng, -2, 2);
  v_new.Random(rng, -2, 2);
  // One sequence over shuffled blocks: slots, query_start, context, table.
  std::vector<int64_t> blocks(nb);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  const int64_t mb = t / bs;
  std::vector<int64_t> slots(t), index(3 + mb); // query_start, context, table
  for (int64_t i = 0; i < t; ++i)
    slots[i] = blocks[i / bs] * bs + i % bs;
  index[0] = 0;
  index[1] = t; // query_start
  index[2] = t; // context_lens
  for (int64_t j = 0; j < mb; ++j)
    index[3 + j] = blocks[j];
  int64_t *dev_idx = nullptr;
  Check(cudaMalloc(reinterpret_cast<void **>(&dev_idx), (t + index.size()) * sizeof(int64_t)),
        "cudaMalloc");
  Check(cudaMemcpy(dev_idx, slots.data(), t * 8, cudaMemcpyHostToDevice), "upload");
  Check(cudaMemcpy(dev_idx + t, index.data(), index.size() * 8, cudaMemcpyHostToDevice), "upload");
  const kc::PagedIndexArrays idx = {dev_idx, dev_idx + t, dev_idx + t + 2, dev_idx + t + 3};
  kc::PagedDims dims;
  dims.q_heads = hq;
  dims.kv_heads = hkv;
  dims.tokens = t;
  dims.head_dim = dims.v_dim = d;
  dims.num_blocks = nb;
  dims.block_size = bs;
  dims.num_seqs = 1;
  dims.max_blocks = mb;
  // Head-major [1, H, T, D] rows, as PrefillStrides below say (the strides
  // came with the token-major layout; without them the split-key kernel
  // read every head's rows at token 0).
  dims.q_head_stride = dims.kv_head_stride = t;
  dims.q_token_stride = dims.kv_token_stride = 1;
  kc::PagedTensors pt{q.dev, k_new.dev, v_new.dev, k_cache.dev, v_cache.dev, out_old.dev};
  const kc::PrefillTensors ft{q.dev, k_cache.dev, v_cache.dev, out_new.dev};
  const kc::PrefillStrides st{d, t * d, d, t * d};
  if (!kc::PrefillAttentionSupported(kc::FusedFloat::kBF16, dims, ft, st) ||
      !kc::PrefillAttentionPreferred(dims))
    Fail("the prefill kernel does not take the benchmark's shape");
  const int64_t old_scratch = kc::PagedAttentionScratchBytes(dims);
  const int64_t new_scratch = kc::PrefillAttentionScratchBytes(dims);
  void *scratch = nullptr;
  Check(cudaMalloc(&scratch, std::max(old_scratch, new_scratch)), "cudaMalloc");
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const auto run_old = [&] {
    Check(kc::PagedAttention(kc::FusedFloat::kBF16, pt, idx, dims, scale, scratch, stream),
          "PagedAttention");
  };
  const auto run_store = [&] {
    Check(kc::PagedStore(kc::FusedFloat::kBF16, pt, idx, dims, stream), "PagedStore");
  };
  const auto run_new = [&] {
    Check(kc::PrefillAttention(kc::FusedFloat::kBF16, ft, idx, dims, st, scale, scratch, stream),
          "PrefillAttention");
  };
  run_old();
  run_new();
  Check(cudaStreamSynchronize(stream), "attention");

  // Checks: the two kernels everywhere, each against double on 64 rows.
  const std::vector<float> a = out_old.Download(), b = out_new.Download();
  std::vector<double> da(a.begin(), a.end()), db(b.begin(), b.end());
  Expect(RelErr(db, da), 2e-2, "prefill kernel vs split-key kernel (all)");
  std::vector<double> ref, got_old, got_new;
  std::uniform_int_distribution<int64_t> pick_t(0, t - 1), pick_h(0, hq - 1);
  for (int s = 0; s < 64; ++s) {
    const int64_t tt = s == 0   ? 0
                       : s == 1 ? t - 1
                                : pick_t(rng),
                  h = pick_h(rng), g = h / (hq / hkv);
    std::vector<double> w(tt + 1);
    double mx = -INFINITY;
    for (int64_t j = 0; j <= tt; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < d; ++e)
        dot += double(ToFloat(q.host[(h * t + tt) * d + e])) *
               ToFloat(k_new.host[(g * t + j) * d + e]);
      w[j] = dot * scale;
      mx = std::max(mx, w[j]);
    }
    double sum = 0;
    for (double &x : w)
      sum += (x = std::exp(x - mx));
    for (int64_t e = 0; e < d; ++e) {
      double acc = 0;
      for (int64_t j = 0; j <= tt; ++j)
        acc += w[j] * ToFloat(v_new.host[(g * t + j) * d + e]);
      ref.push_back(acc / sum);
      got_old.push_back(a[(h * t + tt) * d + e]);
      got_new.push_back(b[(h * t + tt) * d + e]);
    }
  }
  Expect(RelErr(got_old, ref), 2e-2, "split-key kernel vs double (64 rows)");
  Expect(RelErr(got_new, ref), 2e-2, "prefill kernel vs double (64 rows)");

  const double store_us = TimeUs(stream, iters, run_store);
  const double old_us = TimeUs(stream, iters, run_old);
  const double new_us = TimeUs(stream, iters, [&] {
    run_store();
    run_new();
  });
  // Causal: query i meets i + 1 keys; 2 FLOP per multiply-add, Q K^T and P V.
  const double flop = 4.0 * hq * d * (t * (t + 1) / 2.0);
  std::printf("\nprefill attention: T %lld, Hq %lld, Hkv %lld, D %lld, bf16, block %lld; "
              "%.2f GFLOP (causal half)\n",
              (long long)t, (long long)hq, (long long)hkv, (long long)d, (long long)bs,
              flop * 1e-9);
  std::printf("| kernel | us per call | TFLOP/s |\n| --- | ---: | ---: |\n");
  std::printf("| KV store alone | %.1f | |\n", store_us);
  std::printf("| store + split-key kernel (old) | %.1f | %.1f |\n", old_us, flop / old_us * 1e-6);
  std::printf("| store + tensor-core prefill (new) | %.1f | %.1f |\n", new_us,
              flop / new_us * 1e-6);
  std::printf("| tensor-core prefill alone | %.1f | %.1f |\n", new_us - store_us,
              flop / (new_us - store_us) * 1e-6);
  cudaFree(scratch);
  cudaFree(dev_idx);
}

// ---- GEMM ------------------------------------------------------------------

// Direct cuBLASLt: D^T [N, M] = W^T X^T in column-major terms, with W
// stored [K, N] (kiln's layout, "NN") or [N, K] ("TN", as torch stores
// linear weights).
struct DirectGemm {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;

  DirectGemm(cublasLtHandle_t h, int64_t m, int64_t n, int64_t k, bool w_nk, size_t workspace) {
    Check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const int32_t ta = w_nk ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    Check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "ta");
    Check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "tb");
    Check(w_nk ? cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k)
               : cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n),
          "layout a");
    Check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k), "layout b");
    Check(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n), "layout d");
    cublasLtMatmulPreference_t pref;
    Check(cublasLtMatmulPreferenceCreate(&pref), "pref");
    const uint64_t ws = workspace;
    Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                               sizeof ws),
          "pref ws");
    algos.resize(8);
    int count = 0;
    Check(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 8, algos.data(), &count),
          "heuristic");
    algos.resize(count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (count == 0)
      Fail("cuBLASLt has no algorithm for the direct GEMM");
  }
  ~DirectGemm() {
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(op);
  }
  void Run(cublasLtHandle_t h, size_t algo, const void *x, const void *w, void *y, void *ws,
           size_t ws_bytes, cudaStream_t stream) const {
    const float alpha = 1, beta = 0;
    Check(cublasLtMatmul(h, op, &alpha, w, la, x, lb, &beta, y, ld, y, ld, &algos[algo].algo, ws,
                         ws_bytes, stream),
          "cublasLtMatmul");
  }
};

void BenchGemms(cudaStream_t stream, cublasLtHandle_t handle, void *workspace, size_t ws_bytes,
                int iters) {
  struct Shape {
    const char *name;
    int64_t k, n;
  };
  const Shape shapes[] = {{"qkv", 4096, 6144},      {"o_proj", 4096, 4096},
                          {"gate_up", 4096, 28672}, {"14336 wide", 4096, 14336},
                          {"down", 14336, 4096},    {"lm_head, every row", 4096, 128256}};
  const int64_t m = 1024;
  kiln::ExecContext ctx;
  ctx.stream = stream;
  ctx.blas = handle;
  ctx.workspace = {workspace, ws_bytes};
  std::mt19937 rng(11);
  std::printf("\nbf16 GEMM, M = %lld rows, f32 accumulation, 32 MiB workspace\n", (long long)m);
  std::printf("| product | K | N | LtGemm first call us | LtGemm us | TFLOP/s | direct (heuristic "
              "#1) us | direct best of %s us | direct, W stored [N, K] us | TFLOP/s best |\n",
              "8");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Shape &s : shapes) {
    Buffer x(m * s.k), w(s.k * s.n), wt(s.k * s.n), y_kiln(m * s.n), y_direct(m * s.n),
        y_t(m * s.n);
    x.Random(rng, -1, 1);
    w.Random(rng, -1, 1);
    for (int64_t i = 0; i < s.k; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        wt.host[j * s.k + i] = w.host[i * s.n + j];
    Check(cudaMemcpy(wt.dev, wt.host.data(), wt.host.size() * 2, cudaMemcpyHostToDevice), "upload");
    kiln::cuda::LtGemmShape g;
    g.ab = g.d = kiln::DType::kBF16;
    g.m = m;
    g.n = s.n;
    g.k = s.k;
    g.lda = s.k;
    g.ldb = g.ldd = s.n;
    const auto run_kiln = [&] {
      Check(kiln::cuda::LtGemm(ctx, g, {x.dev, w.dev, y_kiln.dev}), "LtGemm");
    };
    const auto t0 = std::chrono::steady_clock::now();
    run_kiln();
    Check(cudaStreamSynchronize(stream), "LtGemm");
    const double first_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    DirectGemm nn(handle, m, s.n, s.k, false, ws_bytes), tn(handle, m, s.n, s.k, true, ws_bytes);
    nn.Run(handle, 0, x.dev, w.dev, y_direct.dev, workspace, ws_bytes, stream);
    tn.Run(handle, 0, x.dev, wt.dev, y_t.dev, workspace, ws_bytes, stream);
    Check(cudaStreamSynchronize(stream), "direct GEMM");

    // Checks: kiln against both direct results everywhere, and all three
    // against double on 256 sampled elements.
    const std::vector<float> yk = y_kiln.Download(), yd = y_direct.Download(), yt = y_t.Download();
    Expect(RelErr({yk.begin(), yk.end()}, {yd.begin(), yd.end()}), 1e-2,
           std::string(s.name) + ": LtGemm vs direct");
    Expect(RelErr({yt.begin(), yt.end()}, {yd.begin(), yd.end()}), 1e-2,
           std::string(s.name) + ": W [N, K] vs direct");
    std::vector<double> ref, gk, gd;
    std::uniform_int_distribution<int64_t> pi(0, m - 1), pj(0, s.n - 1);
    for (int r = 0; r < 256; ++r) {
      const int64_t i = pi(rng), j = pj(rng);
      double acc = 0;
      for (int64_t e = 0; e < s.k; ++e)
        acc += double(ToFloat(x.host[i * s.k + e])) * ToFloat(w.host[e * s.n + j]);
      ref.push_back(acc);
      gk.push_back(yk[i * s.n + j]);
      gd.push_back(yd[i * s.n + j]);
    }
    Expect(RelErr(gk, ref), 1e-2, std::string(s.name) + ": LtGemm vs double");
    Expect(RelErr(gd, ref), 1e-2, std::string(s.name) + ": direct vs double");

    const double kiln_us = TimeUs(stream, iters, run_kiln);
    const double first_algo_us = TimeUs(stream, iters, [&] {
      nn.Run(handle, 0, x.dev, w.dev, y_direct.dev, workspace, ws_bytes, stream);
    });
    double best_us = first_algo_us;
    for (size_t a = 1; a < nn.algos.size(); ++a)
      best_us =
          std::min(best_us, TimeUs(stream, iters, [&] {
                     nn.Run(handle, a, x.dev, w.dev, y_direct.dev, workspace, ws_bytes, stream);
                   }));
    double tn_us = 1e30;
    for (size_t a = 0; a < tn.algos.size(); ++a)
      tn_us = std::min(tn_us, TimeUs(stream, iters, [&] {
                         tn.Run(handle, a, x.dev, wt.dev, y_t.dev, workspace, ws_bytes, stream);
                       }));
    const double flop = 2.0 * m * s.n * s.k;
    std::printf("| %s | %lld | %lld | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f | %.0f |\n", s.name,
                (long long)s.k, (long long)s.n, first_us, kiln_us, flop / kiln_us * 1e-6,
                first_algo_us, best_us, tn_us, flop / std::min(best_us, tn_us) * 1e-6);
  }
}

// gated_mlp's first half at M = 1024 as the CUDA backend runs it: the
// gate/up product into f32 scratch, then act(gate) * up into bf16; beside
// the same product written in bf16 (what a half scratch would cost).
void BenchGatedScratch(cudaStream_t stream, cublasLtHandle_t handle, void *workspace,
                       size_t ws_bytes, int iters) {
  const int64_t m = 1024, k = 4096, f = 14336;
  std::mt19937 rng(13);
  Buffer x(m * k), w(k * 2 * f), h_half(m * 2 * f), g(m * f);
  x.Random(rng, -1, 1);
  w.Random(rng, -1, 1);
  float *h = nullptr;
  Check(cudaMalloc(reinterpret_cast<void **>(&h), m * 2 * f * sizeof(float)), "cudaMalloc");
  kiln::ExecContext ctx;
  ctx.stream = stream;
  ctx.blas = handle;
  ctx.workspace = {workspace, ws_bytes};
  kiln::cuda::LtGemmShape up;
  up.ab = kiln::DType::kBF16;
  up.d = kiln::DType::kF32;
  up.m = m;
  up.n = 2 * f;
  up.k = k;
  up.lda = k;
  up.ldb = up.ldd = 2 * f;
  kiln::cuda::LtGemmShape up_half = up;
  up_half.d = kiln::DType::kBF16;
  const double f32_us = TimeUs(stream, iters, [&] {
    Check(kiln::cuda::LtGemm(ctx, up, {x.dev, w.dev, h}), "LtGemm f32");
  });
  const double act_us = TimeUs(stream, iters, [&] {
    Check(kc::GatedActivation(kc::Activation::kSilu, h, g.dev, kc::FloatElem::kBF16, m, f, stream),
          "GatedActivation");
  });
  const double half_us = TimeUs(stream, iters, [&] {
    Check(kiln::cuda::LtGemm(ctx, up_half, {x.dev, w.dev, h_half.dev}), "LtGemm bf16");
  });
  std::printf("\ngated_mlp gate/up at M %lld, F %lld: product into f32 %.1f us + SiLU gate %.1f "
              "us; the product into bf16 %.1f us\n",
              (long long)m, (long long)f, f32_us, act_us, half_us);
  cudaFree(h);
}

// ---- rotary ----------------------------------------------------------------

void BenchRotary(cudaStream_t stream, int iters) {
  const int64_t h = 32, t = 1024, d = 128;
  std::mt19937 rng(5);
  Buffer x(h * t * d), cos(t * d), sin(t * d), y(h * t * d);
  x.Random(rng, -2, 2);
  cos.Random(rng, -1, 1);
  sin.Random(rng, -1, 1);
  kc::RotaryLayout l;
  l.lead_rank = 2;
  l.lead[0] = h;
  l.lead[1] = t;
  l.dim = l.rotary_dim = d;
  kc::RotaryTable tc, ts;
  tc.data = cos.dev;
  ts.data = sin.dev;
  tc.type = ts.type = kc::FusedFloat::kBF16;
  tc.strides[0] = ts.strides[0] = 0;
  tc.strides[1] = ts.strides[1] = d;
  const auto run = [&] {
    Check(kc::Rotary(kc::FusedFloat::kBF16, x.dev, tc, ts, y.dev, l, stream), "Rotary");
  };
  run();
  Check(cudaStreamSynchronize(stream), "Rotary");
  const std::vector<float> got = y.Download();
  std::vector<double> g(got.begin(), got.end()), want(got.size());
  for (int64_t r = 0; r < h * t; ++r)
    for (int64_t c = 0; c < d; ++c) {
      const int64_t p = c < d / 2 ? c + d / 2 : c - d / 2, row = (r % t) * d;
      const double xv = ToFloat(x.host[r * d + c]), pv = ToFloat(x.host[r * d + p]);
      const double cv = ToFloat(cos.host[row + c]), sv = ToFloat(sin.host[row + c]);
      want[r * d + c] = c < d / 2 ? xv * cv - pv * sv : xv * cv + pv * sv;
    }
  Expect(RelErr(g, want), 1e-2, "rotary vs double");
  const double us = TimeUs(stream, iters, run);
  const double bytes = 2.0 * (2 * h * t * d + 2 * t * d);
  std::printf("\nrotary [1, %lld, %lld, %lld] bf16: %.1f us per call, %.0f GB/s\n", (long long)h,
              (long long)t, (long long)d, us, bytes / us * 1e-3);
}

} // namespace

int main(int argc, char **argv) {
  const int iters = kiln::bench::ParseIters(argc, argv, "kiln_prefill_bench", 20);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    Fail("no CUDA device");
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("kiln_prefill_bench --iters %d on %s (%d SMs)\n", iters, prop.name,
              prop.multiProcessorCount);
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasLtHandle_t handle;
  Check(cublasLtCreate(&handle), "cublasLtCreate");
  const size_t ws_bytes = 32u << 20;
  void *workspace = nullptr;
  Check(cudaMalloc(&workspace, ws_bytes), "cudaMalloc");
  BenchAttention(stream, iters);
  BenchRotary(stream, iters);
  BenchGemms(stream, handle, workspace, ws_bytes, iters);
  BenchGatedScratch(stream, handle, workspace, ws_bytes, iters);
  cudaFree(workspace);
  cublasLtDestroy(handle);
  cudaStreamDestroy(stream);
  return 0;
}
