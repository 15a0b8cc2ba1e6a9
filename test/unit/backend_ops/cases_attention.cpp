// Cases of attention (MHA, GQA, MQA, causal, bool and additive masks, a
// fully masked row), paged attention over a continuous batch, and rotary at
// model shapes. The larger ones are shaped for device kernels: head dims of
// real models (64, 80, 96, 128, 256) and odd ones, contexts of many cache
// blocks, query rows that cross a device tile (16 rows, 32 keys).
#include "op_case.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, BOOL = DType::kBool,
                I64 = DType::kI64;

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
  // Gemma 2's soft-capped scores, under a causal limit and an additive mask.
  for (DType t : {F32, BF16})
    c.push_back(MakeCase("attention", t, {1, 4, 11, d}, "softcap_gqa_causal_mask",
                         Attrs().Float("scale", 0.25f).Int("causal", 1).Float("softcap", 1.5f),
                         {Uniform(t, {1, 4, 11, d}), Uniform(t, {1, 2, 19, d}),
                          Uniform(t, {1, 2, 19, d}), Uniform(t, {1, 1, 11, 19}, -4, 0)},
                         kAttention));
  // A half plan's additive mask is half too (the exporters' causal mask
  // after the float conversion), broadcast over heads.
  for (DType t : {F16, BF16})
    c.push_back(MakeCase("attention", t, {2, 4, 9, d}, "half_additive_mask",
                         AttentionAttrs(0.25, false),
                         {Uniform(t, {2, 4, 9, d}), Uniform(t, {2, 2, 21, d}),
                          Uniform(t, {2, 2, 21, d}), Uniform(t, {2, 1, 9, 21}, -4, 0)},
                         kAttention));
}

// The shape of one paged batch: sequences' new-token counts and their
// contexts (new tokens included), over a cache of NB blocks of BS slots.
struct PagedShape {
  std::vector<int64_t> new_tokens, contexts;
  int64_t q_heads, kv_heads, head_dim, block_size, num_blocks, max_blocks;
  DType dtype = F32;
  int64_t v_dim = 0;     // 0: head_dim
  bool pad_last = false; // the last sequence's tokens are padding (slot -1)
  double scale = 0.25;
  bool token_major = false; // layout "bshd": q, k_new, v_new and out [1, T, H, *]
  // A sliding window (0: none) and a soft-cap (0: none). With a window, the
  // table entries of blocks wholly before a sequence's first new token's
  // window name the last block, which holds NaN (a released block that was
  // reused): a kernel that reads one fails.
  int64_t window = 0;
  double softcap = 0;
};

// [1, H, T, width], or [1, T, H, width] token-major.
Shape PagedRows(const PagedShape &p, int64_t heads, int64_t tokens, int64_t width) {
  return p.token_major ? Shape{1, tokens, heads, width} : Shape{1, heads, tokens, width};
}

// A consistent batch: each sequence owns distinct random blocks, its new
// tokens' slots are its last positions, table entries past its blocks hold
// garbage (the contract says they may), and the caches hold earlier keys.
std::vector<HostTensor> PagedInputs(const PagedShape &p, std::mt19937 &rng) {
  const int64_t n = static_cast<int64_t>(p.new_tokens.size());
  const int64_t t = std::accumulate(p.new_tokens.begin(), p.new_tokens.end(), int64_t{0});
  const int64_t poison = p.window > 0 ? p.num_blocks - 1 : -1;
  std::vector<double> blocks(static_cast<size_t>(p.window > 0 ? p.num_blocks - 1 : p.num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0.0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<double> tables(static_cast<size_t>(n * p.max_blocks), -77), slots, query_start{0},
      contexts;
  size_t next_block = 0;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t ctx = p.contexts[s], used = (ctx + p.block_size - 1) / p.block_size;
    const int64_t first =
        p.window > 0 ? std::max<int64_t>(0, ctx - p.new_tokens[s] - p.window + 1) : 0;
    for (int64_t j = 0; j < used; ++j)
      tables[s * p.max_blocks + j] =
          (j + 1) * p.block_size <= first ? static_cast<double>(poison) : blocks[next_block++];
    for (int64_t pos = ctx - p.new_tokens[s]; pos < ctx; ++pos)
      slots.push_back(p.pad_last && s == n - 1
                          ? -1
                          : tables[s * p.max_blocks + pos / p.block_size] * p.block_size +
                                pos % p.block_size);
    query_start.push_back(query_start.back() + p.new_tokens[s]);
    contexts.push_back(static_cast<double>(ctx));
  }
  const int64_t hq = p.q_heads, hkv = p.kv_heads, d = p.head_dim;
  const int64_t dv = p.v_dim ? p.v_dim : d;
  const DType f = p.dtype;
  // The caches, with the poison block NaN.
  auto cache = [&](int64_t width) {
    std::uniform_real_distribution<double> u(-2, 2);
    const int64_t per_block = hkv * p.block_size * width;
    std::vector<double> v(static_cast<size_t>(p.num_blocks * per_block));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<int64_t>(i) / per_block == poison ? NAN : u(rng);
    return FromDoubles(f, {p.num_blocks, hkv, p.block_size, width}, v);
  };
  return {Uniform(f, PagedRows(p, hq, t, d))(rng),
          Uniform(f, PagedRows(p, hkv, t, d))(rng),
          Uniform(f, PagedRows(p, hkv, t, dv))(rng),
          cache(d),
          cache(dv),
          FromDoubles(I64, {t}, slots),
          FromDoubles(I64, {n + 1}, query_start),
          FromDoubles(I64, {n}, contexts),
          FromDoubles(I64, {n, p.max_blocks}, tables)};
}

OpCase PagedCase(const std::string &variant, const PagedShape &p) {
  const int64_t t = std::accumulate(p.new_tokens.begin(), p.new_tokens.end(), int64_t{0});
  Attrs attrs = Attrs().Float("scale", static_cast<float>(p.scale));
  if (p.token_major)
    attrs.String("layout", "bshd");
  if (p.window > 0)
    attrs.Int("window", p.window);
  if (p.softcap > 0)
    attrs.Float("softcap", static_cast<float>(p.softcap));
  OpCase c = MakeCase("paged_attention", p.dtype, PagedRows(p, p.q_heads, t, p.head_dim), variant,
                      attrs, {}, kAttention);
  c.make_inputs = [p](std::mt19937 &rng) { return PagedInputs(p, rng); };
  c.in_place = {3, 4}; // k_cache and v_cache
  return c;
}

// Dense attention at model shapes: a causal limit with an offset (Sq < Skv)
// combined with bool and broadcast additive masks, queries past the keys
// (Sq > Skv, causal: the first rows see no key and are zeros), a long
// GQA decode, and value dims crossing 128 and 256 (Dv != D).
void AddDenseAtModelShapes(std::vector<OpCase> &c) {
  c.push_back(MakeCase("attention", F32, {2, 8, 5, 80}, "causal_offset_bool_mask_d80",
                       AttentionAttrs(1 / std::sqrt(80.0), true),
                       {Uniform(F32, {2, 8, 5, 80}), Uniform(F32, {2, 2, 300, 80}),
                        Uniform(F32, {2, 2, 300, 80}), MaskWithEmptyRow(2, 5, 300)},
                       kAttention));
  c.push_back(MakeCase("attention", F32, {2, 8, 17, 96}, "causal_offset_f32_mask_d96",
                       AttentionAttrs(1 / std::sqrt(96.0), true),
                       {Uniform(F32, {2, 8, 17, 96}), Uniform(F32, {2, 1, 71, 96}),
                        Uniform(F32, {2, 1, 71, 96}), Uniform(F32, {1, 8, 1, 71}, -4, 0)},
                       kAttention));
  c.push_back(MakeCase(
      "attention", F32, {1, 2, 9, 16}, "causal_queries_past_keys", AttentionAttrs(0.25, true),
      {Uniform(F32, {1, 2, 9, 16}), Uniform(F32, {1, 2, 4, 16}), Uniform(F32, {1, 2, 4, 16})},
      kAttention));
  c.push_back(MakeCase("attention", BF16, {1, 16, 1, 128}, "decode_gqa4_d128",
                       AttentionAttrs(1 / std::sqrt(128.0), true),
                       {Uniform(BF16, {1, 16, 1, 128}), Uniform(BF16, {1, 4, 1029, 128}),
                        Uniform(BF16, {1, 4, 1029, 128})},
                       kAttention));
  c.push_back(MakeCase(
      "attention", F32, {1, 3, 21, 40}, "dv_300", AttentionAttrs(0.2, false),
      {Uniform(F32, {1, 3, 21, 40}), Uniform(F32, {1, 3, 45, 40}), Uniform(F32, {1, 3, 45, 300})},
      kAttention));
  c.push_back(MakeCase(
      "attention", F16, {2, 4, 19, 64}, "dv_130_causal", AttentionAttrs(0.125, true),
      {Uniform(F16, {2, 4, 19, 64}), Uniform(F16, {2, 2, 50, 64}), Uniform(F16, {2, 2, 50, 130})},
      kAttention));
}

// Paged batches at model shapes (BS 16 unless noted).
void AddPagedAtModelShapes(std::vector<OpCase> &c) {
  PagedShape p;
  // GQA 8:1 (one KV head), D 128: decodes and a prefill chunk over contexts of
  // 30-70 blocks.
  p = {{1, 9, 1}, {1031, 1100, 517}, 8, 1, 128, 16, 180, 70};
  p.scale = 1 / std::sqrt(128.0);
  c.push_back(PagedCase("long_gqa8_d128", p));
  // MQA in bf16, D 64: a context of 94 blocks next to short ones.
  p = {{5, 1, 1}, {1003, 64, 1500}, 8, 1, 64, 16, 170, 94, BF16};
  p.scale = 0.125;
  c.push_back(PagedCase("long_mqa_d64_bf16", p));
  // MHA in f16, D 80: a whole prompt (context = its tokens), decodes, an idle
  // sequence and a chunk continuing a prompt.
  p = {{33, 1, 0, 7}, {33, 200, 50, 40}, 4, 4, 80, 16, 30, 13, F16};
  p.scale = 1 / std::sqrt(80.0);
  c.push_back(PagedCase("mixed_mha_d80_f16", p));
  // GQA 3:1, D 96, with a padding sequence whose tokens store nothing (slot
  // -1) but still attend; query tiles cross token boundaries (3 heads).
  p = {{3, 1, 2}, {40, 77, 2}, 6, 2, 96, 16, 12, 5};
  p.pad_last = true;
  p.scale = 1 / std::sqrt(96.0);
  c.push_back(PagedCase("padded_gqa3_d96", p));
  // bf16 GQA 4:1 with D 256, blocks of 32.
  p = {{9, 1}, {9, 300}, 4, 1, 256, 32, 12, 10, BF16};
  p.scale = 0.0625;
  c.push_back(PagedCase("gqa4_d256_bf16_bs32", p));
  // Odd dims: D 33, Dv 130 (over 128), blocks of 5.
  p = {{11, 1}, {45, 70}, 6, 2, 33, 5, 30, 15};
  p.v_dim = 130;
  c.push_back(PagedCase("odd_d33_dv130_bs5", p));
  // Token-major (layout bshd, what kiln-token-major-attention builds): GQA
  // 4:1 D 128 in bf16 decoding next to a prefill chunk, MQA in f16 with
  // padding, and f32 MHA with Dv != D.
  p = {{1, 1, 12}, {600, 33, 40}, 8, 2, 128, 16, 50, 40, BF16};
  p.scale = 1 / std::sqrt(128.0);
  p.token_major = true;
  c.push_back(PagedCase("bshd_gqa4_d128_bf16", p));
  p = {{5, 1, 2}, {5, 90, 2}, 4, 1, 64, 16, 12, 6, F16};
  p.pad_last = true;
  p.scale = 0.125;
  p.token_major = true;
  c.push_back(PagedCase("bshd_mqa_d64_f16_padded", p));
  p = {{11, 1}, {45, 70}, 3, 3, 33, 5, 30, 15};
  p.v_dim = 40;
  p.token_major = true;
  c.push_back(PagedCase("bshd_mha_d33_dv40_bs5", p));
}

// Prefill chunks for the CUDA tensor-core kernel (attention_mma.h: f16/bf16,
// D == Dv in {64, 80, 96, 128}, at least 16 new tokens per sequence on
// average): single prompts of 16, 100 and 1024 tokens across block
// boundaries, batches of prompts of different lengths (some with decodes),
// prefix-cached chunks (context longer than the new tokens), GQA 4:1 and
// MQA, blocks of 16 and 32.
void AddPagedPrefill(std::vector<OpCase> &c) {
  PagedShape p;
  p = {{16}, {16}, 8, 2, 128, 16, 4, 2, BF16};
  p.scale = 1 / std::sqrt(128.0);
  c.push_back(PagedCase("prefill16_gqa4_d128_bf16", p));
  p = {{100}, {100}, 4, 1, 64, 16, 10, 8, F16};
  p.scale = 0.125;
  c.push_back(PagedCase("prefill100_mqa_d64_f16", p));
  // Two query heads only: the CPU reference of 1024 tokens is slow.
  p = {{1024}, {1024}, 2, 1, 128, 16, 70, 64, BF16};
  p.scale = 1 / std::sqrt(128.0);
  c.push_back(PagedCase("prefill1024_gqa2_d128_bf16", p));
  p = {{37, 64, 5, 130}, {37, 64, 5, 130}, 8, 2, 80, 16, 30, 9, F16};
  p.scale = 1 / std::sqrt(80.0);
  c.push_back(PagedCase("prefill_batch_gqa4_d80_f16", p));
  p = {{37, 64, 5, 130}, {37, 64, 5, 130}, 8, 2, 80, 16, 30, 9, BF16};
  p.scale = 1 / std::sqrt(80.0);
  c.push_back(PagedCase("prefill_batch_gqa4_d80_bf16", p));
  // Token-major (layout bshd) prompts, as kiln-token-major-attention builds
  // them: the kernel reads q and writes the result through the layout's
  // strides.
  p = {{100, 37}, {100, 37}, 8, 2, 128, 16, 20, 8, BF16};
  p.scale = 1 / std::sqrt(128.0);
  p.token_major = true;
  c.push_back(PagedCase("prefill_bshd_gqa4_d128_bf16", p));
  p = {{64, 20}, {90, 20}, 4, 4, 80, 16, 20, 8, F16};
  p.scale = 1 / std::sqrt(80.0);
  p.token_major = true;
  c.push_back(PagedCase("prefill_bshd_prefix_mha_d80_f16", p));
  // Prefix caching: chunks continuing cached contexts of 230 and 64 tokens.
  p = {{70, 33}, {300, 97}, 8, 1, 128, 16, 40, 20, BF16};
  p.scale = 1 / std::sqrt(128.0);
  c.push_back(PagedCase("prefix_cached_mqa_d128_bf16", p));
  p = {{70, 33}, {300, 97}, 8, 2, 64, 32, 20, 10, F16};
  p.scale = 0.125;
  c.push_back(PagedCase("prefix_cached_gqa4_d64_f16_bs32", p));
  // A prompt beside decodes and an idle sequence, in the same launch.
  p = {{200, 1, 0, 1}, {200, 90, 12, 3}, 4, 1, 96, 16, 30, 13, F16};
  p.scale = 1 / std::sqrt(96.0);
  c.push_back(PagedCase("prefill_with_decodes_mqa_d96_f16", p));
  // A padding sequence (slots -1) after a prompt: its rows still attend.
  p = {{48, 20}, {48, 20}, 8, 2, 64, 16, 8, 3, BF16};
  p.pad_last = true;
  p.scale = 0.125;
  c.push_back(PagedCase("prefill_padded_gqa4_d64_bf16", p));
}

// Decode steps (as many tokens as sequences), which the CUDA backend gives
// its decode kernel (kernels/cuda/attention_decode.h) in one launch that also stores the
// new keys: one sequence at the Llama-3-8B shape with a context of 1100 (its
// keys split over 64 blocks, a table 128 blocks wide: 32 keys a split, and
// the combine reads the 35 splits that hold keys), batches of 40 and 70
// sequences (fewer splits), MQA with 8 query heads a group (two blocks a
// group), D 256, Dv != D, D 80, a padding sequence (slot -1), and a step of
// as many tokens as sequences that is not a decode step (2, 0 and 1 new
// tokens).
// `count` sequences of one new token each, contexts 1 + (s * step) % span,
// and the cache blocks they need.
void AddDecodeSequences(PagedShape &p, int64_t count, int64_t step, int64_t span) {
  for (int64_t s = 0; s < count; ++s) {
    p.new_tokens.push_back(1);
    p.contexts.push_back(1 + (s * step) % span);
    p.num_blocks += (p.contexts.back() + p.block_size - 1) / p.block_size;
  }
}

void AddPagedDecode(std::vector<OpCase> &c) {
  PagedShape p;
  p = {{1}, {1100}, 32, 8, 128, 16, 80, 128, BF16};
  p.scale = 1 / std::sqrt(128.0);
  p.token_major = true;
  c.push_back(PagedCase("decode_8b_shape_bf16", p));
  p = {{}, {}, 8, 2, 128, 16, 0, 40, F16};
  AddDecodeSequences(p, 40, 37, 600);
  p.scale = 1 / std::sqrt(128.0);
  c.push_back(PagedCase("decode_batch40_gqa4_d128_f16", p));
  p = {{}, {}, 8, 1, 64, 16, 0, 20, F32};
  AddDecodeSequences(p, 70, 53, 300);
  p.scale = 0.125;
  c.push_back(PagedCase("decode_batch70_mqa8_d64_f32", p));
  p = {{1, 1}, {300, 45}, 4, 1, 256, 32, 12, 10, BF16};
  p.scale = 0.0625;
  c.push_back(PagedCase("decode_gqa4_d256_bf16_bs32", p));
  p = {{1, 1, 1}, {77, 1, 130}, 6, 2, 64, 16, 20, 9, F16};
  p.v_dim = 96;
  p.scale = 0.125;
  c.push_back(PagedCase("decode_dv96_d64_f16", p));
  p = {{1, 1, 1}, {40, 200, 3}, 8, 2, 80, 16, 20, 13, BF16};
  p.pad_last = true;
  p.scale = 1 / std::sqrt(80.0);
  p.token_major = true;
  c.push_back(PagedCase("decode_padded_d80_bf16", p));
  p = {{2, 0, 1}, {30, 5, 17}, 4, 2, 32, 8, 12, 5, BF16};
  p.scale = 0.2;
  c.push_back(PagedCase("tokens_eq_seqs_uneven_bf16", p));
}

// Sliding windows (Mistral; Gemma 2 and 3's local layers) and soft-caps
// (Gemma 2) on every kernel path: a long prompt and a prefix-cached chunk
// (the CUDA tensor-core prefill), decode batches and one long decode with
// split keys (the decode kernel), a mixed batch in f32 with odd blocks (the
// query-tile kernel; the CPU's gather and direct paths), and a soft-cap
// alone. Table entries behind each window name a NaN block.
void AddPagedWindows(std::vector<OpCase> &c) {
  PagedShape p;
  p = {{300}, {300}, 8, 2, 128, 16, 21, 20, BF16};
  p.scale = 1 / std::sqrt(128.0);
  p.window = 100;
  c.push_back(PagedCase("window100_prefill300_gqa4_d128_bf16", p));
  p = {{70, 33}, {300, 97}, 8, 1, 64, 16, 30, 20, F16};
  p.scale = 0.125;
  p.window = 64;
  p.softcap = 2.0;
  p.token_major = true;
  c.push_back(PagedCase("window64_softcap_prefix_cached_mqa_d64_f16", p));
  p = {{}, {}, 8, 2, 128, 16, 1, 40, BF16};
  AddDecodeSequences(p, 40, 37, 600);
  p.scale = 1 / std::sqrt(128.0);
  p.window = 128;
  p.softcap = 2.0;
  c.push_back(PagedCase("window128_softcap_decode_batch40_bf16", p));
  p = {{1}, {1100}, 32, 8, 128, 16, 71, 128, BF16};
  p.scale = 1 / std::sqrt(128.0);
  p.window = 300;
  p.token_major = true;
  c.push_back(PagedCase("window300_decode_8b_shape_bf16", p));
  p = {{7, 1, 0, 13, 2}, {7, 20, 9, 13, 30}, 6, 2, 16, 5, 20, 6};
  p.window = 6;
  p.softcap = 1.5;
  c.push_back(PagedCase("window6_softcap_mixed_gqa_bs5", p));
  p = {{100, 37}, {100, 37}, 4, 2, 64, 16, 12, 8, F16};
  p.scale = 0.125;
  p.softcap = 2.0;
  c.push_back(PagedCase("softcap_prefill_gqa2_d64_f16", p));
}

// rotary as Llama ([B, H, S, D], cos/sin [B or 1, 1, S, R], partial R) and
// as GPT-J/NeoX exports lay it out ([B, S, H, D], tables broadcast over H).
void AddRotaryAtModelShapes(std::vector<OpCase> &c) {
  c.push_back(MakeCase("rotary", F32, {1, 32, 7, 128}, "half_partial_d128",
                       Attrs().Int("rotary_dim", 64).Int("interleaved", 0),
                       {Uniform(F32, {1, 32, 7, 128}), Uniform(F32, {1, 1, 7, 64}, -1, 1),
                        Uniform(F32, {1, 1, 7, 64}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", BF16, {2, 7, 8, 80}, "interleaved_bshd_d80",
                       Attrs().Int("rotary_dim", 80).Int("interleaved", 1),
                       {Uniform(BF16, {2, 7, 8, 80}), Uniform(BF16, {2, 7, 1, 80}, -1, 1),
                        Uniform(BF16, {2, 7, 1, 80}, -1, 1)},
                       kPointwise));
  // Prompt lengths: a 1024-token Llama prompt, a NeoX-style [B, S, H, D]
  // layout with an interleaved partial rotation, a partial rotation in f16.
  c.push_back(MakeCase("rotary", BF16, {1, 32, 1024, 128}, "half_full_t1024",
                       Attrs().Int("rotary_dim", 128).Int("interleaved", 0),
                       {Uniform(BF16, {1, 32, 1024, 128}), Uniform(BF16, {1, 1, 1024, 128}, -1, 1),
                        Uniform(BF16, {1, 1, 1024, 128}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", F32, {1, 1000, 8, 64}, "interleaved_partial_bshd_t1000",
                       Attrs().Int("rotary_dim", 32).Int("interleaved", 1),
                       {Uniform(F32, {1, 1000, 8, 64}), Uniform(F32, {1, 1000, 1, 32}, -1, 1),
                        Uniform(F32, {1, 1000, 1, 32}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", F16, {2, 4, 300, 96}, "half_partial_t300",
                       Attrs().Int("rotary_dim", 64).Int("interleaved", 0),
                       {Uniform(F16, {2, 4, 300, 96}), Uniform(F16, {2, 1, 300, 64}, -1, 1),
                        Uniform(F16, {2, 1, 300, 64}, -1, 1)},
                       kPointwise));
  // Token-major at the 8B shape ([1, T, H, D], tables [1, T, 1, R] as
  // kiln-token-major-attention leaves them): the CUDA kernel's path that
  // stages each token's table row once for all heads; and one in f16 with
  // f32 tables, a partial interleaved rotation and a passed-through tail.
  c.push_back(MakeCase("rotary", BF16, {1, 1024, 32, 128}, "bshd_8b_t1024",
                       Attrs().Int("rotary_dim", 128).Int("interleaved", 0),
                       {Uniform(BF16, {1, 1024, 32, 128}), Uniform(F32, {1, 1024, 1, 128}, -1, 1),
                        Uniform(F32, {1, 1024, 1, 128}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", F16, {1, 37, 5, 96}, "bshd_interleaved_partial_f32_tables",
                       Attrs().Int("rotary_dim", 64).Int("interleaved", 1),
                       {Uniform(F16, {1, 37, 5, 96}), Uniform(F32, {1, 37, 1, 64}, -1, 1),
                        Uniform(F32, {1, 37, 1, 64}, -1, 1)},
                       kPointwise));
  // Decode steps (one or a few tokens): the CUDA kernel spreads each
  // token's heads over several blocks (8 at the 8B shape's queries), and
  // the passed-through tail of a partial rotation with them.
  c.push_back(MakeCase("rotary", BF16, {1, 1, 32, 128}, "bshd_8b_decode_t1",
                       Attrs().Int("rotary_dim", 128).Int("interleaved", 0),
                       {Uniform(BF16, {1, 1, 32, 128}), Uniform(F32, {1, 1, 1, 128}, -1, 1),
                        Uniform(F32, {1, 1, 1, 128}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", F16, {1, 3, 40, 96}, "bshd_decode_t3_partial_interleaved",
                       Attrs().Int("rotary_dim", 64).Int("interleaved", 1),
                       {Uniform(F16, {1, 3, 40, 96}), Uniform(F16, {1, 3, 1, 64}, -1, 1),
                        Uniform(F16, {1, 3, 1, 64}, -1, 1)},
                       kPointwise));
  // Half x with f32 tables, as half plans keep cos/sin (kiln-convert-float-type).
  c.push_back(MakeCase("rotary", BF16, {1, 4, 7, 16}, "f32_tables",
                       Attrs().Int("rotary_dim", 16).Int("interleaved", 0),
                       {Uniform(BF16, {1, 4, 7, 16}), Uniform(F32, {1, 1, 7, 16}, -1, 1),
                        Uniform(F32, {1, 1, 7, 16}, -1, 1)},
                       kPointwise));
}

} // namespace

void AddAttentionCases(std::vector<OpCase> &cases) {
  AddDenseAttention(cases);
  // Prefill chunks, a decode step and an idle sequence in one batch (Dynamic
  // SplitFuse), blocks of an odd size.
  cases.push_back(PagedCase("mixed_gqa", {{7, 1, 0, 13}, {7, 20, 9, 13}, 6, 2, 16, 5, 19, 4}));
  cases.push_back(PagedCase("decode_mqa", {{1, 1, 1}, {37, 5, 1}, 4, 1, 32, 7, 13, 6}));
  PagedShape bshd = {{7, 1, 0, 13}, {7, 20, 9, 13}, 6, 2, 16, 5, 19, 4};
  bshd.token_major = true;
  cases.push_back(PagedCase("mixed_gqa_bshd", bshd));
  AddDenseAtModelShapes(cases);
  AddPagedAtModelShapes(cases);
  AddPagedPrefill(cases);
  AddPagedDecode(cases);
  AddPagedWindows(cases);
  AddRotaryAtModelShapes(cases);
}

} // namespace kiln::oracle
