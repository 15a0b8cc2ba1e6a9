// Shape-computing ops (Reshape, Flatten, Squeeze, Unsqueeze, Shape,
// ConstantOfShape, Range), the op table, OpAttrs and tensor helpers.
#include "test_util.h"

#include "backends/cpu/cpu_backend.h"
#include "core/shape_table.h"

#include <algorithm>
#include <limits>

namespace kiln::test {
namespace {

Shape InferredShape(const std::string &op, const OpAttrs &attrs,
                    const std::vector<const Tensor *> &in) {
  std::vector<TensorView> out(1);
  Status st = InferOp(op, attrs, in, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out[0].shape;
}

TEST(Reshape, ZeroMinusOneAndAllowzero) {
  Tensor x = Make<float>({2, 3, 4}, std::vector<float>(24, 1.5f));
  Tensor s1 = Ints({0, -1});
  EXPECT_EQ(InferredShape("reshape", Attrs(), {&x, &s1}), (Shape{2, 12}));
  Tensor s2 = Ints({-1, 0, 2});
  EXPECT_EQ(InferredShape("reshape", Attrs(), {&x, &s2}), (Shape{4, 3, 2}));
  Tensor s3 = Ints({4, 6});
  auto got = RunOp("reshape", Attrs(), {&x, &s3});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, (Shape{4, 6}));
  EXPECT_EQ((*got)[0].bytes, x.bytes);
  Tensor empty(DType::kF32, {0, 3});
  Tensor s4 = Ints({3, 0});
  EXPECT_EQ(InferredShape("reshape", Attrs().Int("allowzero", 1), {&empty, &s4}), (Shape{3, 0}));

  std::vector<TensorView> out(1);
  Tensor two = Ints({-1, -1});
  ExpectError(InferOp("reshape", Attrs(), {&x, &two}, &out), {"reshape", "more than one -1"});
  Tensor bad = Ints({5, -1});
  ExpectError(InferOp("reshape", Attrs(), {&x, &bad}, &out), {"reshape", "[2, 3, 4]", "-1"});
  Tensor wrong = Ints({5, 5});
  ExpectError(InferOp("reshape", Attrs(), {&x, &wrong}, &out),
              {"reshape", "24 elements", "[5, 5]"});
  Tensor both = Ints({0, -1});
  ExpectError(InferOp("reshape", Attrs().Int("allowzero", 1), {&x, &both}, &out),
              {"reshape", "both 0 and -1"});
  Tensor copy_past = Ints({0, 0, 0, 0});
  ExpectError(InferOp("reshape", Attrs(), {&x, &copy_past}, &out), {"reshape", "no such dim"});
  ExpectError(InferOp("reshape", Attrs(), {&x, &s1}, &out, {true, false}),
              {"reshape", "shape of reshape depends on values not known before execution"});
  Tensor neg = Ints({-2, 12});
  ExpectError(InferOp("reshape", Attrs(), {&x, &neg}, &out), {"reshape", "invalid dim -2"});
}

TEST(Flatten, Axes) {
  Tensor x(DType::kF32, {2, 3, 4});
  EXPECT_EQ(InferredShape("flatten", Attrs().Int("axis", 0), {&x}), (Shape{1, 24}));
  EXPECT_EQ(InferredShape("flatten", Attrs(), {&x}), (Shape{2, 12}));
  EXPECT_EQ(InferredShape("flatten", Attrs().Int("axis", 3), {&x}), (Shape{24, 1}));
  EXPECT_EQ(InferredShape("flatten", Attrs().Int("axis", -1), {&x}), (Shape{6, 4}));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("flatten", Attrs().Int("axis", 4), {&x}, &out), {"flatten", "axis 4"});
}

TEST(SqueezeUnsqueeze, AxesOperand) {
  Tensor x(DType::kI64, {1, 3, 1, 2});
  EXPECT_EQ(InferredShape("squeeze", Attrs(), {&x}), (Shape{3, 2}));
  Tensor a = Ints({-2});
  EXPECT_EQ(InferredShape("squeeze", Attrs(), {&x, &a}), (Shape{1, 3, 2}));
  Tensor u = Ints({0, -1, 3});
  Tensor y(DType::kF32, {3, 2});
  EXPECT_EQ(InferredShape("unsqueeze", Attrs(), {&y, &u}), (Shape{1, 3, 2, 1, 1}));
  Tensor s(DType::kF32, {});
  Tensor z = Ints({0});
  EXPECT_EQ(InferredShape("unsqueeze", Attrs(), {&s, &z}), (Shape{1}));
  std::vector<TensorView> out(1);
  Tensor one = Ints({1});
  ExpectError(InferOp("squeeze", Attrs(), {&x, &one}, &out), {"squeeze", "axis 1 of size 3"});
  Tensor dup = Ints({0, 0});
  ExpectError(InferOp("unsqueeze", Attrs(), {&y, &dup}, &out), {"unsqueeze", "more than once"});
  Tensor far = Ints({5});
  ExpectError(InferOp("unsqueeze", Attrs(), {&y, &far}, &out), {"unsqueeze", "axis 5", "rank 3"});
  ExpectError(InferOp("unsqueeze", Attrs(), {&y, &u}, &out, {true, false}),
              {"unsqueeze", "depends on values not known before execution"});
  auto got = RunOp("unsqueeze", Attrs(), {&y, &u});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, y.bytes);
}

TEST(ShapeOp, StartEndClamp) {
  Tensor x(DType::kF32, {2, 3, 4, 5});
  auto got = RunOp("shape", Attrs(), {&x});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].dtype, DType::kI64);
  EXPECT_EQ((*got)[0].values<int64_t>(), (std::vector<int64_t>{2, 3, 4, 5}));
  got = RunOp("shape", Attrs().Int("start", 1).Int("end", -1), {&x});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int64_t>(), (std::vector<int64_t>{3, 4}));
  got = RunOp("shape", Attrs().Int("start", -10).Int("end", 10), {&x});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int64_t>(), (std::vector<int64_t>{2, 3, 4, 5}));
  got = RunOp("shape", Attrs().Int("start", 3).Int("end", 1), {&x});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, Shape{0});
  // Shape works without the input's data.
  std::vector<TensorView> out(1);
  EXPECT_TRUE(InferOp("shape", Attrs(), {&x}, &out, {false}).ok());
}

TEST(ConstantOfShape, DTypeAndValue) {
  Tensor s = Ints({2, 3});
  auto got = RunOp("constant_of_shape", Attrs().Float("value", 1.5f), {&s});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].dtype, DType::kF32); // ONNX default
  EXPECT_EQ((*got)[0].values<float>(), std::vector<float>(6, 1.5f));
  got = RunOp("constant_of_shape",
              Attrs().Int("value", std::numeric_limits<int64_t>::max()).Int("dtype", 8), {&s});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].dtype, DType::kI64);
  EXPECT_EQ((*got)[0].values<int64_t>(),
            std::vector<int64_t>(6, std::numeric_limits<int64_t>::max()));
  // A dtype preset by the caller (from the plan tensor) wins.
  std::vector<TensorView> out(1);
  out[0].dtype = DType::kBool;
  ASSERT_TRUE(InferOp("constant_of_shape", Attrs().Float("value", 1), {&s}, &out).ok());
  EXPECT_EQ(out[0].dtype, DType::kBool);
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  Tensor neg = Ints({2, -1});
  std::vector<TensorView> out2(1);
  ExpectError(InferOp("constant_of_shape", Attrs(), {&neg}, &out2),
              {"constant_of_shape", "negative"});
  ExpectError(InferOp("constant_of_shape", Attrs(), {&s}, &out2, {false}),
              {"constant_of_shape", "depends on values not known before execution"});
}

TEST(Range, FloatIntAndErrors) {
  Tensor s = Make<float>({}, {1}), l = Make<float>({}, {2}), d = Make<float>({}, {0.25f});
  auto got = RunOp("range", Attrs(), {&s, &l, &d});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  Tensor si = Make<int64_t>({}, {10}), li = Make<int64_t>({}, {1}), di = Make<int64_t>({}, {-3});
  got = RunOp("range", Attrs(), {&si, &li, &di});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int64_t>(), (std::vector<int64_t>{10, 7, 4}));
  Tensor up = Make<int64_t>({}, {3});
  got = RunOp("range", Attrs(), {&si, &li, &up});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, Shape{0});
  Tensor s32 = Make<int32_t>({}, {0}), l32 = Make<int32_t>({}, {5}), d32 = Make<int32_t>({}, {2});
  got = RunOp("range", Attrs(), {&s32, &l32, &d32});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int32_t>(), (std::vector<int32_t>{0, 2, 4}));
  std::vector<TensorView> out(1);
  Tensor zero = Make<int64_t>({}, {0});
  ExpectError(InferOp("range", Attrs(), {&si, &li, &zero}, &out), {"range", "delta must not be 0"});
  ExpectError(InferOp("range", Attrs(), {&si, &li, &di}, &out, {true, false, true}),
              {"range", "depends on values not known before execution", "limit"});
  ExpectError(InferOp("range", Attrs(), {&s, &li, &di}, &out), {"range", "same dtype"});
  Tensor mn = Make<int64_t>({}, {std::numeric_limits<int64_t>::min()});
  Tensor mx = Make<int64_t>({}, {std::numeric_limits<int64_t>::max()});
  Tensor one = Make<int64_t>({}, {1});
  ExpectError(InferOp("range", Attrs(), {&mn, &mx, &one}, &out), {"range", "too many"});
}

TEST(OpAttrs, KindsConvertAndFallBack) {
  Attrs a;
  a.Int("i", 3).Float("f", 2.5f).IntList("l", {1, 2});
  const OpAttrs &attrs = a;
  EXPECT_EQ(attrs.Int("i", 0), 3);
  EXPECT_EQ(attrs.Float("i", 0), 3.0f);
  EXPECT_EQ(attrs.Int("f", 0), 2);
  EXPECT_EQ(attrs.Int("missing", 7), 7);
  EXPECT_EQ(attrs.Ints("l"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(attrs.Ints("i"), (std::vector<int64_t>{3}));
  EXPECT_TRUE(attrs.Ints("missing").empty());
  EXPECT_EQ(attrs.Int("l", -1), -1); // a list is not an int
  EXPECT_EQ(attrs.String("i", "x"), "x");
  Attrs huge;
  huge.Float("f", 1e30f);
  EXPECT_EQ(static_cast<const OpAttrs &>(huge).Int("f", -5), -5); // no UB conversion
}

TEST(TensorHelpers, NamesAndShapes) {
  EXPECT_STREQ(DTypeName(DType::kF32), "f32");
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_STREQ(DTypeName(DType::kBool), "bool");
  EXPECT_STREQ(DTypeName(static_cast<DType>(42)), "invalid");
  EXPECT_EQ(ShapeToString({}), "[]");
  EXPECT_EQ(ShapeToString({2, 3}), "[2, 3]");
}

} // namespace
} // namespace kiln::test
