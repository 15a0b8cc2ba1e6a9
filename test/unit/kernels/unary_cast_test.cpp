// Unary math, Not, Identity, Clip and Cast (including half and bfloat16
// rounding) against std:: references and hand-computed bit patterns.
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/fast_math.h"
#include "test_util.h"

#include <cmath>
#include <functional>
#include <limits>

namespace kiln::test {
namespace {

template <typename T>
void CheckUnary(const std::string &op, const std::function<T(T)> &f, double lo, double hi,
                double rtol) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 10; ++trial) {
    Tensor x = Random<T>(RandomShape(rng, 0, 3, 9), rng, lo, hi);
    auto got = RunOp(op, Attrs(), {&x});
    ASSERT_TRUE(got.ok()) << op << ": " << got.status().message();
    ASSERT_EQ((*got)[0].shape, x.shape);
    ASSERT_EQ((*got)[0].dtype, x.dtype);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const T want = f(x.data<T>()[i]);
      if constexpr (std::is_floating_point_v<T>) {
        ASSERT_NEAR((*got)[0].data<T>()[i], want, rtol * (1e-30 + std::fabs(want)))
            << op << "(" << x.data<T>()[i] << ")";
      } else {
        ASSERT_EQ((*got)[0].data<T>()[i], want) << op;
      }
    }
  }
}

TEST(UnaryOps, FloatMathMatchesStd) {
  using F = std::function<float(float)>;
  CheckUnary<float>("sqrt", F([](float v) { return std::sqrt(v); }), 0, 9, 1e-6);
  CheckUnary<float>("reciprocal", F([](float v) { return 1 / v; }), 0.1, 9, 1e-6);
  CheckUnary<float>("neg", F([](float v) { return -v; }), -9, 9, 0);
  CheckUnary<float>("exp", F([](float v) { return std::exp(v); }), -20, 20, 1e-6);
  CheckUnary<float>("log", F([](float v) { return std::log(v); }), 0.01, 9, 1e-6);
  CheckUnary<float>("erf", F([](float v) { return std::erf(v); }), -3, 3, 1e-6);
  CheckUnary<float>("tanh", F([](float v) { return std::tanh(v); }), -5, 5, 1e-6);
  CheckUnary<float>("sigmoid", F([](float v) { return 1 / (1 + std::exp(-v)); }), -20, 20, 1e-6);
  CheckUnary<float>("relu", F([](float v) { return v > 0 ? v : 0; }), -9, 9, 0);
  CheckUnary<float>("abs", F([](float v) { return std::fabs(v); }), -9, 9, 0);
  CheckUnary<float>("floor", F([](float v) { return std::floor(v); }), -9, 9, 0);
  CheckUnary<float>("ceil", F([](float v) { return std::ceil(v); }), -9, 9, 0);
  CheckUnary<float>("sin", F([](float v) { return std::sin(v); }), -9, 9, 1e-6);
  CheckUnary<float>("cos", F([](float v) { return std::cos(v); }), -9, 9, 1e-6);
  CheckUnary<double>("exp", std::function<double(double)>([](double v) { return std::exp(v); }),
                     -20, 20, 1e-14);
}

// Distance in float ulps (at the reference's magnitude) from a double.
double UlpError(float got, double want) {
  const double tiny = std::numeric_limits<float>::min();
  const double ulp = std::fabs(want) < tiny
                         ? std::ldexp(1.0, -149)
                         : std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
  return std::fabs(got - want) / ulp;
}

TEST(FastMath, ExpAndTanhWithinThreeUlp) {
  // Dense sweeps, including the subnormal results of exp, through the array
  // forms (vector body and scalar tail).
  std::vector<float> xs;
  for (float x = -103.5f; x < 88.7f; x += 0.0007f)
    xs.push_back(x);
  std::vector<float> ys(xs.size());
  kernels::ExpF32(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    worst = std::max(worst, UlpError(ys[i], std::exp(double(xs[i]))));
  EXPECT_LE(worst, 3.0);
  xs.clear();
  for (float x = -12.0f; x < 12.0f; x += 0.00011f)
    xs.push_back(x);
  xs.push_back(1e-30f);
  ys.resize(xs.size());
  kernels::TanhF32(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  worst = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    worst = std::max(worst, UlpError(ys[i], std::tanh(double(xs[i]))));
  EXPECT_LE(worst, 3.0);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernels::FastExp(89.0f), inf);
  EXPECT_EQ(kernels::FastExp(inf), inf);
  EXPECT_EQ(kernels::FastExp(-inf), 0.0f);
  EXPECT_EQ(kernels::FastExp(-200.0f), 0.0f);
  EXPECT_EQ(kernels::FastExp(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(kernels::FastExp(std::nanf(""))));
  EXPECT_EQ(kernels::FastTanh(inf), 1.0f);
  EXPECT_EQ(kernels::FastTanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(kernels::FastTanh(std::nanf(""))));
}

TEST(UnaryOps, IntegerNegAbsRelu) {
  using F = std::function<int64_t(int64_t)>;
  CheckUnary<int64_t>("neg", F([](int64_t v) { return -v; }), -99, 99, 0);
  CheckUnary<int64_t>("abs", F([](int64_t v) { return v < 0 ? -v : v; }), -99, 99, 0);
  CheckUnary<int64_t>("relu", F([](int64_t v) { return v < 0 ? 0 : v; }), -99, 99, 0);
  // -MIN wraps rather than being undefined.
  Tensor m = Make<int32_t>({1}, {std::numeric_limits<int32_t>::min()});
  auto got = RunOp("neg", Attrs(), {&m});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].data<int32_t>()[0], std::numeric_limits<int32_t>::min());
}

TEST(UnaryOps, SigmoidSaturatesWithoutNaN) {
  Tensor x = Make<float>({3}, {-1000, 0, 1000});
  auto got = RunOp("sigmoid", Attrs(), {&x});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{0, 0.5f, 1}));
}

TEST(UnaryOps, IsNaNOnEveryFloatType) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor f = Make<float>({4}, {1, nan, inf, -nan});
  auto got = RunOp("is_nan", Attrs(), {&f});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].dtype, DType::kBool);
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{0, 1, 0, 1}));
  Tensor d = Make<double>({2}, {std::nan(""), 0});
  got = RunOp("is_nan", Attrs(), {&d});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{1, 0}));
  Tensor h(DType::kF16, {4});
  const uint16_t half_bits[] = {0x7c00, 0x7c01, 0xfe00, 0x3c00}; // inf, NaN, -NaN, 1
  std::memcpy(h.bytes.data(), half_bits, sizeof(half_bits));
  got = RunOp("is_nan", Attrs(), {&h});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{0, 1, 1, 0}));
  Tensor b(DType::kBF16, {3});
  const uint16_t bf_bits[] = {0x7f80, 0x7fc0, 0x3f80}; // inf, NaN, 1
  std::memcpy(b.bytes.data(), bf_bits, sizeof(bf_bits));
  got = RunOp("is_nan", Attrs(), {&b});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{0, 1, 0}));
  Tensor i = Make<int64_t>({1}, {1});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("is_nan", Attrs(), {&i}, &out), {"is_nan", "i64"});
}

TEST(UnaryOps, NotAndIdentity) {
  Tensor b = MakeBool({4}, {0, 1, 7, 0});
  auto got = RunOp("not", Attrs(), {&b});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{1, 0, 0, 1}));
  Tensor i = Make<int64_t>({2, 2}, {1, 2, 3, 4});
  got = RunOp("identity", Attrs(), {&i});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int64_t>(), i.values<int64_t>());
  EXPECT_EQ((*got)[0].shape, i.shape);
}

TEST(UnaryOps, ClipWithOptionalBounds) {
  Tensor x = Make<float>({5}, {-3, -1, 0, 1, 3});
  Tensor lo = Make<float>({}, {-1.5f}), hi = Make<float>({1}, {2});
  auto both = RunOp("clip", Attrs(), {&x, &lo, &hi});
  auto only_hi = RunOp("clip", Attrs(), {&x, nullptr, &hi});
  auto only_lo = RunOp("clip", Attrs(), {&x, &lo});
  auto none = RunOp("clip", Attrs(), {&x});
  ASSERT_TRUE(both.ok() && only_hi.ok() && only_lo.ok() && none.ok());
  EXPECT_EQ((*both)[0].values<float>(), (std::vector<float>{-1.5f, -1, 0, 1, 2}));
  EXPECT_EQ((*only_hi)[0].values<float>(), (std::vector<float>{-3, -1, 0, 1, 2}));
  EXPECT_EQ((*only_lo)[0].values<float>(), (std::vector<float>{-1.5f, -1, 0, 1, 3}));
  EXPECT_EQ((*none)[0].values<float>(), x.values<float>());
  Tensor xi = Make<int8_t>({3}, {-100, 5, 100});
  Tensor loi = Make<int8_t>({}, {0}), hii = Make<int8_t>({}, {10});
  auto ints = RunOp("clip", Attrs(), {&xi, &loi, &hii});
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ((*ints)[0].values<int8_t>(), (std::vector<int8_t>{0, 5, 10}));
  std::vector<TensorView> out(1);
  Tensor vec = Make<float>({2}, {0, 1});
  ExpectError(InferOp("clip", Attrs(), {&x, &vec}, &out), {"clip", "'min'", "scalar", "[2]"});
}

TEST(UnaryOps, DTypeErrors) {
  Tensor i = Make<int64_t>({2}, {1, 2});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("sqrt", Attrs(), {&i}, &out), {"sqrt", "'X'", "f32", "i64"});
  ExpectError(InferOp("not", Attrs(), {&i}, &out), {"not", "bool", "i64"});
}

// ---- Cast ------------------------------------------------------------------

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Cast, HalfKnownPatterns) {
  using kernels::FloatToHalf;
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff); // below the halfway point to 65536
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00); // ties to even: rounds to inf
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even (0)
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002); // tie to even (2)
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  const uint16_t nan = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
}

TEST(Cast, HalfRoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = kernels::HalfToFloat(static_cast<uint16_t>(h));
    const bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(kernels::FloatToHalf(f), h) << std::hex << h;
  }
  // Reference value of a few patterns.
  EXPECT_EQ(kernels::HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(kernels::HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(kernels::HalfToFloat(0xfbff), -65504.0f);
}

TEST(Cast, HalfRoundsToNearestOnRandomFloats) {
  std::mt19937 rng(12);
  for (int i = 0; i < 20000; ++i) {
    const float f = FromBits(rng());
    if (std::isnan(f) || std::fabs(f) >= 65504.0f)
      continue;
    const uint16_t h = kernels::FloatToHalf(f);
    const float back = kernels::HalfToFloat(h);
    // No other half is closer to f.
    for (int delta : {-1, 1}) {
      const uint16_t n = static_cast<uint16_t>(h + delta);
      if ((n & 0x7fff) >= 0x7c00 || ((n ^ h) & 0x8000))
        continue;
      ASSERT_LE(std::fabs(back - f), std::fabs(kernels::HalfToFloat(n) - f)) << f;
    }
  }
}

TEST(Cast, BFloat16RoundsToNearestEven) {
  using kernels::FloatToBFloat16;
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808000)), 0x3f80); // tie, even stays
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f818000)), 0x3f82); // tie, odd rounds up
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808001)), 0x3f81);
  EXPECT_TRUE(std::isnan(
      kernels::BFloat16ToFloat(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(kernels::BFloat16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(Bits(kernels::BFloat16ToFloat(0x3f81)), 0x3f810000u);
}

TEST(Cast, OpUsesKilnDTypeNumbers) {
  Tensor x = Make<float>({6}, {-2.7f, -0.5f, 0.0f, 1.5f, 3e10f, std::nanf("")});
  auto to_i32 = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kI32)), {&x});
  ASSERT_TRUE(to_i32.ok()) << to_i32.status().message();
  EXPECT_EQ((*to_i32)[0].dtype, DType::kI32);
  // Truncation toward zero, saturation, NaN -> 0.
  EXPECT_EQ((*to_i32)[0].values<int32_t>(),
            (std::vector<int32_t>{-2, 0, 0, 1, std::numeric_limits<int32_t>::max(), 0}));
  auto to_bool = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kBool)), {&x});
  ASSERT_TRUE(to_bool.ok());
  EXPECT_EQ((*to_bool)[0].bytes, (std::vector<uint8_t>{1, 1, 0, 1, 1, 1}));
  auto to_f16 = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kF16)), {&x});
  ASSERT_TRUE(to_f16.ok());
  EXPECT_EQ((*to_f16)[0].dtype, DType::kF16);
  EXPECT_EQ((*to_f16)[0].data<uint16_t>()[3], 0x3e00); // 1.5
  EXPECT_EQ((*to_f16)[0].data<uint16_t>()[4], 0x7c00); // overflow -> inf
  auto back = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kF64)), {&(*to_f16)[0]});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].data<double>()[0], -2.69921875); // -2.7 in half precision
  Tensor i = Make<int64_t>({3}, {-1, 0, 300});
  auto to_u8 = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kU8)), {&i});
  ASSERT_TRUE(to_u8.ok());
  EXPECT_EQ((*to_u8)[0].values<uint8_t>(), (std::vector<uint8_t>{255, 0, 44})); // wraps
  Tensor b = MakeBool({2}, {5, 0});
  auto b_to_f = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kF32)), {&b});
  ASSERT_TRUE(b_to_f.ok());
  EXPECT_EQ((*b_to_f)[0].values<float>(), (std::vector<float>{1, 0}));
  auto same = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kI64)), {&i});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)[0].values<int64_t>(), i.values<int64_t>());
  Tensor big = Make<double>({2}, {1e300, -1e300});
  auto d_to_f = RunOp("cast", Attrs().Int("to", static_cast<int>(DType::kF32)), {&big});
  ASSERT_TRUE(d_to_f.ok());
  EXPECT_EQ((*d_to_f)[0].data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ((*d_to_f)[0].data<float>()[1], -std::numeric_limits<float>::infinity());
}

TEST(Cast, Errors) {
  Tensor x = Make<float>({1}, {1});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("cast", Attrs(), {&x}, &out), {"cast", "'to'", "missing"});
  // ONNX's number for int64 is 7, kiln's is 8; 16 (ONNX bfloat16) is not a kiln dtype.
  ExpectError(InferOp("cast", Attrs().Int("to", 16), {&x}, &out), {"cast", "16", "kiln dtype"});
  ExpectError(InferOp("cast", Attrs().Int("to", 0), {&x}, &out), {"cast", "kiln dtype"});
}

} // namespace
} // namespace kiln::test
