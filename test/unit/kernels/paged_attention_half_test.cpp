// paged_attention with f16 and bf16 operands (docs/fused-ops.md): the caches
// are updated in place in their own type, bit for bit the round-to-nearest-
// even values of the f32 rows stored; the output is the f32 op's on the
// widened operands, rounded once; mixed dtypes are refused; and the op is
// kept out of half_via_f32, whose copies of the caches would lose the stores.
#include "backends/cpu/half_via_f32.h"
#include "core/shape_table.h"
#include "kernels/cpu/attention_paged.h"
#include "paged_test_util.h"

#include <cmath>

namespace kiln::test {
namespace {

constexpr DType kHalves[] = {DType::kF16, DType::kBF16};

// b's five float operands rounded to `half`.
Batch Rounded(const Batch &b, DType half) {
  Batch h = b;
  for (Tensor *t : {&h.q, &h.k_new, &h.v_new, &h.k_cache, &h.v_cache})
    *t = ToHalf(*t, half);
  return h;
}

// h's float operands widened to f32: exactly the values the half op reads.
Batch Widened(const Batch &h) {
  Batch w = h;
  for (Tensor *t : {&w.q, &w.k_new, &w.v_new, &w.k_cache, &w.v_cache})
    *t = ToF32(*t);
  return w;
}

// Half of one unit in the last place, relative: RNE's largest error.
double HalfUlp(DType half) {
  return half == DType::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
}

// Runs the op on `sp`'s batch rounded to `half` and checks both caches and
// the output.
void CheckHalfBatch(const Spec &sp, DType half, std::mt19937 &rng, const std::string &label) {
  SCOPED_TRACE(label + (half == DType::kF16 ? " (f16)" : " (bf16)"));
  const Batch f = MakeBatch(sp, rng);
  Batch h = Rounded(f, half);
  Batch w = Widened(h);
  // Every stored row is its f32 value rounded to nearest even, every other
  // row is as it was.
  Tensor want_k = f.k_cache, want_v = f.v_cache;
  StoreRef(f, &want_k, &want_v);
  want_k = ToHalf(want_k, half);
  want_v = ToHalf(want_v, half);
  const auto attrs = Attrs().Float("scale", 1.0f / std::sqrt(static_cast<float>(sp.d)));
  auto got = RunOp("paged_attention", attrs, h.Inputs());
  ASSERT_TRUE(got.ok()) << got.status().message();
  const Tensor &out = (*got)[0];
  ASSERT_EQ(out.dtype, half);
  ASSERT_EQ(out.shape, (Shape{1, sp.hq, f.q.shape[2], sp.dv}));
  EXPECT_EQ(h.k_cache.bytes, want_k.bytes) << "k_cache";
  EXPECT_EQ(h.v_cache.bytes, want_v.bytes) << "v_cache";
  // The reference: the f32 kernel on the widened operands, whose output
  // the half op's must equal rounded once (the 1e-6 covers f16's
  // subnormals, the 1.001 an f32 accumulation order that ties differently).
  auto ref = RunOp("paged_attention", attrs, w.Inputs());
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const Tensor wide = ToF32(out);
  for (int64_t i = 0; i < wide.numel(); ++i) {
    const double r = At((*ref)[0], i);
    ASSERT_NEAR(At(wide, i), r, 1.001 * HalfUlp(half) * std::fabs(r) + 1e-6) << "element " << i;
  }
}

TEST(PagedAttentionHalf, MatchesF32OnWidenedValues) {
  std::mt19937 rng(311);
  // {hq, hkv, d, dv, bs, news, ctxs, pad}; head dims off multiples of 8
  // and 16, decode (direct) and longer (gathered) sequences mixed.
  const std::pair<const char *, Spec> cases[] = {
      {"one decode, d 5, dv 7", {2, 2, 5, 7, 4, {1}, {9}}},
      {"gqa 6/2, d 13, dv 3", {6, 2, 13, 3, 4, {1, 7, 3, 1}, {11, 7, 19, 2}}},
      {"mqa 5/1, d 24, long context", {5, 1, 24, 17, 16, {1, 2}, {203, 40}}},
      {"chunk + decode, bs 1", {4, 2, 6, 10, 1, {1, 30}, {30, 45}}},
      {"padding and empty sequences", {4, 4, 11, 11, 4, {3, 0, 1, 4}, {3, 5, 8, 10}, 0.5}},
      {"direct and gathered chunks", {4, 2, 8, 8, 4, {2, 4, 5, 3}, {10, 4, 12, 3}}},
      {"long prefill, row blocks", {2, 1, 9, 9, 16, {600}, {600}}},
  };
  for (DType half : kHalves)
    for (const auto &[name, sp] : cases)
      CheckHalfBatch(sp, half, rng, name);
}

// Random N in 1..5 sequences of mixed kinds, odd head dims, MHA/GQA/MQA.
TEST(PagedAttentionHalf, RandomBatches) {
  std::mt19937 rng(312);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t heads[][2] = {{3, 3}, {8, 2}, {6, 1}};
  int trial = 0;
  for (DType half : kHalves)
    for (const auto &hh : heads)
      for (int64_t bs : {1, 5, 16}) {
        Spec sp{hh[0], hh[1], pick(1, 19), pick(1, 19), bs, {}, {}, trial % 3 == 2 ? 0.2 : 0};
        for (int64_t s = 0, n = pick(1, 5); s < n; ++s) {
          const int kind = static_cast<int>(pick(0, 2));
          const int64_t ctx = pick(1, 45);
          sp.ctxs.push_back(ctx);
          sp.news.push_back(kind == 0 ? 1 : kind == 1 ? ctx : pick(1, ctx));
        }
        CheckHalfBatch(sp, half, rng, "trial " + std::to_string(trial++));
      }
}

// half_via_f32 hands an op f32 copies of its half operands; the stores
// into the caches would land in those copies and be lost. The op handles
// f16 and bf16 itself (the in-place checks above fail if it is wrapped).
TEST(PagedAttentionHalf, NotWrappedByHalfViaF32) {
  EXPECT_FALSE(ComputesInF32ForHalf("paged_attention"));
  EXPECT_TRUE(ComputesInF32ForHalf("attention")); // the dense op, which writes no cache
}

// The kernel takes only f16 and bf16 bit patterns and touches nothing
// for another kind.
TEST(PagedAttentionHalf, KernelRefusesOtherKinds) {
  std::mt19937 rng(313);
  Batch h = Rounded(MakeBatch({2, 1, 4, 4, 4, {1}, {3}}, rng), DType::kF16);
  const std::vector<uint8_t> k = h.k_cache.bytes, v = h.v_cache.bytes;
  std::vector<uint16_t> out(8, 0x1234);
  const kernels::PagedBatch b = {h.slots.data<int64_t>(), h.query_start.data<int64_t>(),
                                 h.context_lens.data<int64_t>(), h.block_tables.data<int64_t>()};
  kernels::PagedAttentionDims d;
  d.q_heads = 2, d.kv_heads = 1, d.tokens = 1, d.head_dim = 4, d.v_dim = 4;
  d.num_blocks = h.nb, d.block_size = 4, d.num_seqs = 1, d.max_blocks = h.mb;
  kernels::SetPagedStrides(d, /*token_major=*/false);
  for (kernels::ElemType kind : {kernels::ElemType::kF32, kernels::ElemType::kI32})
    EXPECT_FALSE(kernels::PagedAttention(kind, h.q.data<uint16_t>(), h.k_new.data<uint16_t>(),
                                         h.v_new.data<uint16_t>(), h.k_cache.data<uint16_t>(),
                                         h.v_cache.data<uint16_t>(), b, out.data(), d, 1.0f));
  EXPECT_EQ(h.k_cache.bytes, k);
  EXPECT_EQ(h.v_cache.bytes, v);
  EXPECT_EQ(out, std::vector<uint16_t>(8, 0x1234));
  EXPECT_TRUE(kernels::PagedAttention(kernels::ElemType::kF16, h.q.data<uint16_t>(),
                                      h.k_new.data<uint16_t>(), h.v_new.data<uint16_t>(),
                                      h.k_cache.data<uint16_t>(), h.v_cache.data<uint16_t>(), b,
                                      out.data(), d, 1.0f));
  EXPECT_NE(h.k_cache.bytes, k); // the new token's key was stored
}

// ---- errors ----------------------------------------------------------------

TEST(PagedAttentionHalfErrors, DTypes) {
  const auto attrs = Attrs().Float("scale", 0.5f);
  std::vector<TensorView> one(1);
  auto infer = [&](DType half, void (*edit)(Batch &)) {
    Batch b = half == DType::kF32 ? ErrorBase() : Rounded(ErrorBase(), half);
    edit(b);
    return InferOp("paged_attention", attrs, b.Inputs(), &one);
  };
  ExpectError(
      infer(DType::kF16, [](Batch &b) { b.k_cache = ToHalf(ToF32(b.k_cache), DType::kBF16); }),
      {"paged_attention", "operand 'k_cache' is bf16 but 'q' is f16",
       "q, k_new, v_new, k_cache and v_cache must share one dtype (f32, f16 or bf16)"});
  ExpectError(infer(DType::kF32, [](Batch &b) { b.v_new = ToHalf(b.v_new, DType::kF16); }),
              {"operand 'v_new' is f16 but 'q' is f32"});
  ExpectError(infer(DType::kBF16, [](Batch &b) { b.k_new = ToF32(b.k_new); }),
              {"operand 'k_new' is f32 but 'q' is bf16"});
  ExpectError(infer(DType::kF16, [](Batch &b) { b.v_cache = ToF32(b.v_cache); }),
              {"operand 'v_cache' is f32 but 'q' is f16"});
  ExpectError(infer(DType::kF32, [](Batch &b) { b.q = Tensor(DType::kI32, b.q.shape); }),
              {"operand 'q' must be f32, f16 or bf16, got i32"});
  ExpectError(infer(DType::kF16,
                    [](Batch &b) {
                      b.slots = Make<int32_t>({3}, {0, 1, 2});
                    }),
              {"operand 'slots' must be i64, got i32"});
  ExpectError(infer(DType::kBF16,
                    [](Batch &b) { b.block_tables = Tensor(DType::kI32, b.block_tables.shape); }),
              {"operand 'block_tables' must be i64, got i32"});
  ExpectError(infer(DType::kF32,
                    [](Batch &b) {
                      b.query_start = Make<int32_t>({3}, {0, 2, 3});
                    }),
              {"operand 'query_start' must be i64, got i32"});
  // The output takes q's dtype.
  for (DType half : kHalves) {
    ASSERT_TRUE(infer(half, [](Batch &) {}).ok());
    EXPECT_EQ(one[0].dtype, half);
    EXPECT_EQ(one[0].shape, (Shape{1, 4, 3, 6}));
  }
}

// A bad index is rejected before anything is written, in half as in f32.
TEST(PagedAttentionHalfErrors, IndexValuesLeaveCachesUntouched) {
  for (DType half : kHalves) {
    Batch b = Rounded(ErrorBase(), half);
    b.block_tables.data<int64_t>()[3] = 6;
    const std::vector<uint8_t> k = b.k_cache.bytes, v = b.v_cache.bytes;
    ExpectError(RunOp("paged_attention", Attrs().Float("scale", 0.5f), b.Inputs()).status(),
                {"block_tables[1][0] = 6 is outside [0, NB = 6)"});
    EXPECT_EQ(b.k_cache.bytes, k);
    EXPECT_EQ(b.v_cache.bytes, v);
  }
}

} // namespace
} // namespace kiln::test
