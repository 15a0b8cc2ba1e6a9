// Batches for the paged_attention tests: random operands for a list of
// sequences over shuffled cache blocks, and the caches' contents after the
// op's stores.
#pragma once

#include "fused_test_util.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace kiln::test {

// A batch: sequence s has news[s] new tokens, the last of ctxs[s].
struct Spec {
  int64_t hq, hkv, d, dv, bs;
  std::vector<int64_t> news, ctxs;
  double pad = 0; // chance that a token's slot is -1 (not stored)
};

struct Batch {
  int64_t nb = 0, mb = 0;
  Tensor q, k_new, v_new, k_cache, v_cache, slots, query_start, context_lens, block_tables;
  std::vector<const Tensor *> Inputs() const {
    return {&q,     &k_new,       &v_new,        &k_cache,     &v_cache,
            &slots, &query_start, &context_lens, &block_tables};
  }
};

inline int64_t BlocksFor(int64_t ctx, int64_t bs) { return (ctx + bs - 1) / bs; }

// Each sequence's blocks come from a shuffled pool, so its table is not
// contiguous; entries past its context (and all of a sequence without new
// tokens) hold values outside [0, NB), which the op must never read. The
// caches start random, as if earlier steps had filled them.
inline Batch MakeBatch(const Spec &sp, std::mt19937 &rng) {
  Batch b;
  const int64_t n = static_cast<int64_t>(sp.news.size());
  const int64_t t = std::accumulate(sp.news.begin(), sp.news.end(), int64_t{0});
  int64_t total = 0;
  for (int64_t s = 0; s < n; ++s) {
    total += BlocksFor(sp.ctxs[s], sp.bs);
    b.mb = std::max(b.mb, BlocksFor(sp.ctxs[s], sp.bs));
  }
  b.nb = total + 3;
  b.mb += 1;
  std::vector<int64_t> pool(static_cast<size_t>(b.nb));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  b.q = Random<float>({1, sp.hq, t, sp.d}, rng, -1, 1);
  b.k_new = Random<float>({1, sp.hkv, t, sp.d}, rng, -1, 1);
  b.v_new = Random<float>({1, sp.hkv, t, sp.dv}, rng, -1, 1);
  b.k_cache = Random<float>({b.nb, sp.hkv, sp.bs, sp.d}, rng, -1, 1);
  b.v_cache = Random<float>({b.nb, sp.hkv, sp.bs, sp.dv}, rng, -1, 1);
  std::vector<int64_t> slots, qs = {0}, tables(static_cast<size_t>(n * b.mb), b.nb + 7);
  size_t next = 0;
  for (int64_t s = 0; s < n; ++s) {
    int64_t *row = tables.data() + s * b.mb;
    for (int64_t j = 0; j < BlocksFor(sp.ctxs[s], sp.bs); ++j)
      row[j] = sp.news[s] > 0 ? pool[next++] : -5;
    for (int64_t i = 0; i < sp.news[s]; ++i) {
      const int64_t p = sp.ctxs[s] - sp.news[s] + i;
      const bool pad = std::uniform_real_distribution<double>(0, 1)(rng) < sp.pad;
      slots.push_back(pad ? -1 : row[p / sp.bs] * sp.bs + p % sp.bs);
    }
    qs.push_back(qs.back() + sp.news[s]);
  }
  b.slots = Ints(slots);
  b.query_start = Ints(qs);
  b.context_lens = Ints(sp.ctxs);
  b.block_tables = Make<int64_t>({n, b.mb}, tables);
  return b;
}

// The caches as the contract says they are after the call: each stored
// token's rows replaced, nothing else touched.
inline void StoreRef(const Batch &b, Tensor *kc, Tensor *vc) {
  const int64_t hkv = b.k_new.shape[1], t_count = b.k_new.shape[2], bs = b.k_cache.shape[2];
  for (Tensor *c : {kc, vc}) {
    const Tensor &src = c == kc ? b.k_new : b.v_new;
    const int64_t w = src.shape[3];
    for (int64_t t = 0; t < t_count; ++t) {
      const int64_t slot = b.slots.data<int64_t>()[t];
      if (slot < 0)
        continue;
      for (int64_t g = 0; g < hkv; ++g)
        for (int64_t e = 0; e < w; ++e)
          c->data<float>()[((slot / bs * hkv + g) * bs + slot % bs) * w + e] =
              src.data<float>()[(g * t_count + t) * w + e];
    }
  }
}

// T = 3 tokens: sequence 0 a 2-token prefill, sequence 1 decoding at 6.
// NB = 6, MB = 3, BS = 4.
inline Batch ErrorBase() {
  std::mt19937 rng(304);
  return MakeBatch({4, 2, 8, 6, 4, {2, 1}, {2, 6}}, rng);
}

} // namespace kiln::test
