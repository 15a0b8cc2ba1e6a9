// paged_attention (docs/fused-ops.md) against a naive double reference that
// rebuilds each sequence's dense K/V from the caches after the write, the
// caches' contents after the call, the dense attention op it must agree
// with, and every error of the contract.
#include "paged_test_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::test {
namespace {

// out by the contract, with each sequence's dense K/V read from the caches
// kc, vc through its block table; mag sums p|v| for the tolerance.
void NaivePaged(const Batch &b, const Tensor &kc, const Tensor &vc, double scale,
                std::vector<double> *out, std::vector<double> *mag) {
  const int64_t hq = b.q.shape[1], t_count = b.q.shape[2], d = b.q.shape[3];
  const int64_t hkv = kc.shape[1], bs = kc.shape[2], dv = vc.shape[3];
  const int64_t *qs = b.query_start.data<int64_t>(), *ctxs = b.context_lens.data<int64_t>();
  out->assign(static_cast<size_t>(hq * t_count * dv), 0);
  mag->assign(out->size(), 0);
  for (int64_t s = 0; s + 1 < b.query_start.numel(); ++s) {
    const int64_t ctx = ctxs[s];
    if (qs[s + 1] == qs[s])
      continue;
    std::vector<double> k(static_cast<size_t>(hkv * ctx * d)),
        v(static_cast<size_t>(hkv * ctx * dv));
    for (int64_t j = 0; j < ctx; ++j) {
      const int64_t blk = b.block_tables.data<int64_t>()[s * b.mb + j / bs];
      for (int64_t g = 0; g < hkv; ++g) {
        for (int64_t e = 0; e < d; ++e)
          k[(g * ctx + j) * d + e] = At(kc, ((blk * hkv + g) * bs + j % bs) * d + e);
        for (int64_t e = 0; e < dv; ++e)
          v[(g * ctx + j) * dv + e] = At(vc, ((blk * hkv + g) * bs + j % bs) * dv + e);
      }
    }
    for (int64_t t = qs[s]; t < qs[s + 1]; ++t) {
      const int64_t p = ctx - (qs[s + 1] - t);
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t g = h / (hq / hkv);
        std::vector<double> sc(static_cast<size_t>(p + 1));
        for (int64_t j = 0; j <= p; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += At(b.q, (h * t_count + t) * d + e) * k[(g * ctx + j) * d + e];
          sc[j] = scale * dot;
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (double x : sc)
          sum += std::exp(x - mx);
        for (int64_t j = 0; j <= p; ++j) {
          const double w = std::exp(sc[j] - mx) / sum;
          for (int64_t e = 0; e < dv; ++e) {
            const size_t o = static_cast<size_t>((h * t_count + t) * dv + e);
            (*out)[o] += w * v[(g * ctx + j) * dv + e];
            (*mag)[o] += w * std::fabs(v[(g * ctx + j) * dv + e]);
          }
        }
      }
    }
  }
}

// Runs the op on `b` and checks the result and both caches afterwards.
void CheckBatch(const Spec &sp, std::mt19937 &rng, const std::string &label) {
  SCOPED_TRACE(label);
  Batch b = MakeBatch(sp, rng);
  Tensor want_k = b.k_cache, want_v = b.v_cache;
  StoreRef(b, &want_k, &want_v);
  const float scale = 1.0f / std::sqrt(static_cast<float>(sp.d));
  auto got = RunOp("paged_attention", Attrs().Float("scale", scale), b.Inputs());
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ((*got)[0].shape, (Shape{1, sp.hq, b.q.shape[2], sp.dv}));
  // Exactly the stored rows changed, to exactly the new values.
  EXPECT_EQ(b.k_cache.bytes, want_k.bytes) << "k_cache";
  EXPECT_EQ(b.v_cache.bytes, want_v.bytes) << "v_cache";
  std::vector<double> want, mag;
  NaivePaged(b, want_k, want_v, scale, &want, &mag);
  ExpectClose((*got)[0], want, mag, label);
}

TEST(PagedAttention, FixedBatches) {
  std::mt19937 rng(301);
  // {hq, hkv, d, dv, bs, news, ctxs, pad}
  const std::pair<const char *, Spec> cases[] = {
      {"one decode", {2, 2, 8, 8, 4, {1}, {9}}},
      {"one prefill", {4, 2, 8, 8, 4, {7}, {7}}},
      {"chunked prefill", {4, 1, 8, 6, 4, {5}, {13}}},
      {"decodes + prefill, gqa", {8, 2, 16, 16, 16, {1, 20, 1}, {33, 20, 5}}},
      {"a context of 51 blocks", {4, 2, 8, 8, 4, {1, 3}, {203, 3}}},
      {"a prefill of 150 over 150 blocks", {2, 1, 4, 4, 1, {150}, {150}}},
      // Long enough for several score row blocks per head, each reading
      // only the keys up to its last row's position.
      {"long prefill, row blocks", {2, 1, 8, 8, 16, {600}, {600}}},
      {"long chunk + decode", {4, 2, 8, 4, 4, {1, 500}, {90, 700}}},
      {"empty sequences", {2, 2, 8, 8, 4, {0, 2, 0}, {5, 6, 0}}},
      {"padding slots", {4, 4, 8, 8, 4, {3, 1, 4}, {3, 8, 10}, 0.5}},
      {"dv != d, mqa decode", {6, 1, 8, 3, 16, {1, 1}, {17, 40}}},
      // Up to 4 new tokens read the cache in place; 5 gather it first.
      {"direct and gathered chunks", {4, 2, 8, 8, 4, {2, 4, 5, 3}, {10, 4, 12, 3}}},
  };
  for (const auto &[name, sp] : cases)
    CheckBatch(sp, rng, name);
}

// Random N in 1..5 of mixed decode, prefill and chunked-prefill sequences
// over MHA, GQA and MQA and block sizes 1, 4 and 16.
TEST(PagedAttention, RandomBatches) {
  std::mt19937 rng(302);
  const int64_t heads[][2] = {{4, 4}, {8, 2}, {4, 1}};
  int trial = 0;
  for (const auto &hh : heads)
    for (int64_t bs : {1, 4, 16})
      for (int rep = 0; rep < 4; ++rep, ++trial) {
        auto pick = [&](int64_t lo, int64_t hi) {
          return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
        };
        Spec sp{hh[0], hh[1], 4 * pick(1, 4), 4 * pick(1, 4), bs, {}, {}, rep == 3 ? 0.2 : 0};
        for (int64_t s = 0, n = pick(1, 5); s < n; ++s) {
          const int kind = static_cast<int>(pick(0, 2));
          const int64_t ctx = pick(1, 45);
          sp.ctxs.push_back(ctx);
          sp.news.push_back(kind == 0 ? 1 : kind == 1 ? ctx : pick(1, ctx));
        }
        CheckBatch(sp, rng, "trial " + std::to_string(trial) + " bs " + std::to_string(bs));
      }
}

// One sequence with nothing cached before: a causal prefill, which must be
// the dense attention op over k_new and v_new.
TEST(PagedAttention, PrefillMatchesDenseCausalAttention) {
  std::mt19937 rng(303);
  for (int64_t bs : {1, 4, 16}) {
    Batch b = MakeBatch({8, 2, 16, 8, bs, {37}, {37}}, rng);
    std::fill(b.k_cache.bytes.begin(), b.k_cache.bytes.end(), 0);
    std::fill(b.v_cache.bytes.begin(), b.v_cache.bytes.end(), 0);
    const auto attrs = Attrs().Float("scale", 0.25f);
    auto paged = RunOp("paged_attention", attrs, b.Inputs());
    auto dense = RunOp("attention", Attrs().Float("scale", 0.25f).Int("causal", 1),
                       {&b.q, &b.k_new, &b.v_new});
    ASSERT_TRUE(paged.ok()) << paged.status().message();
    ASSERT_TRUE(dense.ok()) << dense.status().message();
    ASSERT_EQ((*paged)[0].shape, (*dense)[0].shape);
    for (int64_t i = 0; i < (*dense)[0].numel(); ++i)
      ASSERT_NEAR(At((*paged)[0], i), At((*dense)[0], i), 2e-6) << "bs " << bs << " element " << i;
  }
}

// ---- errors ----------------------------------------------------------------

Tensor Zeros(Shape s, DType t = DType::kF32) { return Tensor(t, std::move(s)); }

TEST(PagedAttentionErrors, ShapesDTypesAndAttributes) {
  const auto attrs = Attrs().Float("scale", 0.5f);
  std::vector<TensorView> one(1);
  auto infer = [&](const Batch &b) { return InferOp("paged_attention", attrs, b.Inputs(), &one); };
  auto with = [](auto edit) {
    Batch b = ErrorBase();
    edit(b);
    return b;
  };
  ExpectError(infer(with([](Batch &b) {
                b.q = Zeros({4, 3, 8});
              })),
              {"paged_attention", "operand 'q' must be 4-D [1, Hq, T, D], got shape [4, 3, 8]"});
  ExpectError(infer(with([](Batch &b) {
                b.q = Zeros({2, 4, 3, 8});
              })),
              {"operand 'q' of shape [2, 4, 3, 8]", "with batch = 1"});
  ExpectError(infer(with([](Batch &b) {
                b.q = Zeros({1, 3, 3, 8});
              })),
              {"query heads Hq = 3 must be a multiple", "Hkv = 2"});
  ExpectError(infer(with([](Batch &b) {
                b.k_new = Zeros({1, 2, 3, 4});
              })),
              {"operand 'k_new' must have shape [1, Hkv, T, D] = [1, 2, 3, 8], got [1, 2, 3, 4]"});
  ExpectError(infer(with([](Batch &b) {
                b.v_new = Zeros({1, 1, 3, 6});
              })),
              {"operand 'v_new' must have shape [1, Hkv, T, Dv]"});
  ExpectError(infer(with([](Batch &b) {
                b.k_cache = Zeros({6, 2, 4, 5});
              })),
              {"operand 'k_cache' of shape [6, 2, 4, 5]", "q's head dim D = 8"});
  ExpectError(infer(with([](Batch &b) {
                b.k_cache = Zeros({6, 2, 0, 8});
              })),
              {"block size BS >= 1"});
  ExpectError(infer(with([](Batch &b) {
                b.v_cache = Zeros({5, 2, 4, 6});
              })),
              {"operand 'v_cache' must have shape [NB, Hkv, BS, Dv] = [6, 2, 4, 6]"});
  ExpectError(infer(with([](Batch &b) {
                b.slots = Ints({0, 1});
              })),
              {"operand 'slots' of shape [2]", "q's token count T = 3"});
  ExpectError(infer(with([](Batch &b) {
                b.context_lens = Ints({2, 6, 1});
              })),
              {"operand 'context_lens' of shape [3]", "sequences N = 2"});
  ExpectError(infer(with([](Batch &b) {
                b.query_start = Ints({0, 3});
              })),
              {"operand 'query_start' of shape [2]", "sequences N plus one = 3"});
  ExpectError(infer(with([](Batch &b) {
                b.block_tables = Ints({0, 1});
              })),
              {"operand 'block_tables' must be 2-D [N, MB], got shape [2]"});
  // dtypes: paged_attention_half_test.cpp.
  Batch b = ErrorBase();
  ExpectError(InferOp("paged_attention", Attrs(), b.Inputs(), &one),
              {"paged_attention", "missing attribute 'scale'"});
  std::vector<const Tensor *> eight = b.Inputs();
  eight.pop_back();
  ExpectError(InferOp("paged_attention", attrs, eight, &one), {"expected 9 operands, got 8"});
  // Index values unknown before execution: the shape still follows.
  ASSERT_TRUE(InferOp("paged_attention", attrs, b.Inputs(), &one,
                      {true, true, true, true, true, false, false, false, false})
                  .ok());
  EXPECT_EQ(one[0].shape, (Shape{1, 4, 3, 6}));
  EXPECT_EQ(one[0].dtype, DType::kF32);
}

// Each bad index is rejected with its operand and value before anything is
// written: the caches are as they were.
TEST(PagedAttentionErrors, IndexValuesLeaveCachesUntouched) {
  const auto attrs = Attrs().Float("scale", 0.5f);
  auto expect_rejected = [&](void (*edit)(Batch &), std::vector<std::string> fragments) {
    Batch b = ErrorBase();
    edit(b);
    const std::vector<uint8_t> k = b.k_cache.bytes, v = b.v_cache.bytes;
    ExpectError(RunOp("paged_attention", attrs, b.Inputs()).status(), fragments);
    EXPECT_EQ(b.k_cache.bytes, k) << fragments.back();
    EXPECT_EQ(b.v_cache.bytes, v) << fragments.back();
  };
  expect_rejected(
      [](Batch &b) {
        b.query_start = Ints({1, 2, 3});
      },
      {"paged_attention", "query_start[0] must be 0, got 1"});
  expect_rejected(
      [](Batch &b) {
        b.query_start = Ints({0, 4, 3});
      },
      {"non-decreasing", "query_start[2] = 3 < query_start[1] = 4"});
  expect_rejected(
      [](Batch &b) {
        b.query_start = Ints({0, 2, 2});
      },
      {"query_start[N] = query_start[2] = 2 must equal the token count T = 3"});
  expect_rejected(
      [](Batch &b) {
        b.context_lens = Ints({1, 6});
      },
      {"context_lens[0] = 1 is less than the sequence's 2 new tokens"});
  expect_rejected([](Batch &b) { b.context_lens = Ints({2, -1}); }, {"context_lens[1] = -1"});
  expect_rejected(
      [](Batch &b) {
        b.context_lens = Ints({2, 13});
      },
      {"context_lens[1] = 13 exceeds the block table's capacity MB * BS = 3 * 4"});
  expect_rejected([](Batch &b) { b.slots.data<int64_t>()[1] = 24; },
                  {"slots[1] = 24 is outside the cache's NB * BS = 6 * 4 slots"});
  expect_rejected([](Batch &b) { b.block_tables.data<int64_t>()[3] = 6; },
                  {"block_tables[1][0] = 6 is outside [0, NB = 6)", "context of 6 tokens"});
  expect_rejected([](Batch &b) { b.block_tables.data<int64_t>()[4] = -2; },
                  {"block_tables[1][1] = -2 is outside [0, NB = 6)"});
  // Entries no context reads may hold anything (ErrorBase's unused ones are
  // already out of range); a slot of -1 is padding, not an error.
  Batch ok = ErrorBase();
  EXPECT_EQ(ok.block_tables.data<int64_t>()[2], ok.nb + 7);
  ok.slots.data<int64_t>()[0] = -1;
  ok.slots.data<int64_t>()[2] = -100;
  auto got = RunOp("paged_attention", attrs, ok.Inputs());
  ASSERT_TRUE(got.ok()) << got.status().message();
}

} // namespace
} // namespace kiln::test
