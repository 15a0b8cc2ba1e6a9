// Cases of attention (MHA, GQA, MQA, causal, bool and additive masks, a
// fully masked row) and paged attention over a continuous batch.
#include "op_case.h"

#include <algorithm>
#include <numeric>

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BOOL = DType::kBool, I64 = DType::kI64;

// Softmax-weighted sums over up to a few dozen keys.
constexpr Tolerance kAttention = {1e-10, 5e-5};

OpAttrs AttentionAttrs(double scale, bool causal) {
  return Attrs().Float("scale", static_cast<float>(scale)).Int("causal", causal ? 1 : 0);
}

// A bool mask [B, 1, Sq, Skv] with query row 0 of batch 0 fully masked (its
// result is zeros) and the other rows random with at least one key kept.
Generator MaskWithEmptyRow(int64_t b, int64_t sq, int64_t skv) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(b * sq * skv));
    for (int64_t i = 0; i < b * sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        v[i * skv + j] = i == 0 ? 0 : (j == skv - 1 || rng() % 3 != 0);
    return FromDoubles(BOOL, {b, 1, sq, skv}, v);
  };
}

void AddDenseAttention(std::vector<OpCase> &c) {
  const int64_t d = 16;
  c.push_back(MakeCase(
      "attention", F32, {2, 6, 13, d}, "gqa_causal", AttentionAttrs(0.25, true),
      {Uniform(F32, {2, 6, 13, d}), Uniform(F32, {2, 2, 37, d}), Uniform(F32, {2, 2, 37, 24})},
      kAttention));
  c.push_back(MakeCase("attention", F32, {2, 3, 13, d}, "mha_bool_mask",
                       AttentionAttrs(0.25, false),
                       {Uniform(F32, {2, 3, 13, d}), Uniform(F32, {2, 3, 37, d}),
                        Uniform(F32, {2, 3, 37, d}), MaskWithEmptyRow(2, 13, 37)},
                       kAttention));
  c.push_back(MakeCase("attention", F32, {1, 4, 7, d}, "mqa_additive_mask",
                       AttentionAttrs(0.3, true),
                       {Uniform(F32, {1, 4, 7, d}), Uniform(F32, {1, 1, 13, d}),
                        Uniform(F32, {1, 1, 13, d}), Uniform(F32, {7, 13}, -3, 0)},
                       kAttention));
  // Decode: one query against the cache.
  c.push_back(MakeCase(
      "attention", F32, {3, 8, 1, 32}, "decode", AttentionAttrs(0.17, true),
      {Uniform(F32, {3, 8, 1, 32}), Uniform(F32, {3, 2, 129, 32}), Uniform(F32, {3, 2, 129, 32})},
      kAttention));
  // A prefill long enough for the blocked, threaded path.
  c.push_back(MakeCase(
      "attention", F32, {1, 8, 129, 64}, "prefill_gqa_causal", AttentionAttrs(0.125, true),
      {Uniform(F32, {1, 8, 129, 64}), Uniform(F32, {1, 2, 129, 64}), Uniform(F32, {1, 2, 129, 64})},
      kAttention));
  c.push_back(MakeCase(
      "attention", F16, {1, 4, 13, d}, "gqa_causal", AttentionAttrs(0.25, true),
      {Uniform(F16, {1, 4, 13, d}), Uniform(F16, {1, 2, 13, d}), Uniform(F16, {1, 2, 13, d})},
      kAttention));
}

// The shape of one paged batch: sequences' new-token counts and their
// contexts (new tokens included), over a cache of NB blocks of BS slots.
struct PagedShape {
  std::vector<int64_t> new_tokens, contexts;
  int64_t q_heads, kv_heads, head_dim, block_size, num_blocks, max_blocks;
};

// A consistent batch: each sequence owns distinct random blocks, its new
// tokens' slots are its last positions, table entries past its blocks hold
// garbage (the contract says they may), and the caches hold earlier keys.
std::vector<HostTensor> PagedInputs(const PagedShape &p, std::mt19937 &rng) {
  const int64_t n = static_cast<int64_t>(p.new_tokens.size());
  const int64_t t = std::accumulate(p.new_tokens.begin(), p.new_tokens.end(), int64_t{0});
  std::vector<double> blocks(static_cast<size_t>(p.num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0.0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<double> tables(static_cast<size_t>(n * p.max_blocks), -77), slots, query_start{0},
      contexts;
  size_t next_block = 0;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t ctx = p.contexts[s], used = (ctx + p.block_size - 1) / p.block_size;
    for (int64_t j = 0; j < used; ++j)
      tables[s * p.max_blocks + j] = blocks[next_block++];
    for (int64_t pos = ctx - p.new_tokens[s]; pos < ctx; ++pos)
      slots.push_back(tables[s * p.max_blocks + pos / p.block_size] * p.block_size +
                      pos % p.block_size);
    query_start.push_back(query_start.back() + p.new_tokens[s]);
    contexts.push_back(static_cast<double>(ctx));
  }
  const int64_t hq = p.q_heads, hkv = p.kv_heads, d = p.head_dim;
  return {Uniform(F32, {1, hq, t, d})(rng),
          Uniform(F32, {1, hkv, t, d})(rng),
          Uniform(F32, {1, hkv, t, d})(rng),
          Uniform(F32, {p.num_blocks, hkv, p.block_size, d})(rng),
          Uniform(F32, {p.num_blocks, hkv, p.block_size, d})(rng),
          FromDoubles(I64, {t}, slots),
          FromDoubles(I64, {n + 1}, query_start),
          FromDoubles(I64, {n}, contexts),
          FromDoubles(I64, {n, p.max_blocks}, tables)};
}

OpCase PagedCase(const std::string &variant, const PagedShape &p) {
  const int64_t t = std::accumulate(p.new_tokens.begin(), p.new_tokens.end(), int64_t{0});
  OpCase c = MakeCase("paged_attention", F32, {1, p.q_heads, t, p.head_dim}, variant,
                      Attrs().Float("scale", 0.25f), {}, kAttention);
  c.make_inputs = [p](std::mt19937 &rng) { return PagedInputs(p, rng); };
  c.in_place = {3, 4}; // k_cache and v_cache
  return c;
}

} // namespace

void AddAttentionCases(std::vector<OpCase> &cases) {
  AddDenseAttention(cases);
  // Prefill chunks, a decode step and an idle sequence in one batch (Dynamic
  // SplitFuse), blocks of an odd size.
  cases.push_back(PagedCase("mixed_gqa", {{7, 1, 0, 13}, {7, 20, 9, 13}, 6, 2, 16, 5, 19, 4}));
  cases.push_back(PagedCase("decode_mqa", {{1, 1, 1}, {37, 5, 1}, 4, 1, 32, 7, 13, 6}));
}

} // namespace kiln::oracle
