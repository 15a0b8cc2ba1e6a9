// kiln_decode_bench: times a decode step's paged attention at the
// Llama-3-8B shape on one GPU (issue 12): 32 query heads over 8 KV heads,
// D 128, bf16, blocks of 16, the token-major layout the 8B plan uses, one
// new token a sequence, for a few batch sizes and contexts. Two paths, as
// the CUDA backend runs them (ops_attention.cpp):
//   - old: the split-key kernel (kernels/cuda/attention_paged.h), store included, or the
//     tensor-core prefill kernel after the store where the runtime would
//     prefer it (the path of KILN_DECODE_ATTENTION=0);
//   - new: the decode kernel (decode_attention.h, the default), store
//     included, in one launch or two with split keys.
// Each case checks both results against a double reference on sampled
// (sequence, head) rows before timing, and exits 1 on a mismatch. Times are
// per call, from a CUDA graph of --iters calls replayed (no launch gaps)
// and from as many eager launches.
//
// usage: kiln_decode_bench [--iters N] (default 50)
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_decode.h"
#include "kernels/cuda/attention_paged.h"
#include "tools/gpu/bench_util.h"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
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

constexpr int64_t kHq = 32, kHkv = 8, kD = 128, kBs = 16;

// A device buffer of n bf16 values, random in [-2, 2] (drawn from a pool of
// 2^16, at a random start and an odd stride, so gigabyte caches fill fast),
// with its host copy.
struct Bf16Buffer {
  std::vector<__nv_bfloat16> host;
  void *dev = nullptr;
  Bf16Buffer(size_t n, std::mt19937 &rng) : host(n) {
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<__nv_bfloat16> pool(1 << 16);
    for (auto &v : pool)
      v = __float2bfloat16(u(rng));
    const size_t start = rng(), stride = 2 * (rng() % 30000) + 1;
    for (size_t i = 0; i < n; ++i)
      host[i] = pool[(start + i * stride) & 0xffff];
    Check(cudaMalloc(&dev, n * 2 + 16), "cudaMalloc");
    Check(cudaMemcpy(dev, host.data(), n * 2, cudaMemcpyHostToDevice), "upload");
  }
  ~Bf16Buffer() { cudaFree(dev); }
  Bf16Buffer(const Bf16Buffer &) = delete;
  Bf16Buffer &operator=(const Bf16Buffer &) = delete;
  double At(size_t i) const { return __bfloat162float(host[i]); }
};

std::vector<float> Download(const void *dev, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  Check(cudaMemcpy(h.data(), dev, n * 2, cudaMemcpyDeviceToHost), "download");
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i)
    f[i] = __bfloat162float(h[i]);
  return f;
}

// Per-call microseconds of fn: eager (iters launches) and replayed from a
// graph that recorded iters calls.
struct Times {
  double eager_us, graph_us;
};
Times TimeCalls(cudaStream_t stream, int iters, const std::function<void()> &fn) {
  cudaEvent_t a, b;
  Check(cudaEventCreate(&a), "cudaEventCreate");
  Check(cudaEventCreate(&b), "cudaEventCreate");
  const auto measure = [&](const std::function<void()> &body) {
    body(); // warm-up
    Check(cudaEventRecord(a, stream), "cudaEventRecord");
    body();
    Check(cudaEventRecord(b, stream), "cudaEventRecord");
    Check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return 1e3 * ms / iters;
  };
  Times t{};
  t.eager_us = measure([&] {
    for (int i = 0; i < iters; ++i)
      fn();
  });
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  Check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "BeginCapture");
  for (int i = 0; i < iters; ++i)
    fn();
  Check(cudaStreamEndCapture(stream, &graph), "EndCapture");
  Check(cudaGraphInstantiate(&exec, graph, 0), "GraphInstantiate");
  t.graph_us = measure([&] { Check(cudaGraphLaunch(exec, stream), "GraphLaunch"); });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t;
}

// One decode step of `seqs` sequences of context `ctx` (the new token
// included), over shuffled cache blocks, with block tables `width` blocks
// wide (0: as wide as the context needs; the engine's decode steps pad them
// to a power of two, which sets the decode kernel's split count).
void BenchCase(cudaStream_t stream, int iters, int64_t seqs, int64_t ctx, int64_t width,
               const kc::DecodeSplitPolicy &policy) {
  std::mt19937 rng(static_cast<unsigned>(seqs * 7919 + ctx));
  const int64_t per_seq = (ctx + kBs - 1) / kBs, nb = seqs * per_seq + 1;
  const int64_t mb = std::max(width, per_seq);
  Bf16Buffer q(seqs * kHq * kD, rng), k_new(seqs * kHkv * kD, rng), v_new(seqs * kHkv * kD, rng),
      k_cache(nb * kHkv * kBs * kD, rng), v_cache(nb * kHkv * kBs * kD, rng);
  void *out_old = nullptr, *out_new = nullptr;
  Check(cudaMalloc(&out_old, seqs * kHq * kD * 2), "cudaMalloc");
  Check(cudaMalloc(&out_new, seqs * kHq * kD * 2), "cudaMalloc");
  std::vector<int64_t> blocks(nb);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  // Index arrays: slots [seqs], query_start [seqs + 1], context_lens
  // [seqs], block_tables [seqs, mb] (entries past the context: block 0).
  std::vector<int64_t> idx(seqs + (seqs + 1) + seqs + seqs * mb);
  int64_t *slots = idx.data(), *qs = slots + seqs, *cl = qs + seqs + 1, *bt = cl + seqs;
  for (int64_t s = 0; s < seqs; ++s) {
    for (int64_t j = 0; j < per_seq; ++j)
      bt[s * mb + j] = blocks[s * per_seq + j];
    slots[s] = bt[s * mb + (ctx - 1) / kBs] * kBs + (ctx - 1) % kBs;
    qs[s] = s;
    cl[s] = ctx;
  }
  qs[seqs] = seqs;
  int64_t *dev_idx = nullptr;
  Check(cudaMalloc(reinterpret_cast<void **>(&dev_idx), idx.size() * 8), "cudaMalloc");
  Check(cudaMemcpy(dev_idx, idx.data(), idx.size() * 8, cudaMemcpyHostToDevice), "upload");
  const int64_t off_qs = seqs, off_cl = off_qs + seqs + 1, off_bt = off_cl + seqs;
  const kc::PagedIndexArrays ia = {dev_idx, dev_idx + off_qs, dev_idx + off_cl, dev_idx + off_bt};
  kc::PagedDims d;
  d.q_heads = kHq;
  d.kv_heads = kHkv;
  d.tokens = seqs;
  d.head_dim = d.v_dim = kD;
  d.num_blocks = nb;
  d.block_size = kBs;
  d.num_seqs = seqs;
  d.max_blocks = mb;
  // Token-major ([1, T, H, D]): a head is the next row, a token H rows on.
  d.q_head_stride = 1;
  d.q_token_stride = kHq;
  d.kv_head_stride = 1;
  d.kv_token_stride = kHkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  kc::PagedTensors t_old{q.dev, k_new.dev, v_new.dev, k_cache.dev, v_cache.dev, out_old};
  kc::PagedTensors t_new = t_old;
  t_new.out = out_new;
  const kc::PrefillTensors pt{q.dev, k_cache.dev, v_cache.dev, out_old};
  const kc::PrefillStrides ps{d.q_token_stride * kD, d.q_head_stride * kD, d.q_token_stride * kD,
                              d.q_head_stride * kD};
  const bool prefill = kc::PrefillAttentionPreferred(d) &&
                       kc::PrefillAttentionSupported(kc::FusedFloat::kBF16, d, pt, ps);
  if (!kc::DecodeAttentionSupported(kc::FusedFloat::kBF16, d, t_new))
    Fail("the decode kernel does not take the benchmark's shape");
  const int64_t old_bytes =
      prefill ? kc::PrefillAttentionScratchBytes(d) : kc::PagedAttentionScratchBytes(d);
  const int64_t new_bytes = kc::DecodeAttentionScratchBytes(d, policy);
  void *scratch = nullptr;
  Check(cudaMalloc(&scratch, std::max<int64_t>({old_bytes, new_bytes, 256})), "cudaMalloc");
  const auto run_old = [&] {
    if (prefill) {
      Check(kc::PagedStore(kc::FusedFloat::kBF16, t_old, ia, d, stream), "PagedStore");
      Check(kc::PrefillAttention(kc::FusedFloat::kBF16, pt, ia, d, ps, scale, scratch, stream),
            "PrefillAttention");
    } else {
      Check(kc::PagedAttention(kc::FusedFloat::kBF16, t_old, ia, d, scale, scratch, stream),
            "PagedAttention");
    }
  };
  const auto run_new = [&] {
    Check(kc::DecodeAttention(kc::FusedFloat::kBF16, t_new, ia, d, scale,
                              kc::DecodeMode::kAllSequences, scratch, stream, policy),
          "DecodeAttention");
  };
  run_old();
  run_new();
  Check(cudaStreamSynchronize(stream), "attention");

  // Double reference on up to 16 (sequence, head) rows: keys 0..ctx-2 from
  // the cache as uploaded, key ctx-1 the new one.
  const std::vector<float> got_old = Download(out_old, seqs * kHq * kD),
                           got_new = Download(out_new, seqs * kHq * kD);
  double err_old = 0, err_new = 0, ref_max = 0;
  std::uniform_int_distribution<int64_t> pick_s(0, seqs - 1), pick_h(0, kHq - 1);
  for (int r = 0; r < 16; ++r) {
    const int64_t s = r == 0 ? 0 : pick_s(rng), h = pick_h(rng), g = h / (kHq / kHkv);
    const auto key = [&](const Bf16Buffer &cache, const Bf16Buffer &fresh, int64_t j, int64_t e) {
      if (j == ctx - 1)
        return fresh.At((s * kHkv + g) * kD + e);
      const int64_t blk = bt[s * mb + j / kBs];
      return cache.At(((blk * kHkv + g) * kBs + j % kBs) * kD + e);
    };
    std::vector<double> w(ctx);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < ctx; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < kD; ++e)
        dot += q.At((s * kHq + h) * kD + e) * key(k_cache, k_new, j, e);
      w[j] = dot * scale;
      mx = std::max(mx, w[j]);
    }
    for (double &x : w)
      sum += (x = std::exp(x - mx));
    for (int64_t e = 0; e < kD; ++e) {
      double acc = 0;
      for (int64_t j = 0; j < ctx; ++j)
        acc += w[j] * key(v_cache, v_new, j, e);
      acc /= sum;
      const size_t i = static_cast<size_t>((s * kHq + h) * kD + e);
      ref_max = std::max(ref_max, std::fabs(acc));
      err_old = std::max(err_old, std::fabs(got_old[i] - acc));
      err_new = std::max(err_new, std::fabs(got_new[i] - acc));
    }
  }
  err_old /= std::max(ref_max, 1e-30);
  err_new /= std::max(ref_max, 1e-30);
  if (!(err_old <= 2e-2) || !(err_new <= 2e-2))
    Fail("mismatch at " + std::to_string(seqs) + " sequences, context " + std::to_string(ctx) +
         ": old " + std::to_string(err_old) + ", new " + std::to_string(err_new));

  const Times old_t = TimeCalls(stream, iters, run_old);
  const Times new_t = TimeCalls(stream, iters, run_new);
  const double kv_mb = seqs * ctx * kHkv * kD * 2.0 * 2 / 1e6;
  std::printf("| %lld | %lld | %lld | %lld / %lld | %lld | %.1f | %s | %.1f | %.1f | %.1f | %.1f | "
              "%.2f | %.0f | "
              "%.1e / %.1e |\n",
              (long long)seqs, (long long)ctx, (long long)mb, (long long)policy.fill_blocks,
              (long long)policy.min_keys, (long long)kc::DecodeAttentionSplits(d, policy), kv_mb,
              prefill ? "prefill" : "split-key", old_t.graph_us, old_t.eager_us, new_t.graph_us,
              new_t.eager_us, new_t.graph_us / old_t.graph_us, kv_mb * 1e-3 / new_t.graph_us * 1e6,
              err_old, err_new);
  cudaFree(scratch);
  cudaFree(dev_idx);
  cudaFree(out_old);
  cudaFree(out_new);
}

} // namespace

int main(int argc, char **argv) {
  const int iters = kiln::bench::ParseIters(argc, argv, "kiln_decode_bench", 50);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    Fail("no CUDA device");
  cudaDeviceProp prop;
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("kiln_decode_bench --iters %d on %s (%d SMs): decode-step paged attention, "
              "Hq %lld, Hkv %lld, D %lld, bf16, blocks of %lld, token-major\n\n",
              iters, prop.name, prop.multiProcessorCount, (long long)kHq, (long long)kHkv,
              (long long)kD, (long long)kBs);
  std::printf("| seqs | context | table width | policy (fill / min keys) | splits (new) | KV MB "
              "| old kernel | old us (graph) | old us (eager) | new us (graph) | new us (eager) "
              "| new / old | new GB/s | rel err old / new |\n"
              "| ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: "
              "| ---: | --- |\n");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  // {sequences, context, table width}; a width of 128 pads the table as the
  // engine's decode steps do at these contexts.
  const int64_t cases[][3] = {{1, 64, 0},    {1, 1100, 0},   {1, 1100, 128},
                              {1, 4096, 0},  {8, 1100, 0},   {8, 1100, 128},
                              {32, 1100, 0}, {256, 1100, 0}, {256, 2048, 0}};
  for (const auto &c : cases)
    BenchCase(stream, iters, c[0], c[1], c[2], kc::DecodeSplitPolicy{});
  // Other split policies where the splits matter: few sequences.
  const int64_t policies[][2] = {{264, 32}, {1056, 32}, {264, 64}, {132, 128}, {528, 64}};
  const int64_t few[][3] = {{1, 1100, 128}, {1, 4096, 0}, {8, 1100, 128}};
  for (const auto &c : few)
    for (const auto &p : policies)
      BenchCase(stream, iters, c[0], c[1], c[2], kc::DecodeSplitPolicy{p[0], p[1]});
  cudaStreamDestroy(stream);
  return 0;
}
