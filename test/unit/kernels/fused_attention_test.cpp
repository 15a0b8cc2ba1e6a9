// Fused rotary and attention ops (docs/fused-ops.md) against naive
// double-precision references, and their shape errors.
#include "fused_test_util.h"

#include <cmath>
#include <limits>

namespace kiln::test {
namespace {

// y by the contract's formula, one element at a time; cos/sin broadcast.
std::vector<double> NaiveRotary(const Tensor &x, const Tensor &cos, const Tensor &sin, int64_t r,
                                bool interleaved) {
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t f = 0; f < x.numel(); ++f) {
    std::vector<int64_t> idx = Unravel(f, x.shape);
    const int64_t c = idx.back();
    if (c >= r) {
      y[f] = At(x, f);
      continue;
    }
    double rot;
    if (interleaved)
      rot = c % 2 == 0 ? -At(x, f + 1) : At(x, f - 1);
    else
      rot = c < r / 2 ? -At(x, f + r / 2) : At(x, f - r / 2);
    y[f] = At(x, f) * At(cos, BroadcastIndex(idx, cos.shape)) +
           rot * At(sin, BroadcastIndex(idx, sin.shape));
  }
  return y;
}

TEST(FusedRotary, RotateHalfAndInterleavedFullAndPartial) {
  std::mt19937 rng(201);
  for (int trial = 0; trial < 32; ++trial) {
    const bool interleaved = trial % 2;
    const int64_t b = 1 + trial % 3, h = 1 + trial % 4, s = 1 + trial % 5;
    const int64_t d = 2 * (1 + trial % 8);
    const int64_t r = trial % 4 < 2 ? d : 2 * (1 + trial % (d / 2)); // full, then partial
    const Shape xs = {b, h, s, d};
    // The usual [1, 1, S, R] tables, and ones that vary over batch or heads.
    Shape cs = {1, 1, s, r};
    if (trial % 3 == 1)
      cs = {b, 1, s, r};
    if (trial % 3 == 2)
      cs = {1, h, 1, r};
    Tensor x = Random<float>(xs, rng), cos = Random<float>(cs, rng, -1, 1);
    Tensor sin = Random<float>(trial % 5 == 0 ? Shape{b, h, s, r} : cs, rng, -1, 1);
    auto got = RunOp("rotary", Attrs().Int("rotary_dim", r).Int("interleaved", interleaved),
                     {&x, &cos, &sin});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].shape, xs);
    std::vector<double> want = NaiveRotary(x, cos, sin, r, interleaved), mag(want.size());
    for (size_t i = 0; i < want.size(); ++i)
      mag[i] = 2 * 2; // |x| <= 2 and |cos|, |sin| <= 1: each term is at most 2
    ExpectClose((*got)[0], want, mag,
                "rotary trial " + std::to_string(trial) + " d=" + std::to_string(d) +
                    " r=" + std::to_string(r));
  }
}

// Attention by the contract's formulas in double; magnitudes sum p|v|.
void NaiveAttention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor *mask,
                    double scale, bool causal, std::vector<double> *out, std::vector<double> *mag) {
  const int64_t B = q.shape[0], Hq = q.shape[1], Sq = q.shape[2], D = q.shape[3];
  const int64_t Hkv = k.shape[1], Skv = k.shape[2], Dv = v.shape[3];
  out->assign(static_cast<size_t>(B * Hq * Sq * Dv), 0);
  mag->assign(out->size(), 0);
  std::vector<double> s(static_cast<size_t>(Skv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t g = h / (Hq / Hkv);
        double mx = -INFINITY;
        for (int64_t j = 0; j < Skv; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot +=
                At(q, ((b * Hq + h) * Sq + i) * D + c) * At(k, ((b * Hkv + g) * Skv + j) * D + c);
          s[j] = scale * dot;
          if (mask != nullptr) {
            const int64_t mi = BroadcastIndex({b, h, i, j}, mask->shape);
            if (mask->dtype == DType::kBool)
              s[j] = mask->bytes[mi] ? s[j] : -INFINITY;
            else
              s[j] += At(*mask, mi);
          }
          if (causal && j > i + (Skv - Sq))
            s[j] = -INFINITY;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < Skv; ++j)
          sum += std::exp(s[j] - mx); // all -inf: NaN, as Softmax gives
        for (int64_t j = 0; j < Skv; ++j) {
          const double p = std::exp(s[j] - mx) / sum;
          for (int64_t c = 0; c < Dv; ++c) {
            const double vv = At(v, ((b * Hkv + g) * Skv + j) * Dv + c);
            const size_t o = static_cast<size_t>(((b * Hq + h) * Sq + i) * Dv + c);
            (*out)[o] += p * vv;
            (*mag)[o] += std::isnan(p) ? 0 : p * std::fabs(vv);
          }
        }
      }
}

struct AttentionCase {
  const char *name;
  int64_t b, hq, hkv, sq, skv, d, dv;
  bool causal;
  int mask;    // 0 none, 1 f32 [1,1,Sq,Skv], 2 f32 [B,1,1,Skv], 3 bool [B,1,Sq,Skv], 4 f32 full
  float scale; // 0: 1/sqrt(d)
};

void RunAttentionCase(const AttentionCase &c, std::mt19937 &rng) {
  SCOPED_TRACE(c.name);
  Tensor q = Random<float>({c.b, c.hq, c.sq, c.d}, rng, -1, 1);
  Tensor k = Random<float>({c.b, c.hkv, c.skv, c.d}, rng, -1, 1);
  Tensor v = Random<float>({c.b, c.hkv, c.skv, c.dv}, rng, -1, 1);
  Tensor mask;
  if (c.mask == 1)
    mask = Random<float>({1, 1, c.sq, c.skv}, rng, -3, 1);
  if (c.mask == 2)
    mask = Random<float>({c.b, 1, 1, c.skv}, rng, -3, 1);
  if (c.mask == 3) {
    mask = RandomBool({c.b, 1, c.sq, c.skv}, rng);
    for (int64_t i = 0; i < mask.numel(); i += c.skv)
      mask.bytes[i] = 1; // keep at least key 0 so rows stay finite
  }
  if (c.mask == 4)
    mask = Random<float>({c.b, c.hq, c.sq, c.skv}, rng, -3, 1);
  const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(float(c.d));
  std::vector<const Tensor *> in = {&q, &k, &v};
  if (c.mask != 0)
    in.push_back(&mask);
  auto got = RunOp("attention", Attrs().Float("scale", scale).Int("causal", c.causal), in);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ((*got)[0].shape, (Shape{c.b, c.hq, c.sq, c.dv}));
  std::vector<double> want, mag;
  NaiveAttention(q, k, v, c.mask != 0 ? &mask : nullptr, scale, c.causal, &want, &mag);
  ExpectClose((*got)[0], want, mag, c.name);
}

TEST(FusedAttention, HeadLayoutsMasksAndCausal) {
  std::mt19937 rng(202);
  const AttentionCase cases[] = {
      {"mha", 2, 3, 3, 5, 5, 8, 8, false, 0, 0},
      {"mha dv != d", 1, 2, 2, 4, 6, 8, 5, false, 0, 0},
      {"gqa 4/2", 2, 4, 2, 3, 7, 16, 16, false, 0, 0},
      {"mqa", 1, 4, 1, 6, 6, 8, 8, false, 0, 0},
      {"causal prefill", 2, 4, 2, 7, 7, 8, 8, true, 0, 0},
      {"causal decode", 2, 4, 2, 1, 9, 8, 8, true, 0, 0},
      {"causal kv cache", 1, 2, 1, 3, 10, 8, 8, true, 0, 0},
      {"f32 mask [1,1,Sq,Skv]", 2, 2, 2, 4, 6, 8, 8, false, 1, 0},
      {"f32 mask [B,1,1,Skv] + causal", 3, 4, 2, 5, 8, 8, 8, true, 2, 0},
      {"bool mask", 2, 4, 4, 4, 5, 8, 8, false, 3, 0},
      {"bool mask + causal gqa", 2, 4, 2, 5, 5, 8, 8, true, 3, 0},
      {"full f32 mask gqa", 2, 4, 2, 3, 4, 4, 4, false, 4, 0},
      {"scale 0.3", 1, 2, 2, 3, 5, 8, 8, false, 0, 0.3f},
      {"scale 1 decode mqa", 2, 8, 1, 1, 33, 16, 16, true, 1, 1.0f},
      // Long keys and many query rows: several score blocks per head group.
      {"long", 1, 4, 2, 300, 1100, 8, 8, true, 2, 0},
  };
  for (const AttentionCase &c : cases)
    RunAttentionCase(c, rng);
}

// A query that may see no key gives zeros (docs/fused-ops.md), where the
// unfused Softmax would give NaN; the other rows match the reference.
TEST(FusedAttention, FullyMaskedRowIsZeroAndOthersMatch) {
  std::mt19937 rng(203);
  Tensor q = Random<float>({1, 1, 2, 4}, rng), k = Random<float>({1, 1, 3, 4}, rng);
  Tensor v = Random<float>({1, 1, 3, 4}, rng);
  Tensor mask = MakeBool({2, 3}, {0, 0, 0, 1, 0, 1});
  auto got = RunOp("attention", Attrs().Float("scale", 0.5f).Int("causal", 0), {&q, &k, &v, &mask});
  ASSERT_TRUE(got.ok()) << got.status().message();
  std::vector<double> want, mag;
  NaiveAttention(q, k, v, &mask, 0.5, false, &want, &mag);
  for (int c = 0; c < 4; ++c) {
    EXPECT_TRUE(std::isnan(want[c]));
    EXPECT_EQ((*got)[0].data<float>()[c], 0.0f);
    want[c] = 0.0;
  }
  ExpectClose((*got)[0], want, mag, "masked rows");
  // Causal with Sq > Skv masks every key of the first query.
  Tensor q3 = Random<float>({1, 1, 3, 4}, rng), k2 = Random<float>({1, 1, 2, 4}, rng);
  Tensor v2 = Random<float>({1, 1, 2, 4}, rng);
  auto c = RunOp("attention", Attrs().Float("scale", 0.5f).Int("causal", 1), {&q3, &k2, &v2});
  ASSERT_TRUE(c.ok()) << c.status().message();
  NaiveAttention(q3, k2, v2, nullptr, 0.5, true, &want, &mag);
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ((*c)[0].data<float>()[e], 0.0f);
    want[e] = 0.0;
  }
  ExpectClose((*c)[0], want, mag, "causal Sq > Skv");
}

TEST(FusedAttention, HalfInputsMatchRoundedF32) {
  std::mt19937 rng(204);
  for (DType half : {DType::kF16, DType::kBF16}) {
    Tensor q = ToHalf(Random<float>({1, 4, 3, 8}, rng), half);
    Tensor k = ToHalf(Random<float>({1, 2, 5, 8}, rng), half);
    Tensor v = ToHalf(Random<float>({1, 2, 5, 8}, rng), half);
    Tensor mask = MakeBool({1, 1, 1, 5}, {1, 1, 0, 1, 1});
    Tensor qf = ToF32(q), kf = ToF32(k), vf = ToF32(v);
    const auto attrs = Attrs().Float("scale", 0.35f).Int("causal", 1);
    auto got = RunOp("attention", attrs, {&q, &k, &v, &mask});
    auto ref = RunOp("attention", attrs, {&qf, &kf, &vf, &mask});
    ASSERT_TRUE(got.ok() && ref.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].dtype, half);
    EXPECT_EQ((*got)[0].bytes, ToHalf((*ref)[0], half).bytes);
  }
}

TEST(FusedRotaryErrors, BadRotaryDimAndTables) {
  Tensor x = Make<float>({1, 2, 3, 8}, std::vector<float>(48, 1));
  Tensor c4 = Make<float>({1, 1, 3, 4}, std::vector<float>(12, 1));
  Tensor c3 = Make<float>({1, 1, 3, 3}, std::vector<float>(9, 1));
  Tensor c10 = Make<float>({1, 1, 3, 10}, std::vector<float>(30, 1));
  Tensor bad_s = Make<float>({1, 1, 2, 4}, std::vector<float>(8, 1));
  Tensor rank3 = Make<float>({1, 3, 4}, std::vector<float>(12, 1));
  std::vector<TensorView> one(1);
  auto attrs = [](int64_t r, int64_t il) {
    return Attrs().Int("rotary_dim", r).Int("interleaved", il);
  };
  ExpectError(InferOp("rotary", attrs(3, 0), {&x, &c3, &c3}, &one),
              {"rotary", "rotary_dim 3 must be even and in [0, D]", "D = 8"});
  ExpectError(InferOp("rotary", attrs(10, 0), {&x, &c10, &c10}, &one), {"rotary", "rotary_dim 10"});
  ExpectError(InferOp("rotary", attrs(4, 0), {&x, &c3, &c4}, &one),
              {"rotary", "operand 'cos' of shape [1, 1, 3, 3]", "rotary_dim = 4"});
  ExpectError(InferOp("rotary", attrs(4, 0), {&x, &c4, &bad_s}, &one),
              {"rotary", "operand 'sin' of shape [1, 1, 2, 4]", "each leading dim 1 or x's"});
  ExpectError(InferOp("rotary", attrs(4, 0), {&x, &rank3, &c4}, &one),
              {"rotary", "operand 'cos'", "x's rank"});
  ExpectError(InferOp("rotary", attrs(4, 2), {&x, &c4, &c4}, &one),
              {"rotary", "attribute 'interleaved' must be 0 or 1, got 2"});
  ExpectError(InferOp("rotary", Attrs().Int("interleaved", 0), {&x, &c4, &c4}, &one),
              {"rotary", "missing attribute 'rotary_dim'"});
  ASSERT_TRUE(InferOp("rotary", attrs(4, 1), {&x, &c4, &c4}, &one).ok());
}

TEST(FusedAttentionErrors, BadHeadsShapesAndMasks) {
  auto zeros = [](Shape s) { return Tensor(DType::kF32, std::move(s)); };
  Tensor q = zeros({2, 4, 3, 8}), k = zeros({2, 2, 5, 8}), v = zeros({2, 2, 5, 6});
  Tensor k3 = zeros({2, 3, 5, 8}), v3 = zeros({2, 3, 5, 6}), kd = zeros({2, 2, 5, 4});
  Tensor vlen = zeros({2, 2, 4, 6}), q3d = zeros({4, 3, 8});
  Tensor m_ok = zeros({2, 1, 1, 5}), m_bad = zeros({1, 1, 3, 4}), m5 = zeros({1, 1, 1, 1, 5});
  Tensor m_i64 = Make<int64_t>({5}, {0, 0, 0, 0, 0});
  const auto attrs = Attrs().Float("scale", 0.125f).Int("causal", 0);
  std::vector<TensorView> one(1);
  ExpectError(InferOp("attention", attrs, {&q, &k3, &v3}, &one),
              {"attention", "Hq must be a multiple of key/value heads Hkv", "k [2, 3, 5, 8]"});
  ExpectError(InferOp("attention", attrs, {&q, &kd, &v}, &one),
              {"attention", "q and k must have the same head dim D"});
  ExpectError(InferOp("attention", attrs, {&q, &k, &vlen}, &one),
              {"attention", "k and v must have the same heads Hkv and length Skv"});
  ExpectError(InferOp("attention", attrs, {&q3d, &k, &v}, &one),
              {"attention", "operand 'q' must be 4-D [B, Hq, Sq, D], got shape [4, 3, 8]"});
  ExpectError(
      InferOp("attention", attrs, {&q, &k, &v, &m_bad}, &one),
      {"attention", "operand 'mask' of shape [1, 1, 3, 4] does not broadcast", "[2, 4, 3, 5]"});
  ExpectError(InferOp("attention", attrs, {&q, &k, &v, &m5}, &one),
              {"attention", "operand 'mask' of shape [1, 1, 1, 1, 5] does not broadcast"});
  ExpectError(InferOp("attention", attrs, {&q, &k, &v, &m_i64}, &one),
              {"attention", "operand 'mask' must be f32 (additive) or bool, got i64"});
  ExpectError(InferOp("attention", Attrs().Float("scale", 1).Int("causal", 3), {&q, &k, &v}, &one),
              {"attention", "attribute 'causal' must be 0 or 1"});
  ExpectError(InferOp("attention", Attrs().Int("causal", 0), {&q, &k, &v}, &one),
              {"attention", "missing attribute 'scale'"});
  ASSERT_TRUE(InferOp("attention", attrs, {&q, &k, &v, &m_ok}, &one).ok());
  EXPECT_EQ(one[0].shape, (Shape{2, 4, 3, 6}));
}

} // namespace
} // namespace kiln::test
