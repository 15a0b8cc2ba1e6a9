// Times kernels::PagedAttention on a Llama-1.1B layer's attention shapes
// (32 query heads, 4 KV heads, head dim 64, block size 16) for decode
// batches, a prefill chunk and a mix of both, with f32 operands and with
// f16 and bf16 ones (computed in f32). Prints the best wall time and the CPU
// time per call. Build and run with tools/bench/paged_attention.sh.
#include "kernels/cpu/attention_paged.h"
#include "kernels/cpu/products_gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <random>
#include <vector>

using namespace kiln::kernels;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

struct Case {
  const char *name;
  std::vector<int64_t> news, ctxs; // per sequence
};

// One step's operands: caches holding every sequence's context in shuffled
// blocks, the new tokens the last of each context.
struct Step {
  PagedAttentionDims d;
  std::vector<float> q, k_new, v_new, k_cache, v_cache, out;
  std::vector<int64_t> slots, query_start, context_lens, block_tables;
  std::vector<uint16_t> half[6]; // q .. out as f16 or bf16 bit patterns
  PagedBatch Batch() const {
    return {slots.data(), query_start.data(), context_lens.data(), block_tables.data()};
  }
};

std::vector<float> Random(int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

Step MakeStep(const Case &c, std::mt19937 &rng) {
  Step s;
  PagedAttentionDims &d = s.d;
  d.q_heads = 32, d.kv_heads = 4, d.head_dim = 64, d.v_dim = 64, d.block_size = 16;
  d.num_seqs = static_cast<int64_t>(c.news.size());
  d.tokens = std::accumulate(c.news.begin(), c.news.end(), int64_t{0});
  for (int64_t ctx : c.ctxs) {
    d.max_blocks = std::max(d.max_blocks, (ctx + d.block_size - 1) / d.block_size);
    d.num_blocks += (ctx + d.block_size - 1) / d.block_size;
  }
  SetPagedStrides(d, /*token_major=*/false);
  std::vector<int64_t> pool(static_cast<size_t>(d.num_blocks));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  s.q = Random(d.q_heads * d.tokens * d.head_dim, rng);
  s.k_new = Random(d.kv_heads * d.tokens * d.head_dim, rng);
  s.v_new = Random(d.kv_heads * d.tokens * d.v_dim, rng);
  s.k_cache = Random(d.num_blocks * d.kv_heads * d.block_size * d.head_dim, rng);
  s.v_cache = Random(d.num_blocks * d.kv_heads * d.block_size * d.v_dim, rng);
  s.out.resize(static_cast<size_t>(d.q_heads * d.tokens * d.v_dim));
  s.block_tables.assign(static_cast<size_t>(d.num_seqs * d.max_blocks), 0);
  s.query_start = {0};
  size_t next = 0;
  for (int64_t i = 0; i < d.num_seqs; ++i) {
    int64_t *row = s.block_tables.data() + i * d.max_blocks;
    for (int64_t j = 0; j * d.block_size < c.ctxs[i]; ++j)
      row[j] = pool[next++];
    for (int64_t p = c.ctxs[i] - c.news[i]; p < c.ctxs[i]; ++p)
      s.slots.push_back(row[p / d.block_size] * d.block_size + p % d.block_size);
    s.query_start.push_back(s.query_start.back() + c.news[i]);
  }
  s.context_lens = c.ctxs;
  return s;
}

// Best wall milliseconds per call over calls filling about half a second;
// *cpu_ms gets CPU milliseconds (all threads) per call, which a machine busy
// with other work distorts less than wall time.
template <typename F> double TimeMs(F &&run, double *cpu_ms) {
  run(); // warm the pool and the caches
  std::vector<double> t;
  const double c0 = CpuNow(), start = Now();
  while (t.size() < 5 || (Now() - start < 0.5 && t.size() < 10000)) {
    const double t0 = Now();
    run();
    t.push_back(Now() - t0);
  }
  *cpu_ms = 1e3 * (CpuNow() - c0) / static_cast<double>(t.size());
  return 1e3 * *std::min_element(t.begin(), t.end());
}

} // namespace

int main(int argc, char **argv) {
  SetGemmThreads(argc > 1 ? std::atoi(argv[1]) : 2);
  const Case cases[] = {
      {"decode 1 x ctx 1024", {1}, {1024}},
      {"decode 8 x ctx 512", std::vector<int64_t>(8, 1), std::vector<int64_t>(8, 512)},
      {"decode 32 x ctx 256", std::vector<int64_t>(32, 1), std::vector<int64_t>(32, 256)},
      {"chunk 256 at ctx 512", {256}, {512}},
      {"8 decodes + chunk 128",
       {1, 1, 1, 1, 1, 1, 1, 1, 128},
       {300, 300, 300, 300, 300, 300, 300, 300, 128}},
  };
  std::mt19937 rng(7);
  std::printf("| case | f32 best ms | f32 cpu ms | f16 best ms | f16 cpu ms | bf16 best ms | bf16 "
              "cpu ms |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Case &c : cases) {
    Step s = MakeStep(c, rng);
    const PagedBatch b = s.Batch();
    double cpu = 0;
    const double best = TimeMs(
        [&] {
          PagedAttention(s.q.data(), s.k_new.data(), s.v_new.data(), s.k_cache.data(),
                         s.v_cache.data(), b, s.out.data(), s.d, 0.125f);
        },
        &cpu);
    std::printf("| %s | %.4f | %.4f |", c.name, best, cpu);
    for (ElemType kind : {ElemType::kF16, ElemType::kBF16}) {
      const std::vector<float> *f32[] = {&s.q, &s.k_new, &s.v_new, &s.k_cache, &s.v_cache, &s.out};
      for (int i = 0; i < 6; ++i) {
        s.half[i].resize(f32[i]->size());
        CastElements(ElemType::kF32, f32[i]->data(), kind, s.half[i].data(),
                     static_cast<int64_t>(f32[i]->size()));
      }
      const double half_best = TimeMs(
          [&] {
            PagedAttention(kind, s.half[0].data(), s.half[1].data(), s.half[2].data(),
                           s.half[3].data(), s.half[4].data(), b, s.half[5].data(), s.d, 0.125f);
          },
          &cpu);
      std::printf(" %.4f | %.4f |", half_best, cpu);
    }
    std::printf("\n");
  }
  return 0;
}
