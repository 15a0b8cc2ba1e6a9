#include "kernels/cpu/attention_paged.h"

#include "kernels/attention_scores.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/reduce_softmax.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace kiln::kernels {
namespace {

// As in Attention: scores for at most about this many floats at once, so a
// long prefill never needs [rows, context] in one piece.
constexpr int64_t kScoreBudget = int64_t{1} << 17;

// Buffers sized for the largest sequence seen so far, shared by all the
// batch's sequences and KV heads: a call allocates a handful of times.
struct Scratch {
  std::vector<float> k, v;   // one KV head's context, gathered dense
  std::vector<float> q, out; // one block of the group's query rows
  std::vector<float> scores;
};

float *Grow(std::vector<float> &buf, int64_t n) {
  if (static_cast<int64_t>(buf.size()) < n)
    buf.resize(static_cast<size_t>(n));
  return buf.data();
}

// k_new's row (g, t) -> cache[slot / BS, g, slot % BS, :] for every KV head.
// New keys and values have the caches' type, so a store is a copy.
template <typename T>
void StoreSlots(const T *src, T *cache, int64_t width, const int64_t *slots,
                const PagedAttentionDims &d) {
  const size_t bytes = static_cast<size_t>(width) * sizeof(T);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int64_t slot = slots[t];
    if (slot < 0) // padding: the token has no place in the cache
      continue;
    const int64_t block = slot / d.block_size, offset = slot % d.block_size;
    for (int64_t g = 0; g < d.kv_heads; ++g)
      std::memcpy(cache + ((block * d.kv_heads + g) * d.block_size + offset) * width,
                  src + (g * d.kv_head_stride + t * d.kv_token_stride) * width, bytes);
  }
}

// Positions [b0 * BS, len) of KV head g, dense as [len - b0 * BS, width]. A
// block holds BS contiguous rows per head, so each block is one copy.
void GatherContext(const float *cache, const int64_t *table, int64_t g, int64_t b0, int64_t len,
                   int64_t width, const PagedAttentionDims &d, float *dst) {
  for (int64_t b = b0; b * d.block_size < len; ++b) {
    const int64_t rows = std::min(d.block_size, len - b * d.block_size);
    const float *src = cache + (table[b] * d.kv_heads + g) * d.block_size * width;
    std::memcpy(dst + (b - b0) * d.block_size * width, src,
                static_cast<size_t>(rows * width) * sizeof(float));
  }
}

// Softmax over row[lo, hi) of the soft-capped scores; zeros elsewhere in
// [0, n). lo < hi: every token reads at least its own position.
void SoftmaxRange(float *row, int64_t lo, int64_t hi, int64_t n, float cap) {
  if (cap > 0)
    for (int64_t j = lo; j < hi; ++j)
      row[j] = SoftCap(row[j], cap);
  Softmax<float>(row + lo, row + lo, 1, hi - lo, 1, false);
  std::fill(row, row + lo, 0.0f);
  std::fill(row + hi, row + n, 0.0f);
}

// One sequence: n new tokens from t0, context ctx >= n, block table `table`.
void AttendSequence(const float *q, const float *k_cache, const float *v_cache,
                    const int64_t *table, int64_t t0, int64_t n, int64_t ctx, float *out,
                    const PagedAttentionDims &d, float scale, Scratch &w) {
  const int64_t D = d.head_dim, Dv = d.v_dim, hs = d.q_head_stride, ts = d.q_token_stride;
  const int64_t group = d.q_heads / d.kv_heads;
  // Only the blocks from the first new token's window on are read: the
  // gathered context starts at position base.
  const int64_t b0 = WindowStart(ctx - n, d.window) / d.block_size, base = b0 * d.block_size;
  const int64_t span = ctx - base;
  // The group's rows are head-major: row r is head g * group + r / n and
  // token t0 + r % n, at context position ctx - n + r % n. Stacking them
  // makes decoding (n = 1) a [group, ctx] product instead of group vectors.
  const int64_t rows = group * n;
  const int64_t block = std::clamp<int64_t>(kScoreBudget / span, 16, 4096);
  float *kbuf = Grow(w.k, span * D), *vbuf = Grow(w.v, span * Dv);
  float *qbuf = Grow(w.q, std::min(block, rows) * D);
  float *obuf = Grow(w.out, std::min(block, rows) * Dv);
  float *s = Grow(w.scores, std::min(block, rows) * span);
  for (int64_t g = 0; g < d.kv_heads; ++g) {
    GatherContext(k_cache, table, g, b0, ctx, D, d, kbuf);
    GatherContext(v_cache, table, g, b0, ctx, Dv, d, vbuf);
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t m = std::min(block, rows - r0);
      // Keys past the block's last position are in every row's future; a
      // block within one head (long prefill) skips them.
      const int64_t last = r0 + m - 1;
      const int64_t kv = r0 / n == last / n ? ctx - n + last % n + 1 - base : span;
      for (int64_t r = 0; r < m; ++r) {
        const int64_t h = g * group + (r0 + r) / n, t = t0 + (r0 + r) % n;
        std::memcpy(qbuf + r * D, q + (h * hs + t * ts) * D,
                    static_cast<size_t>(D) * sizeof(float));
      }
      // s[m, kv] = scale * Q[m, D] @ K[kv, D]^T
      Gemm<float>(false, true, m, kv, D, scale, qbuf, D, kbuf, D, 0.0f, s, kv);
      for (int64_t r = 0; r < m; ++r) {
        // Row r sees positions WindowStart(p)..p, p >= 0 since ctx >= n, so
        // no row is ever fully masked.
        const int64_t p = ctx - n + (r0 + r) % n;
        SoftmaxRange(s + r * kv, WindowStart(p, d.window) - base, p + 1 - base, kv, d.softcap);
      }
      // o[m, Dv] = P[m, kv] @ V[kv, Dv]
      Gemm<float>(false, false, m, Dv, kv, 1.0f, s, kv, vbuf, Dv, 0.0f, obuf, Dv);
      for (int64_t r = 0; r < m; ++r) {
        const int64_t h = g * group + (r0 + r) / n, t = t0 + (r0 + r) % n;
        std::memcpy(out + (h * hs + t * ts) * Dv, obuf + r * Dv,
                    static_cast<size_t>(Dv) * sizeof(float));
      }
    }
  }
}

// Few new tokens (decode): each query row reads its keys and values in place
// through the block table. Gathering the context and two small GEMMs would
// cost more than the arithmetic.
constexpr int64_t kDirectMaxTokens = 4;

// q . k over D floats in 16 independent lanes (vectorizable without
// reassociating a reduction), then the lanes summed.
inline __attribute__((always_inline)) float Dot(const float *q, const float *k, int64_t D) {
  float lane[16] = {};
  int64_t c = 0;
  for (; c + 16 <= D; c += 16)
    for (int l = 0; l < 16; ++l)
      lane[l] += q[c + l] * k[c + l];
  for (; c < D; ++c)
    lane[c % 16] += q[c] * k[c];
  float sum = 0;
  for (float v : lane)
    sum += v;
  return sum;
}

// Compiled for AVX-512, AVX2 and the baseline; the loader picks one.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
AttendDirect(const float *q, const float *k_cache, const float *v_cache, const int64_t *table,
             int64_t t0, int64_t n, int64_t ctx, float *out, const PagedAttentionDims &d,
             float scale, Scratch &w) {
  const int64_t D = d.head_dim, Dv = d.v_dim, BS = d.block_size;
  const int64_t hs = d.q_head_stride, ts = d.q_token_stride;
  const int64_t group = d.q_heads / d.kv_heads;
  // The query heads of one KV head share every K and V row they read, so
  // each row is loaded once for the whole group: p is [group, ctx] and acc
  // [group, Dv].
  float *p = Grow(w.scores, group * ctx);
  float *acc = Grow(w.out, group * Dv);
  for (int64_t g = 0; g < d.kv_heads; ++g) {
    for (int64_t i = 0; i < n; ++i) {
      // Positions lo..seen-1; blocks before lo's are never read.
      const int64_t t = t0 + i, seen = ctx - n + i + 1, lo = WindowStart(seen - 1, d.window);
      const int64_t b_lo = lo / BS;
      // Block by block: a block holds BS consecutive positions of head g.
      for (int64_t j0 = b_lo * BS, b = b_lo; j0 < seen; j0 += BS, ++b) {
        const float *kb = k_cache + (table[b] * d.kv_heads + g) * BS * D;
        const int64_t rows = std::min(BS, seen - j0);
        for (int64_t o = std::max<int64_t>(0, lo - j0); o < rows; ++o)
          for (int64_t r = 0; r < group; ++r)
            p[r * ctx + j0 + o] = SoftCap(
                Dot(q + ((g * group + r) * hs + t * ts) * D, kb + o * D, D) * scale, d.softcap);
      }
      std::vector<float> &inv = w.q; // 1 / sum of each row
      Grow(inv, group);
      for (int64_t r = 0; r < group; ++r) {
        float *pr = p + r * ctx;
        const float best = *std::max_element(pr + lo, pr + seen);
        for (int64_t j = lo; j < seen; ++j)
          pr[j] -= best;
        ExpF32(pr + lo, pr + lo, seen - lo);
        float sum = 0;
        for (int64_t j = lo; j < seen; ++j)
          sum += pr[j];
        inv[r] = 1.0f / sum;
      }
      // acc[r] = sum_j p[r, j] v_j, 16 columns at a time so the running sum
      // stays in a register instead of going through memory per position.
      for (int64_t r = 0; r < group; ++r)
        for (int64_t c0 = 0; c0 < Dv; c0 += 16) {
          const int64_t width = std::min<int64_t>(16, Dv - c0);
          float lane[16] = {};
          for (int64_t j0 = b_lo * BS, b = b_lo; j0 < seen; j0 += BS, ++b) {
            const float *vb = v_cache + (table[b] * d.kv_heads + g) * BS * Dv + c0;
            const float *pr = p + r * ctx + j0;
            const int64_t rows = std::min(BS, seen - j0), o0 = std::max<int64_t>(0, lo - j0);
            if (width == 16) {
              for (int64_t o = o0; o < rows; ++o)
                for (int l = 0; l < 16; ++l)
                  lane[l] += pr[o] * vb[o * Dv + l];
            } else {
              for (int64_t o = o0; o < rows; ++o)
                for (int64_t l = 0; l < width; ++l)
                  lane[l] += pr[o] * vb[o * Dv + l];
            }
          }
          std::copy(lane, lane + width, acc + r * Dv + c0);
        }
      for (int64_t r = 0; r < group; ++r) {
        float *o = out + ((g * group + r) * hs + t * ts) * Dv;
        for (int64_t c = 0; c < Dv; ++c)
          o[c] = acc[r * Dv + c] * inv[r];
      }
    }
  }
}

// Few new tokens (decode) read the cache in place; more gather it and use
// GEMMs.
void AttendF32(const float *q, const float *k_cache, const float *v_cache, const int64_t *table,
               int64_t t0, int64_t n, int64_t ctx, float *out, const PagedAttentionDims &d,
               float scale, Scratch &w) {
  if (n <= kDirectMaxTokens)
    AttendDirect(q, k_cache, v_cache, table, t0, n, ctx, out, d, scale, w);
  else
    AttendSequence(q, k_cache, v_cache, table, t0, n, ctx, out, d, scale, w);
}

// Stores every token's key and value, then calls attend(s, scratch) for
// each sequence s with new tokens. Decode-sized sequences spread over
// threads (each range its own scratch); longer chunks, whose products go
// to BLAS, run on this thread.
template <typename T, typename S, typename Attend>
void StoreThenAttend(const T *k_new, const T *v_new, T *k_cache, T *v_cache,
                     const PagedBatch &batch, const PagedAttentionDims &dims, Attend &&attend) {
  if (dims.tokens == 0 || dims.kv_heads == 0)
    return;
  // Stores first: a sequence's own new tokens are part of the context it
  // reads back through its block table.
  StoreSlots(k_new, k_cache, dims.head_dim, batch.slots, dims);
  StoreSlots(v_new, v_cache, dims.v_dim, batch.slots, dims);
  std::vector<int64_t> direct;
  for (int64_t s = 0; s < dims.num_seqs; ++s) {
    const int64_t n = batch.query_start[s + 1] - batch.query_start[s];
    if (n > 0 && n <= kDirectMaxTokens)
      direct.push_back(s);
  }
  ParallelFor(static_cast<int64_t>(direct.size()), 4, [&](int64_t begin, int64_t end) {
    S scratch;
    for (int64_t i = begin; i < end; ++i)
      attend(direct[i], scratch);
  });
  S scratch;
  for (int64_t s = 0; s < dims.num_seqs; ++s)
    if (batch.query_start[s + 1] - batch.query_start[s] > kDirectMaxTokens)
      attend(s, scratch);
}

// ---- f16 / bf16 ------------------------------------------------------------

// One sequence's operands widened for the f32 code, one KV head at a time.
struct HalfScratch {
  Scratch f32;
  std::vector<float> q, k, v, out; // [group, n, D], [ctx, D], [ctx, Dv], [group, n, Dv]
  std::vector<int64_t> table;      // 0, 1, 2, ...: the widened context's blocks in order
};

// Positions [b0 * BS, len) of KV head g widened to f32 at their own rows of
// dst ([len, width]; the rows before are left as they are): only the rows
// the sequence reads are converted, block by block.
void WidenContext(ElemType kind, const uint16_t *cache, const int64_t *table, int64_t g, int64_t b0,
                  int64_t len, int64_t width, const PagedAttentionDims &d, float *dst) {
  for (int64_t b = b0; b * d.block_size < len; ++b) {
    const int64_t rows = std::min(d.block_size, len - b * d.block_size);
    const uint16_t *src = cache + (table[b] * d.kv_heads + g) * d.block_size * width;
    CastElements(kind, src, ElemType::kF32, dst + b * d.block_size * width, rows * width);
  }
}

// One sequence (n new tokens from t0, context ctx) through the f32 code,
// KV head by KV head: each head's group of query heads and its context are
// a batch of one sequence with one KV head, its cache the widened context
// (block b at rows b * BS, read through an identity table).
void AttendHalf(ElemType kind, const uint16_t *q, const uint16_t *k_cache, const uint16_t *v_cache,
                const int64_t *table, int64_t t0, int64_t n, int64_t ctx, uint16_t *out,
                const PagedAttentionDims &d, float scale, HalfScratch &w) {
  const int64_t D = d.head_dim, Dv = d.v_dim, BS = d.block_size;
  const int64_t hs = d.q_head_stride, ts = d.q_token_stride;
  const int64_t group = d.q_heads / d.kv_heads, blocks = (ctx + BS - 1) / BS;
  // The first block any of the tokens reads (the f32 code skips the rest).
  const int64_t b0 = WindowStart(ctx - n, d.window) / BS;
  PagedAttentionDims one = d;
  one.q_heads = group;
  one.kv_heads = 1;
  one.tokens = n;
  one.q_head_stride = n; // the widened rows are head-major [group, n, *]
  one.q_token_stride = 1;
  one.num_blocks = one.max_blocks = blocks;
  one.num_seqs = 1;
  float *qw = Grow(w.q, group * n * D), *ow = Grow(w.out, group * n * Dv);
  float *kw = Grow(w.k, blocks * BS * D), *vw = Grow(w.v, blocks * BS * Dv);
  if (static_cast<int64_t>(w.table.size()) < blocks) {
    w.table.resize(static_cast<size_t>(blocks));
    std::iota(w.table.begin(), w.table.end(), int64_t{0});
  }
  for (int64_t g = 0; g < d.kv_heads; ++g) {
    // Head h's rows for tokens t0..t0+n-1: contiguous in q and out when
    // head-major (token stride 1), one row apart per token otherwise.
    for (int64_t r = 0; r < group; ++r) {
      const uint16_t *src = q + ((g * group + r) * hs + t0 * ts) * D;
      if (ts == 1)
        CastElements(kind, src, ElemType::kF32, qw + r * n * D, n * D);
      else
        for (int64_t i = 0; i < n; ++i)
          CastElements(kind, src + i * ts * D, ElemType::kF32, qw + (r * n + i) * D, D);
    }
    WidenContext(kind, k_cache, table, g, b0, ctx, D, d, kw);
    WidenContext(kind, v_cache, table, g, b0, ctx, Dv, d, vw);
    AttendF32(qw, kw, vw, w.table.data(), 0, n, ctx, ow, one, scale, w.f32);
    for (int64_t r = 0; r < group; ++r) {
      uint16_t *dst = out + ((g * group + r) * hs + t0 * ts) * Dv;
      if (ts == 1)
        CastElements(ElemType::kF32, ow + r * n * Dv, kind, dst, n * Dv);
      else
        for (int64_t i = 0; i < n; ++i)
          CastElements(ElemType::kF32, ow + (r * n + i) * Dv, kind, dst + i * ts * Dv, Dv);
    }
  }
}

} // namespace

void SetPagedStrides(PagedAttentionDims &d, bool token_major) {
  d.q_head_stride = token_major ? 1 : d.tokens;
  d.q_token_stride = token_major ? d.q_heads : 1;
  d.kv_head_stride = token_major ? 1 : d.tokens;
  d.kv_token_stride = token_major ? d.kv_heads : 1;
}

void PagedAttention(const float *q, const float *k_new, const float *v_new, float *k_cache,
                    float *v_cache, const PagedBatch &batch, float *out,
                    const PagedAttentionDims &dims, float scale) {
  StoreThenAttend<float, Scratch>(
      k_new, v_new, k_cache, v_cache, batch, dims, [&](int64_t s, Scratch &w) {
        const int64_t t0 = batch.query_start[s];
        AttendF32(q, k_cache, v_cache, batch.block_tables + s * dims.max_blocks, t0,
                  batch.query_start[s + 1] - t0, batch.context_lens[s], out, dims, scale, w);
      });
}

bool PagedAttention(ElemType kind, const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new,
                    uint16_t *k_cache, uint16_t *v_cache, const PagedBatch &batch, uint16_t *out,
                    const PagedAttentionDims &dims, float scale) {
  if (kind != ElemType::kF16 && kind != ElemType::kBF16)
    return false;
  StoreThenAttend<uint16_t, HalfScratch>(
      k_new, v_new, k_cache, v_cache, batch, dims, [&](int64_t s, HalfScratch &w) {
        const int64_t t0 = batch.query_start[s];
        AttendHalf(kind, q, k_cache, v_cache, batch.block_tables + s * dims.max_blocks, t0,
                   batch.query_start[s + 1] - t0, batch.context_lens[s], out, dims, scale, w);
      });
  return true;
}

} // namespace kiln::kernels
