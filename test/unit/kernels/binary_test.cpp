// Broadcasting binary ops, comparisons, logic, Max/Min and Where against
// per-element references.
#include "test_util.h"

#include <cmath>
#include <functional>
#include <limits>

namespace kiln::test {
namespace {

// Random operand shapes that broadcast together; every third trial one
// operand has the full result shape (the row fast paths), sometimes both.
std::pair<Shape, Shape> RandomPair(std::mt19937 &rng, int trial) {
  const Shape out = RandomShape(rng, 0, 4, 5);
  Shape sa = BroadcastableTo(out, rng), sb = BroadcastableTo(out, rng);
  if (trial % 3 == 0)
    sa = out;
  if (trial % 7 == 0)
    sb = out;
  if (trial % 2)
    std::swap(sa, sb);
  return {sa, sb};
}

template <typename T, typename R, typename F>
void CheckBinary(const std::string &op, F f, std::mt19937 &rng, double lo, double hi,
                 DType out_dtype = DTypeOf<R>()) {
  for (int trial = 0; trial < 80; ++trial) {
    auto [sa, sb] = RandomPair(rng, trial);
    Tensor a = Random<T>(sa, rng, lo, hi), b = Random<T>(sb, rng, lo, hi);
    auto got = RunOp(op, Attrs(), {&a, &b});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape;
    ASSERT_TRUE(NaiveBroadcast(sa, sb, &shape));
    const Tensor &r = (*got)[0];
    ASSERT_EQ(r.shape, shape) << op << " " << ShapeToString(sa) << " " << ShapeToString(sb);
    ASSERT_EQ(r.dtype, out_dtype);
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      const auto idx = Unravel(i, shape);
      const R want = f(a.data<T>()[BroadcastIndex(idx, sa)], b.data<T>()[BroadcastIndex(idx, sb)]);
      const R have = r.data<R>()[i];
      if constexpr (std::is_floating_point_v<R>) {
        ASSERT_NEAR(have, want, 1e-5 * (1 + std::fabs(want))) << op << " at " << i;
      } else {
        ASSERT_EQ(have, want) << op << " at " << i << " " << ShapeToString(sa) << " "
                              << ShapeToString(sb);
      }
    }
  }
}

TEST(BinaryOps, FloatArithmeticMatchesReference) {
  std::mt19937 rng(1);
  CheckBinary<float, float>(
      "add", [](float x, float y) { return x + y; }, rng, -3, 3);
  CheckBinary<float, float>(
      "sub", [](float x, float y) { return x - y; }, rng, -3, 3);
  CheckBinary<float, float>(
      "mul", [](float x, float y) { return x * y; }, rng, -3, 3);
  CheckBinary<float, float>(
      "div", [](float x, float y) { return x / y; }, rng, 0.5, 3);
  CheckBinary<float, float>(
      "pow", [](float x, float y) { return std::pow(x, y); }, rng, 0.1, 3);
  CheckBinary<float, float>(
      "max", [](float x, float y) { return std::max(x, y); }, rng, -3, 3);
  CheckBinary<float, float>(
      "min", [](float x, float y) { return std::min(x, y); }, rng, -3, 3);
  CheckBinary<double, double>(
      "add", [](double x, double y) { return x + y; }, rng, -3, 3);
}

TEST(BinaryOps, IntegerArithmeticMatchesReference) {
  std::mt19937 rng(2);
  CheckBinary<int64_t, int64_t>(
      "add", [](int64_t x, int64_t y) { return x + y; }, rng, -100, 100);
  CheckBinary<int64_t, int64_t>(
      "mul", [](int64_t x, int64_t y) { return x * y; }, rng, -100, 100);
  CheckBinary<int32_t, int32_t>(
      "sub", [](int32_t x, int32_t y) { return x - y; }, rng, -100, 100);
  CheckBinary<int32_t, int32_t>(
      "div", [](int32_t x, int32_t y) { return x / y; }, rng, 1, 50);
  CheckBinary<uint8_t, uint8_t>(
      "add", [](uint8_t x, uint8_t y) { return uint8_t(x + y); }, rng, 0, 255);
  CheckBinary<int8_t, int8_t>(
      "max", [](int8_t x, int8_t y) { return std::max(x, y); }, rng, -128, 127);
}

TEST(BinaryOps, ComparisonsGiveBool) {
  std::mt19937 rng(3);
  using B = uint8_t;
  CheckBinary<float, B>(
      "equal", [](float x, float y) -> B { return x == y; }, rng, 0, 2, DType::kBool);
  CheckBinary<int64_t, B>(
      "equal", [](int64_t x, int64_t y) -> B { return x == y; }, rng, 0, 3, DType::kBool);
  CheckBinary<float, B>(
      "less", [](float x, float y) -> B { return x < y; }, rng, -1, 1, DType::kBool);
  CheckBinary<int32_t, B>(
      "greater", [](int32_t x, int32_t y) -> B { return x > y; }, rng, -3, 3, DType::kBool);
  CheckBinary<int64_t, B>(
      "less_or_equal", [](int64_t x, int64_t y) -> B { return x <= y; }, rng, -3, 3, DType::kBool);
  CheckBinary<double, B>(
      "greater_or_equal", [](double x, double y) -> B { return x >= y; }, rng, -1, 1, DType::kBool);
}

TEST(BinaryOps, LogicOnBool) {
  std::mt19937 rng(4);
  for (const char *op : {"and", "or", "xor", "equal"}) {
    for (int trial = 0; trial < 40; ++trial) {
      auto [sa, sb] = RandomPair(rng, trial);
      Tensor a = RandomBool(sa, rng), b = RandomBool(sb, rng);
      // Any non-zero byte is true.
      for (auto &v : a.bytes)
        v = v ? static_cast<uint8_t>(1 + rng() % 200) : 0;
      auto got = RunOp(op, Attrs(), {&a, &b});
      ASSERT_TRUE(got.ok()) << got.status().message();
      Shape shape;
      ASSERT_TRUE(NaiveBroadcast(sa, sb, &shape));
      for (int64_t i = 0; i < NumElements(shape); ++i) {
        const auto idx = Unravel(i, shape);
        const bool x = a.bytes[BroadcastIndex(idx, sa)] != 0;
        const bool y = b.bytes[BroadcastIndex(idx, sb)] != 0;
        const std::string o = op;
        const bool want = o == "and" ? x && y : o == "or" ? x || y : o == "xor" ? x != y : x == y;
        ASSERT_EQ((*got)[0].bytes[i], want ? 1 : 0) << op;
      }
    }
  }
}

TEST(BinaryOps, LargeSameShapeAndScalarFastPaths) {
  std::mt19937 rng(5);
  Tensor a = Random<float>({3, 1000}, rng), b = Random<float>({3, 1000}, rng);
  Tensor s = Make<float>({}, {2.5f});
  Tensor row = Random<float>({1000}, rng);
  auto same = RunOp("mul", Attrs(), {&a, &b});
  auto scalar = RunOp("sub", Attrs(), {&s, &a});
  auto rowwise = RunOp("add", Attrs(), {&a, &row});
  ASSERT_TRUE(same.ok() && scalar.ok() && rowwise.ok());
  for (int64_t i = 0; i < 3000; ++i) {
    ASSERT_FLOAT_EQ((*same)[0].data<float>()[i], a.data<float>()[i] * b.data<float>()[i]);
    ASSERT_FLOAT_EQ((*scalar)[0].data<float>()[i], 2.5f - a.data<float>()[i]);
    ASSERT_FLOAT_EQ((*rowwise)[0].data<float>()[i],
                    a.data<float>()[i] + row.data<float>()[i % 1000]);
  }
}

TEST(BinaryOps, PowFastPathsAndMixedTypes) {
  std::mt19937 rng(6);
  Tensor x = Random<float>({4, 7}, rng, 0.1, 3);
  for (float e : {2.0f, 3.0f, 0.5f, 1.0f, 1.7f}) {
    Tensor ex = Make<float>({1}, {e});
    auto got = RunOp("pow", Attrs(), {&x, &ex});
    ASSERT_TRUE(got.ok());
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_NEAR((*got)[0].data<float>()[i], std::pow(x.data<float>()[i], e),
                  2e-6 * std::pow(x.data<float>()[i], e));
  }
  // ONNX allows a differently typed exponent; the result has the base type.
  Tensor base = Make<float>({3}, {1, 2, 3});
  Tensor ei = Make<int64_t>({3}, {4, 5, 6});
  auto got = RunOp("pow", Attrs(), {&base, &ei});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0].dtype, DType::kF32);
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{1, 32, 729}));
  Tensor ib = Make<int32_t>({3}, {1, 2, 3});
  Tensor fe = Make<float>({3}, {4, 5, 6});
  got = RunOp("pow", Attrs(), {&ib, &fe});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int32_t>(), (std::vector<int32_t>{1, 32, 729}));
}

TEST(BinaryOps, IntegerEdgeCasesAreDefined) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor a = Make<int64_t>({4}, {7, kMin, 5, std::numeric_limits<int64_t>::max()});
  Tensor b = Make<int64_t>({4}, {0, -1, -2, 1});
  auto div = RunOp("div", Attrs(), {&a, &b});
  ASSERT_TRUE(div.ok());
  // Division by zero gives 0; MIN / -1 wraps; division truncates.
  EXPECT_EQ((*div)[0].values<int64_t>(), (std::vector<int64_t>{0, kMin, -2, a.data<int64_t>()[3]}));
  auto add = RunOp("add", Attrs(), {&a, &b});
  ASSERT_TRUE(add.ok());
  EXPECT_EQ((*add)[0].data<int64_t>()[3], kMin); // wraps
}

TEST(BinaryOps, MaxMinPropagateNaNAndTakeManyOperands) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Make<float>({3}, {1, nan, 3});
  Tensor b = Make<float>({3}, {2, 0, nan});
  auto mx = RunOp("max", Attrs(), {&a, &b});
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ((*mx)[0].data<float>()[0], 2);
  EXPECT_TRUE(std::isnan((*mx)[0].data<float>()[1]));
  EXPECT_TRUE(std::isnan((*mx)[0].data<float>()[2]));

  Tensor x = Make<float>({2, 1}, {1, 5});
  Tensor y = Make<float>({3}, {4, 0, 2});
  Tensor z = Make<float>({}, {3});
  auto mn = RunOp("min", Attrs(), {&x, &y, &z});
  ASSERT_TRUE(mn.ok()) << mn.status().message();
  EXPECT_EQ((*mn)[0].shape, (Shape{2, 3}));
  EXPECT_EQ((*mn)[0].values<float>(), (std::vector<float>{1, 0, 1, 3, 0, 2}));
  auto one = RunOp("max", Attrs(), {&y});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].values<float>(), y.values<float>());
}

TEST(BinaryOps, WhereBroadcastsThreeWays) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const Shape out = RandomShape(rng, 0, 4, 4);
    Shape sc = BroadcastableTo(out, rng), sx = BroadcastableTo(out, rng),
          sy = BroadcastableTo(out, rng);
    if (trial % 3 == 0)
      sc = out;
    if (trial % 4 == 1)
      sx = out;
    Tensor c = RandomBool(sc, rng);
    Tensor x = Random<int64_t>(sx, rng, -50, 50), y = Random<int64_t>(sy, rng, -50, 50);
    auto got = RunOp("where", Attrs(), {&c, &x, &y});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape s1, shape;
    ASSERT_TRUE(NaiveBroadcast(sc, sx, &s1) && NaiveBroadcast(s1, sy, &shape));
    ASSERT_EQ((*got)[0].shape, shape);
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      const auto idx = Unravel(i, shape);
      const int64_t want = c.bytes[BroadcastIndex(idx, sc)]
                               ? x.data<int64_t>()[BroadcastIndex(idx, sx)]
                               : y.data<int64_t>()[BroadcastIndex(idx, sy)];
      ASSERT_EQ((*got)[0].data<int64_t>()[i], want);
    }
  }
  // Element sizes 1, 2 and 4 too.
  Tensor c = MakeBool({3}, {1, 0, 1});
  Tensor xf = Make<float>({3}, {1, 2, 3}), yf = Make<float>({}, {-1});
  auto got = RunOp("where", Attrs(), {&c, &xf, &yf});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{1, -1, 3}));
  Tensor xb = MakeBool({3}, {1, 1, 1}), yb = MakeBool({3}, {0, 0, 0});
  got = RunOp("where", Attrs(), {&c, &xb, &yb});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{1, 0, 1}));
}

TEST(BinaryOps, Errors) {
  Tensor a = Make<float>({2, 3}, std::vector<float>(6, 1));
  Tensor b = Make<float>({4}, std::vector<float>(4, 1));
  Tensor i = Make<int64_t>({3}, {1, 2, 3});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("add", Attrs(), {&a, &b}, &out), {"add", "[2, 3]", "[4]", "broadcast"});
  ExpectError(InferOp("mul", Attrs(), {&a, &i}, &out), {"mul", "same dtype", "f32", "i64"});
  ExpectError(InferOp("and", Attrs(), {&a, &a}, &out), {"and", "bool", "f32"});
  ExpectError(InferOp("where", Attrs(), {&a, &a, &a}, &out), {"where", "condition", "bool"});
  ExpectError(InferOp("sub", Attrs(), {&a}, &out), {"sub", "expected 2 operands, got 1"});
  std::vector<TensorView> two(2);
  ExpectError(InferOp("add", Attrs(), {&a, &a}, &two), {"add", "expected 1 results, got 2"});
  ExpectError(InferOp("add", Attrs(), {&a, nullptr}, &out), {"add", "operand 1 is required"});
}

} // namespace
} // namespace kiln::test
