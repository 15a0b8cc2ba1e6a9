// The profiler's cost estimates (core/op_cost.h): products count 2 FLOP per
// multiply-add, bytes count each operand once and each result once, and
// paged attention reads each sequence's context from the block tables'
// width.
#include "core/op_cost.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TensorView V(DType t, Shape s) {
  TensorView v;
  v.dtype = t;
  v.shape = std::move(s);
  return v;
}

TEST(OpCost, LinearCountsRowsTimesKTimesN) {
  TensorView x = V(DType::kBF16, {1, 3, 64}), w = V(DType::kBF16, {64, 96});
  Outputs out = {V(DType::kBF16, {1, 3, 96})};
  const OpCost c = EstimateOpCost("linear", {&x, &w, nullptr}, out);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 64 * 96);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * (3 * 64 + 64 * 96 + 3 * 96));
}

TEST(OpCost, GatedMlpCountsBothProducts) {
  TensorView x = V(DType::kF32, {5, 16}), gu = V(DType::kF32, {16, 2 * 40}),
             down = V(DType::kF32, {40, 16});
  Outputs out = {V(DType::kF32, {5, 16})};
  const OpCost c = EstimateOpCost("gated_mlp", {&x, &gu, &down}, out);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 5 * 16 * 80 + 2.0 * 5 * 40 * 16);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (5 * 16 + 16 * 80 + 40 * 16 + 5 * 16));
}

TEST(OpCost, ElementwiseOpsMoveBytesOnly) {
  TensorView a = V(DType::kF16, {7, 9}), b = V(DType::kF16, {7, 9});
  Outputs out = {V(DType::kF16, {7, 9})};
  const OpCost c = EstimateOpCost("add", {&a, &b}, out);
  EXPECT_EQ(c.flops, 0);
  EXPECT_DOUBLE_EQ(c.bytes, 3 * 2.0 * 63);
}

TEST(OpCost, GatherReadsOnlyTheGatheredRows) {
  // An embedding lookup: 3 rows of a [1000, 64] table.
  TensorView table = V(DType::kBF16, {1000, 64}), ids = V(DType::kI64, {1, 3});
  Outputs out = {V(DType::kBF16, {1, 3, 64})};
  const OpCost c = EstimateOpCost("gather", {&table, &ids}, out);
  EXPECT_EQ(c.flops, 0);
  EXPECT_DOUBLE_EQ(c.bytes, 2 * (2.0 * 3 * 64) + 8.0 * 3);
}

TEST(OpCost, PagedAttentionReadsEachSequencesContext) {
  // Two sequences decoding one token each over tables of 3 blocks of 16:
  // 48 positions of 2 key/value heads of 8 dims each, per sequence.
  const int64_t hq = 4, hkv = 2, d = 8, t = 2, bs = 16, mb = 3;
  TensorView q = V(DType::kBF16, {1, hq, t, d}), k = V(DType::kBF16, {1, hkv, t, d}),
             v = V(DType::kBF16, {1, hkv, t, d});
  TensorView kc = V(DType::kBF16, {100, hkv, bs, d}), vc = V(DType::kBF16, {100, hkv, bs, d});
  TensorView slots = V(DType::kI64, {t}), qs = V(DType::kI64, {3}), ctx = V(DType::kI64, {2}),
             tables = V(DType::kI64, {2, mb});
  Outputs out = {V(DType::kBF16, {1, hq, t, d})};
  const OpCost c =
      EstimateOpCost("paged_attention", {&q, &k, &v, &kc, &vc, &slots, &qs, &ctx, &tables}, out);
  const double context = mb * bs;
  // Each token's query sees (context - 1/2) keys by the causal estimate.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * hq * t * (context - 0.5) * (2 * d));
  const double kv_read = 2 * context * hkv * 2 * d * 2.0;
  const double small = 2.0 * (q.numel() + out[0].numel()) + 2 * 2.0 * (k.numel() + v.numel()) +
                       8.0 * (t + 3 + 2 + 2 * mb);
  EXPECT_DOUBLE_EQ(c.bytes, kv_read + small);
  // The cache tensors' whole size is not what the op reads.
  EXPECT_LT(c.bytes, static_cast<double>(kc.bytes()));
}

} // namespace
} // namespace kiln
