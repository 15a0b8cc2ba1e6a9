// Index-tuple ops GatherND and ScatterND, and Size, against per-element
// references written from the ONNX definitions.
#include "kernels/cpu/pointwise_cast.h"
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::test {
namespace {

int64_t Wrap(int64_t v, int64_t dim) { return v < 0 ? v + dim : v; }

// GatherND as ONNX defines it: output index o = (tuple position over
// indices.shape[:-1], then slice position over data.shape[b + m:]).
template <typename T>
std::vector<T> NaiveGatherND(const Tensor &data, const Tensor &indices, int64_t b,
                             const Shape &out_shape) {
  const Shape &is = indices.shape;
  const size_t q = is.size();
  const int64_t m = is.back();
  std::vector<T> out;
  for (int64_t i = 0; i < NumElements(out_shape); ++i) {
    const auto o = Unravel(i, out_shape);
    std::vector<int64_t> tuple_at(o.begin(), o.begin() + (q - 1));
    std::vector<int64_t> di(o.begin(), o.begin() + b); // batch coordinates
    for (int64_t j = 0; j < m; ++j) {
      std::vector<int64_t> at = tuple_at;
      at.push_back(j);
      di.push_back(Wrap(indices.data<int64_t>()[Ravel(at, is)], data.shape[b + j]));
    }
    di.insert(di.end(), o.begin() + (q - 1), o.end());
    out.push_back(data.data<T>()[Ravel(di, data.shape)]);
  }
  return out;
}

template <typename T> T NaiveCombine(T old, T u, const std::string &r) {
  if (r == "none")
    return u;
  if (r == "add")
    return static_cast<T>(static_cast<int64_t>(0) + old + u);
  if (r == "mul")
    return static_cast<T>(old * u);
  if (r == "max")
    return std::max(old, u);
  return std::min(old, u);
}

// ScatterND as ONNX defines it: updates applied tuple by tuple, in order.
template <typename T>
std::vector<T> NaiveScatterND(const Tensor &data, const Tensor &indices, const Tensor &updates,
                              const std::string &reduction) {
  std::vector<T> out = data.values<T>();
  const Shape &is = indices.shape;
  const int64_t k = is.back();
  const Shape tuples(is.begin(), is.end() - 1);
  const Shape slice(data.shape.begin() + k, data.shape.end());
  for (int64_t t = 0; t < NumElements(tuples); ++t) {
    const auto tp = Unravel(t, tuples);
    std::vector<int64_t> base;
    for (int64_t j = 0; j < k; ++j) {
      std::vector<int64_t> at = tp;
      at.push_back(j);
      base.push_back(Wrap(indices.data<int64_t>()[Ravel(at, is)], data.shape[j]));
    }
    for (int64_t s = 0; s < NumElements(slice); ++s) {
      const auto sp = Unravel(s, slice);
      std::vector<int64_t> di = base, ui = tp;
      di.insert(di.end(), sp.begin(), sp.end());
      ui.insert(ui.end(), sp.begin(), sp.end());
      T &dst = out[Ravel(di, data.shape)];
      dst = NaiveCombine(dst, updates.data<T>()[Ravel(ui, updates.shape)], reduction);
    }
  }
  return out;
}

// Random valid indices (negative ones included) of `tuples` x k for the
// dims data.shape[first:first + k].
Tensor RandomIndices(const Shape &tuples, int64_t k, const Shape &data, size_t first,
                     std::mt19937 &rng) {
  Shape shape = tuples;
  shape.push_back(k);
  Tensor t(DType::kI64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t dim = data[first + static_cast<size_t>(i % k)];
    t.data<int64_t>()[i] = std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
  }
  return t;
}

// ---- GatherND -----------------------------------------------------------

TEST(GatherND, RandomBatchDimsAndTupleLengths) {
  std::mt19937 rng(71);
  for (int trial = 0; trial < 150; ++trial) {
    Tensor data = Random<float>(RandomShape(rng, 1, 4, 4), rng);
    const int64_t r = static_cast<int64_t>(data.shape.size());
    const int64_t b = static_cast<int64_t>(rng() % r);
    const int64_t m = 1 + static_cast<int64_t>(rng() % (r - b));
    Shape tuples(data.shape.begin(), data.shape.begin() + b);
    const Shape extra = RandomShape(rng, 0, 2, 3);
    tuples.insert(tuples.end(), extra.begin(), extra.end());
    Tensor idx = RandomIndices(tuples, m, data.shape, b, rng);
    auto got = RunOp("gather_nd", Attrs().Int("batch_dims", b), {&data, &idx});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape = tuples;
    shape.insert(shape.end(), data.shape.begin() + b + m, data.shape.end());
    ASSERT_EQ((*got)[0].shape, shape) << ShapeToString(data.shape) << " b=" << b << " m=" << m;
    ASSERT_EQ((*got)[0].values<float>(), NaiveGatherND<float>(data, idx, b, shape));
  }
}

TEST(GatherND, OnnxExamplesAndOtherDTypes) {
  Tensor d2 = Make<int32_t>({2, 2}, {0, 1, 2, 3});
  Tensor i1 = Make<int64_t>({2, 2}, {0, 0, 1, 1});
  auto got = RunOp("gather_nd", Attrs(), {&d2, &i1});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0].values<int32_t>(), (std::vector<int32_t>{0, 3}));
  Tensor i2 = Make<int64_t>({2, 1}, {1, 0});
  got = RunOp("gather_nd", Attrs(), {&d2, &i2});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, (Shape{2, 2}));
  EXPECT_EQ((*got)[0].values<int32_t>(), (std::vector<int32_t>{2, 3, 0, 1}));
  // batch_dims = 1.
  Tensor d3 = Make<float>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor i3 = Make<int64_t>({2, 1}, {1, 0});
  got = RunOp("gather_nd", Attrs().Int("batch_dims", 1), {&d3, &i3});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, (Shape{2, 2}));
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{2, 3, 4, 5}));
  // A padding mask lookup (bool, bytes only) with negative indices, and
  // empty index lists.
  Tensor mask = MakeBool({2, 3}, {1, 0, 1, 0, 1, 1});
  Tensor at = Make<int64_t>({1, 3, 2}, {0, -2, -1, 0, 1, 2});
  got = RunOp("gather_nd", Attrs(), {&mask, &at});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].dtype, DType::kBool);
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{0, 0, 1}));
  Tensor none(DType::kI64, {0, 2});
  got = RunOp("gather_nd", Attrs(), {&mask, &none});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape, (Shape{0}));
}

TEST(GatherND, Errors) {
  Tensor d = Make<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor far = Make<int64_t>({2, 2}, {0, 0, 1, 3});
  ExpectError(RunOp("gather_nd", Attrs(), {&d, &far}).status(),
              {"gather_nd", "index 3", "[1, 1]", "dim 1 of size 3"});
  Tensor neg = Make<int64_t>({1, 1}, {-3});
  ExpectError(RunOp("gather_nd", Attrs(), {&d, &neg}).status(),
              {"gather_nd", "index -3", "dim 0 of size 2"});
  Tensor huge = Make<int64_t>({1}, {std::numeric_limits<int64_t>::min()});
  ExpectError(RunOp("gather_nd", Attrs(), {&d, &huge}).status(), {"gather_nd", "out of range"});
  std::vector<TensorView> out(1);
  Tensor long_tuple = Make<int64_t>({1, 3}, {0, 0, 0});
  ExpectError(InferOp("gather_nd", Attrs(), {&d, &long_tuple}, &out),
              {"gather_nd", "last dim of indices", "[1, 2]"});
  Tensor b1 = Make<int64_t>({2, 2}, {0, 0, 0, 0});
  ExpectError(InferOp("gather_nd", Attrs().Int("batch_dims", 1), {&d, &b1}, &out),
              {"gather_nd", "[1, 1]"});
  ExpectError(InferOp("gather_nd", Attrs().Int("batch_dims", 2), {&d, &b1}, &out),
              {"gather_nd", "batch_dims 2"});
  Tensor b_mismatch = Make<int64_t>({3, 1}, {0, 0, 0});
  ExpectError(InferOp("gather_nd", Attrs().Int("batch_dims", 1), {&d, &b_mismatch}, &out),
              {"gather_nd", "batch dim 0 differs"});
  Tensor i32 = Make<int32_t>({1, 1}, {0});
  ExpectError(InferOp("gather_nd", Attrs(), {&d, &i32}, &out), {"gather_nd", "'indices'"});
}

// ---- ScatterND ----------------------------------------------------------

template <typename T> void CheckRandomScatter(const std::string &reduction, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 60; ++trial) {
    Tensor data = Random<T>(RandomShape(rng, 1, 4, 4), rng, -5, 5);
    const int64_t r = static_cast<int64_t>(data.shape.size());
    const int64_t k = 1 + static_cast<int64_t>(rng() % r);
    const Shape tuples = RandomShape(rng, 0, 2, 4); // duplicates happen
    Tensor idx = RandomIndices(tuples, k, data.shape, 0, rng);
    Shape ushape = tuples;
    ushape.insert(ushape.end(), data.shape.begin() + k, data.shape.end());
    Tensor upd = Random<T>(ushape, rng, -5, 5);
    auto got = RunOp("scatter_nd", Attrs().String("reduction", reduction), {&data, &idx, &upd});
    ASSERT_TRUE(got.ok()) << reduction << ": " << got.status().message();
    ASSERT_EQ((*got)[0].shape, data.shape);
    ASSERT_EQ((*got)[0].values<T>(), NaiveScatterND<T>(data, idx, upd, reduction))
        << reduction << " data " << ShapeToString(data.shape) << " indices "
        << ShapeToString(idx.shape);
  }
}

TEST(ScatterND, RandomAgainstReferenceEveryReduction) {
  uint32_t seed = 80;
  for (const char *r : {"none", "add", "mul", "max", "min"}) {
    CheckRandomScatter<float>(r, ++seed);
    CheckRandomScatter<int64_t>(r, ++seed);
    CheckRandomScatter<double>(r, ++seed);
    CheckRandomScatter<int32_t>(r, ++seed);
  }
  CheckRandomScatter<uint8_t>("none", ++seed);
}

TEST(ScatterND, OnnxExampleDefaultsAndOtherDTypes) {
  // ONNX's example 1: data [1..8], indices [[4], [3], [1], [7]].
  Tensor data = Make<float>({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = Make<int64_t>({4, 1}, {4, 3, 1, 7});
  Tensor upd = Make<float>({4}, {9, 10, 11, 12});
  auto got = RunOp("scatter_nd", Attrs(), {&data, &idx, &upd});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Duplicate tuples accumulate in order; negative indices wrap.
  Tensor dup = Make<int64_t>({3, 1}, {0, -8, 2});
  Tensor three = Make<float>({3}, {1, 2, 3});
  got = RunOp("scatter_nd", Attrs().String("reduction", "add"), {&data, &dup, &three});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{4, 2, 6, 4, 5, 6, 7, 8}));
  // Integer add wraps; max propagates NaN; bool replaces bytes.
  Tensor i8 = Make<int8_t>({2}, {120, 0});
  Tensor i8u = Make<int8_t>({1}, {10});
  Tensor first = Make<int64_t>({1, 1}, {0});
  got = RunOp("scatter_nd", Attrs().String("reduction", "add"), {&i8, &first, &i8u});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<int8_t>(), (std::vector<int8_t>{-126, 0}));
  Tensor f = Make<float>({2}, {1, 2});
  Tensor nan = Make<float>({1}, {std::nanf("")});
  got = RunOp("scatter_nd", Attrs().String("reduction", "max"), {&f, &first, &nan});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(std::isnan((*got)[0].values<float>()[0]));
  Tensor mask = MakeBool({2, 2}, {0, 0, 0, 0});
  Tensor row = MakeBool({1, 2}, {1, 1});
  Tensor r1 = Make<int64_t>({1, 1}, {1});
  got = RunOp("scatter_nd", Attrs(), {&mask, &r1, &row});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].bytes, (std::vector<uint8_t>{0, 0, 1, 1}));
}

TEST(ScatterND, HalfReductionsComputeInF32) {
  for (DType half : {DType::kF16, DType::kBF16}) {
    auto bits = [half](float v) {
      return half == DType::kF16 ? kernels::FloatToHalf(v) : kernels::FloatToBFloat16(v);
    };
    auto value = [half](uint16_t b) {
      return half == DType::kF16 ? kernels::HalfToFloat(b) : kernels::BFloat16ToFloat(b);
    };
    Tensor data(half, {3}), upd(half, {2});
    for (int i = 0; i < 3; ++i)
      data.data<uint16_t>()[i] = bits(float(i + 1));
    upd.data<uint16_t>()[0] = bits(0.5f);
    upd.data<uint16_t>()[1] = bits(4.0f);
    Tensor idx = Make<int64_t>({2, 1}, {2, 2});
    for (const char *r : {"none", "add", "mul", "max"}) {
      auto got = RunOp("scatter_nd", Attrs().String("reduction", r), {&data, &idx, &upd});
      ASSERT_TRUE(got.ok()) << r << ": " << got.status().message();
      ASSERT_EQ((*got)[0].dtype, half);
      const float want = std::string(r) == "none"  ? 4.0f
                         : std::string(r) == "add" ? 7.5f
                         : std::string(r) == "mul" ? 6.0f
                                                   : 4.0f;
      EXPECT_EQ(value((*got)[0].data<uint16_t>()[2]), want) << r;
      EXPECT_EQ(value((*got)[0].data<uint16_t>()[0]), 1.0f) << r;
    }
  }
}

TEST(ScatterND, Errors) {
  Tensor data = Make<float>({2, 3}, std::vector<float>(6, 0));
  Tensor far = Make<int64_t>({2, 2}, {0, 1, 2, 0});
  Tensor upd = Make<float>({2}, {1, 2});
  ExpectError(RunOp("scatter_nd", Attrs(), {&data, &far, &upd}).status(),
              {"scatter_nd", "index 2", "[1, 0]", "dim 0 of size 2"});
  Tensor neg = Make<int64_t>({1, 2}, {0, -4});
  Tensor one = Make<float>({1}, {1});
  ExpectError(RunOp("scatter_nd", Attrs().String("reduction", "add"), {&data, &neg, &one}).status(),
              {"scatter_nd", "index -4", "dim 1 of size 3"});
  std::vector<TensorView> out(1);
  Tensor ok_idx = Make<int64_t>({2, 1}, {0, 1});
  Tensor wrong = Make<float>({2, 2}, {1, 2, 3, 4});
  ExpectError(InferOp("scatter_nd", Attrs(), {&data, &ok_idx, &wrong}, &out),
              {"scatter_nd", "updates [2, 2]", "[2, 3]"});
  ExpectError(
      InferOp("scatter_nd", Attrs().String("reduction", "sub"), {&data, &ok_idx, &wrong}, &out),
      {"scatter_nd", "reduction 'sub'"});
  Tensor long_tuple = Make<int64_t>({1, 3}, {0, 0, 0});
  ExpectError(InferOp("scatter_nd", Attrs(), {&data, &long_tuple, &one}, &out),
              {"scatter_nd", "last dim of indices", "[1, 2]"});
  Tensor mask = MakeBool({2}, {0, 1});
  Tensor m1 = MakeBool({1}, {1});
  Tensor i0 = Make<int64_t>({1, 1}, {0});
  ExpectError(InferOp("scatter_nd", Attrs().String("reduction", "add"), {&mask, &i0, &m1}, &out),
              {"scatter_nd", "not supported for bool"});
  Tensor i64_upd = Make<int64_t>({1}, {1});
  ExpectError(InferOp("scatter_nd", Attrs(), {&mask, &i0, &i64_upd}, &out),
              {"scatter_nd", "same dtype"});
}

// ---- Size ---------------------------------------------------------------

TEST(Size, ElementCountWithoutReadingData) {
  for (const Shape &s : {Shape{}, Shape{0, 4}, Shape{2, 3, 4}, Shape{7}}) {
    Tensor x(DType::kF32, s);
    std::vector<TensorView> out(1);
    // A host op: inference and run see the operand's shape, not its data.
    ASSERT_TRUE(InferOp("size", Attrs(), {&x}, &out, {false}).ok());
    EXPECT_EQ(out[0].dtype, DType::kI64);
    EXPECT_EQ(out[0].shape, Shape{});
    int64_t n = -1;
    out[0].data = &n;
    TensorView view{DType::kF32, s, nullptr};
    ASSERT_TRUE(RunKernel("size", Attrs(), {&view}, out).ok());
    EXPECT_EQ(n, NumElements(s)) << ShapeToString(s);
  }
  std::vector<TensorView> out(1);
  ExpectError(InferOp("size", Attrs(), {}, &out), {"size", "expected 1 operands"});
}

} // namespace
} // namespace kiln::test
