// Reductions, Softmax/LogSoftmax and LayerNormalization against naive
// per-element references.
#include "test_util.h"

#include <cmath>
#include <limits>

namespace kiln::test {
namespace {

// Naive reduction: every input element is added to the output element whose
// index is its own with reduced dims zeroed.
template <typename T>
std::vector<double> NaiveReduce(const std::string &op, const Tensor &x,
                                const std::vector<bool> &reduce) {
  Shape out_shape = x.shape;
  for (size_t d = 0; d < reduce.size(); ++d)
    if (reduce[d])
      out_shape[d] = 1;
  const int64_t n = NumElements(out_shape);
  const bool is_max = op == "reduce_max", is_min = op == "reduce_min";
  std::vector<double> acc(static_cast<size_t>(n), is_max ? -INFINITY : (is_min ? INFINITY : 0.0));
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto idx = Unravel(i, x.shape);
    for (size_t d = 0; d < reduce.size(); ++d)
      if (reduce[d])
        idx[d] = 0;
    const int64_t o = Ravel(idx, out_shape);
    const double v = x.data<T>()[i];
    acc[o] = is_max ? std::max(acc[o], v) : is_min ? std::min(acc[o], v) : acc[o] + v;
    ++count[o];
  }
  if (op == "reduce_mean")
    for (int64_t o = 0; o < n; ++o)
      acc[o] /= static_cast<double>(count[o]);
  return acc;
}

TEST(Reduce, RandomAxesAndKeepdims) {
  std::mt19937 rng(31);
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    for (int trial = 0; trial < 50; ++trial) {
      // Up to rank 6 so that three separate reduced groups occur.
      Tensor x = Random<float>(RandomShape(rng, 1, 6, 4), rng);
      const int64_t rank = static_cast<int64_t>(x.shape.size());
      std::vector<int64_t> axes;
      std::vector<bool> reduce(static_cast<size_t>(rank), false);
      for (int64_t d = 0; d < rank; ++d)
        if (rng() % 2) {
          axes.push_back(rng() % 2 ? d : d - rank); // negative axes too
          reduce[d] = true;
        }
      const bool keepdims = trial % 2;
      Tensor axes_t = Ints(axes);
      auto got = RunOp(op, Attrs().Int("keepdims", keepdims), {&x, &axes_t});
      ASSERT_TRUE(got.ok()) << got.status().message();
      if (axes.empty())
        reduce.assign(reduce.size(), true); // empty axes: all dims
      Shape want_shape;
      for (int64_t d = 0; d < rank; ++d) {
        if (!reduce[d])
          want_shape.push_back(x.shape[d]);
        else if (keepdims)
          want_shape.push_back(1);
      }
      ASSERT_EQ((*got)[0].shape, want_shape) << op;
      const auto want = NaiveReduce<float>(op, x, reduce);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR((*got)[0].data<float>()[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << op;
    }
  }
}

TEST(Reduce, IntegerAndLongRows) {
  std::mt19937 rng(32);
  Tensor x = Random<int64_t>({3, 1001}, rng, -1000, 1000);
  Tensor axes = Ints({1});
  auto got = RunOp("reduce_sum", Attrs().Int("keepdims", 0), {&x, &axes});
  ASSERT_TRUE(got.ok());
  const auto want = NaiveReduce<int64_t>("reduce_sum", x, {false, true});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ((*got)[0].data<int64_t>()[i], int64_t(want[i]));
  Tensor f = Random<float>({2, 777}, rng);
  auto mean = RunOp("reduce_mean", Attrs(), {&f, &axes});
  ASSERT_TRUE(mean.ok());
  const auto fwant = NaiveReduce<float>("reduce_mean", f, {false, true});
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR((*mean)[0].data<float>()[i], fwant[i], 1e-6);
  Tensor im = Make<int32_t>({4}, {1, 2, 2, 2});
  auto imean = RunOp("reduce_mean", Attrs().Int("keepdims", 0), {&im});
  ASSERT_TRUE(imean.ok());
  EXPECT_EQ((*imean)[0].data<int32_t>()[0], 1); // 7 / 4 truncates
}

TEST(Reduce, NoopWithEmptyAxesAndEmptyInputs) {
  Tensor x = Make<float>({2, 2}, {1, 2, 3, 4});
  Tensor none = Make<int64_t>({0}, {});
  auto noop = RunOp("reduce_sum", Attrs().Int("noop_with_empty_axes", 1), {&x, &none});
  ASSERT_TRUE(noop.ok());
  EXPECT_EQ((*noop)[0].shape, (Shape{2, 2}));
  EXPECT_EQ((*noop)[0].values<float>(), x.values<float>());
  auto all = RunOp("reduce_sum", Attrs().Int("keepdims", 0), {&x});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].shape, Shape{});
  EXPECT_EQ((*all)[0].data<float>()[0], 10);
  // Reducing an empty dim yields the identity.
  Tensor e(DType::kF32, {2, 0});
  Tensor ax = Ints({1});
  auto s = RunOp("reduce_sum", Attrs(), {&e, &ax});
  auto mx = RunOp("reduce_max", Attrs(), {&e, &ax});
  ASSERT_TRUE(s.ok() && mx.ok());
  EXPECT_EQ((*s)[0].values<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ((*mx)[0].data<float>()[0], -std::numeric_limits<float>::infinity());
  // NaN propagates through max.
  Tensor n = Make<float>({3}, {1, std::nanf(""), 2});
  auto nm = RunOp("reduce_max", Attrs(), {&n});
  ASSERT_TRUE(nm.ok());
  EXPECT_TRUE(std::isnan((*nm)[0].data<float>()[0]));
}

TEST(Reduce, AxesMustBeKnownAndValid) {
  Tensor x = Make<float>({2, 2}, {1, 2, 3, 4});
  Tensor axes = Ints({1});
  std::vector<TensorView> out(1);
  ExpectError(
      InferOp("reduce_mean", Attrs(), {&x, &axes}, &out, {true, false}),
      {"reduce_mean", "shape of reduce_mean depends on values not known before execution", "axes"});
  Tensor bad = Ints({2});
  ExpectError(InferOp("reduce_sum", Attrs(), {&x, &bad}, &out), {"reduce_sum", "axis 2", "rank 2"});
  Tensor dup = Ints({1, -1});
  ExpectError(InferOp("reduce_max", Attrs(), {&x, &dup}, &out), {"reduce_max", "more than once"});
}

void NaiveSoftmax(const Tensor &x, int64_t axis, bool log, std::vector<double> *y) {
  const Shape &s = x.shape;
  y->assign(static_cast<size_t>(x.numel()), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto idx = Unravel(i, s);
    double mx = -INFINITY;
    for (int64_t a = 0; a < s[axis]; ++a) {
      idx[axis] = a;
      mx = std::max(mx, double(x.data<float>()[Ravel(idx, s)]));
    }
    double sum = 0;
    for (int64_t a = 0; a < s[axis]; ++a) {
      idx[axis] = a;
      sum += std::exp(x.data<float>()[Ravel(idx, s)] - mx);
    }
    const double v = x.data<float>()[i];
    (*y)[i] = log ? v - mx - std::log(sum) : std::exp(v - mx) / sum;
  }
}

TEST(Softmax, EveryAxisBothKinds) {
  std::mt19937 rng(33);
  for (int trial = 0; trial < 60; ++trial) {
    Tensor x = Random<float>(RandomShape(rng, 1, 4, 6), rng, -30, 30);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    const bool log = trial % 2;
    auto got = RunOp(log ? "log_softmax" : "softmax",
                     Attrs().Int("axis", trial % 3 ? axis : axis - rank), {&x});
    ASSERT_TRUE(got.ok()) << got.status().message();
    std::vector<double> want;
    NaiveSoftmax(x, axis, log, &want);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR((*got)[0].data<float>()[i], want[i], 2e-6 * (1 + std::fabs(want[i])));
  }
  // In place (y == x), as an executor may run it, for both kinds and axes.
  for (bool log : {false, true})
    for (int64_t inner : {int64_t{1}, int64_t{3}}) {
      std::mt19937 r2(35);
      Tensor x = Random<float>({2, 5, inner}, r2);
      std::vector<double> want;
      NaiveSoftmax(x, 1, log, &want);
      TensorView v = x.View();
      std::vector<const TensorView *> in = {&v};
      std::vector<TensorView> out = {v};
      ASSERT_TRUE(RunKernel(log ? "log_softmax" : "softmax", Attrs().Int("axis", 1), in, out).ok());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(x.data<float>()[i], want[i], 2e-6);
    }
  // Large logits do not overflow.
  Tensor big = Make<float>({2}, {1000, 1000});
  auto got = RunOp("softmax", Attrs().Int("axis", -1), {&big});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{0.5f, 0.5f}));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("softmax", Attrs().Int("axis", 1), {&big}, &out), {"softmax", "axis 1"});
}

TEST(LayerNorm, MatchesReferenceForAxesAndParams) {
  std::mt19937 rng(34);
  for (int trial = 0; trial < 40; ++trial) {
    Tensor x = Random<float>(RandomShape(rng, 1, 4, 6), rng, -3, 5);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    const Shape norm(x.shape.begin() + axis, x.shape.end());
    // Scale is full-size, or broadcast (e.g. [1, ..., d]) on some trials.
    Shape scale_shape = trial % 3 == 0 ? BroadcastableTo(norm, rng) : norm;
    Tensor scale = Random<float>(scale_shape, rng), bias = Random<float>(norm, rng);
    const bool with_bias = trial % 2;
    const float eps = 1e-3f;
    auto got = RunOp("layer_normalization", Attrs().Int("axis", axis).Float("epsilon", eps),
                     {&x, &scale, with_bias ? &bias : nullptr}, 3);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int64_t cols = NumElements(norm), rows = x.numel() / cols;
    Shape stat_shape = x.shape;
    for (int64_t d = axis; d < rank; ++d)
      stat_shape[d] = 1;
    ASSERT_EQ((*got)[1].shape, stat_shape);
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c)
        mean += x.data<float>()[r * cols + c];
      mean /= cols;
      for (int64_t c = 0; c < cols; ++c) {
        const double d = x.data<float>()[r * cols + c] - mean;
        var += d * d;
      }
      var /= cols;
      const double inv = 1 / std::sqrt(var + eps);
      ASSERT_NEAR((*got)[1].data<float>()[r], mean, 1e-5);
      ASSERT_NEAR((*got)[2].data<float>()[r], inv, 1e-4 * inv);
      for (int64_t c = 0; c < cols; ++c) {
        const auto nidx = Unravel(c, norm);
        double want = (x.data<float>()[r * cols + c] - mean) * inv *
                      scale.data<float>()[BroadcastIndex(nidx, scale_shape)];
        if (with_bias)
          want += bias.data<float>()[c];
        ASSERT_NEAR((*got)[0].data<float>()[r * cols + c], want, 1e-4 * (1 + std::fabs(want)));
      }
    }
  }
}

TEST(LayerNorm, Errors) {
  Tensor x = Make<float>({2, 4}, std::vector<float>(8));
  Tensor s3 = Make<float>({3}, std::vector<float>(3));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("layer_normalization", Attrs().Int("axis", -1), {&x, &s3}, &out),
              {"layer_normalization", "'Scale'", "[3]", "[4]"});
  ExpectError(InferOp("layer_normalization", Attrs().Int("axis", 2), {&x, &s3}, &out),
              {"layer_normalization", "axis 2"});
}

} // namespace
} // namespace kiln::test
