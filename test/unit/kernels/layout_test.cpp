// Data movement ops: Transpose, Slice, Expand, Tile, Concat, Split, Gather
// and Trilu against per-element references.
#include "test_util.h"

#include <algorithm>
#include <limits>

namespace kiln::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Transpose, RandomPermutationsAndDefault) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 60; ++trial) {
    Tensor x = Random<int32_t>(RandomShape(rng, 0, 5, 4), rng, -99, 99);
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm(rank);
    for (size_t d = 0; d < rank; ++d)
      perm[d] = static_cast<int64_t>(d);
    std::shuffle(perm.begin(), perm.end(), rng);
    const bool dflt = trial % 5 == 0;
    if (dflt)
      std::reverse(perm.begin(), perm.end()), std::sort(perm.rbegin(), perm.rend());
    Attrs attrs;
    if (!dflt)
      attrs.IntList("perm", perm);
    auto got = RunOp("transpose", attrs, {&x});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape;
    for (int64_t p : perm)
      shape.push_back(x.shape[p]);
    ASSERT_EQ((*got)[0].shape, shape);
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      const auto oi = Unravel(i, shape);
      std::vector<int64_t> ii(rank);
      for (size_t d = 0; d < rank; ++d)
        ii[perm[d]] = oi[d];
      ASSERT_EQ((*got)[0].data<int32_t>()[i], x.data<int32_t>()[Ravel(ii, x.shape)]);
    }
  }
  // f16-sized elements go through the same byte path.
  Tensor h(DType::kF16, {2, 3});
  for (int i = 0; i < 6; ++i)
    h.data<uint16_t>()[i] = static_cast<uint16_t>(i);
  auto got = RunOp("transpose", Attrs(), {&h});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<uint16_t>(), (std::vector<uint16_t>{0, 3, 1, 4, 2, 5}));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("transpose", Attrs().IntList("perm", {0, 0}), {&h}, &out),
              {"transpose", "not a permutation"});
}

// Larger, odd-sized transposes that take the tiled path (partial tiles
// included) for every element size.
template <typename T>
void CheckLargeTranspose(const Shape &shape, const std::vector<int64_t> &perm) {
  std::mt19937 rng(47);
  Tensor x = Random<T>(shape, rng, 0, 100);
  auto got = RunOp("transpose", Attrs().IntList("perm", perm), {&x});
  ASSERT_TRUE(got.ok());
  Shape out;
  for (int64_t p : perm)
    out.push_back(shape[p]);
  for (int64_t i = 0; i < NumElements(out); ++i) {
    const auto oi = Unravel(i, out);
    std::vector<int64_t> ii(shape.size());
    for (size_t d = 0; d < perm.size(); ++d)
      ii[perm[d]] = oi[d];
    ASSERT_EQ((*got)[0].data<T>()[i], x.data<T>()[Ravel(ii, shape)]) << ShapeToString(shape);
  }
}

TEST(Transpose, LargeTiled) {
  CheckLargeTranspose<float>({3, 37, 41}, {0, 2, 1});
  CheckLargeTranspose<float>({2, 5, 33, 20}, {0, 2, 3, 1});
  CheckLargeTranspose<int64_t>({70, 18}, {1, 0});
  CheckLargeTranspose<uint8_t>({2, 19, 3, 35}, {3, 1, 0, 2});
  CheckLargeTranspose<int8_t>({1, 12, 40, 16}, {0, 1, 3, 2}); // K^T in attention
}

// The ONNX slice rule, written per axis with plain loops.
std::vector<int64_t> NaiveSliceIndices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  std::vector<int64_t> idx;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    for (__int128 i = start; i < end; i += step)
      idx.push_back(static_cast<int64_t>(i));
  } else if (dim > 0) {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    for (__int128 i = start; i > end; i += step)
      idx.push_back(static_cast<int64_t>(i));
  }
  return idx;
}

TEST(Slice, RandomStartsEndsStepsWithClamping) {
  std::mt19937 rng(42);
  const int64_t specials[] = {kMax, kMin, -kMax, 1000, -1000};
  for (int trial = 0; trial < 200; ++trial) {
    Tensor x = Random<float>(RandomShape(rng, 1, 4, 6), rng);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> axes, starts, ends, steps;
    for (int64_t d = 0; d < rank; ++d) {
      if (rng() % 3 == 0)
        continue;
      axes.push_back(rng() % 2 ? d : d - rank);
      const int64_t dim = x.shape[d];
      auto pick = [&] {
        return rng() % 5 == 0 ? specials[rng() % 5]
                              : std::uniform_int_distribution<int64_t>(-dim - 2, dim + 2)(rng);
      };
      starts.push_back(pick());
      ends.push_back(pick());
      int64_t step = std::uniform_int_distribution<int64_t>(-3, 3)(rng);
      if (step == 0)
        step = rng() % 2 ? kMax : kMin;
      steps.push_back(step);
    }
    Tensor ts = Ints(starts), te = Ints(ends), ta = Ints(axes), tp = Ints(steps);
    auto got = RunOp("slice", Attrs(), {&x, &ts, &te, &ta, &tp});
    ASSERT_TRUE(got.ok()) << got.status().message();
    std::vector<std::vector<int64_t>> picks(rank);
    for (int64_t d = 0; d < rank; ++d)
      for (int64_t i = 0; i < x.shape[d]; ++i)
        picks[d].push_back(i);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t d = axes[i] < 0 ? axes[i] + rank : axes[i];
      picks[d] = NaiveSliceIndices(x.shape[d], starts[i], ends[i], steps[i]);
    }
    Shape shape;
    for (auto &p : picks)
      shape.push_back(static_cast<int64_t>(p.size()));
    ASSERT_EQ((*got)[0].shape, shape) << "trial " << trial;
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      auto oi = Unravel(i, shape);
      for (int64_t d = 0; d < rank; ++d)
        oi[d] = picks[d][oi[d]];
      ASSERT_EQ((*got)[0].data<float>()[i], x.data<float>()[Ravel(oi, x.shape)]);
    }
  }
}

TEST(Slice, DefaultsAndErrors) {
  Tensor x = Make<int64_t>({5}, {0, 1, 2, 3, 4});
  Tensor s = Ints({-1}), e = Ints({kMin});
  Tensor st = Ints({-1});
  auto rev = RunOp("slice", Attrs(), {&x, &s, &e, nullptr, &st});
  ASSERT_TRUE(rev.ok()) << rev.status().message();
  EXPECT_EQ((*rev)[0].values<int64_t>(), (std::vector<int64_t>{4, 3, 2, 1, 0}));
  Tensor s1 = Ints({1}), e1 = Ints({kMax});
  auto tail = RunOp("slice", Attrs(), {&x, &s1, &e1});
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ((*tail)[0].values<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  std::vector<TensorView> out(1);
  Tensor zero = Ints({0});
  ExpectError(InferOp("slice", Attrs(), {&x, &s1, &e1, nullptr, &zero}, &out),
              {"slice", "step", "0"});
  Tensor two = Ints({0, 0});
  ExpectError(InferOp("slice", Attrs(), {&x, &two, &e1}, &out), {"slice", "same length"});
  ExpectError(InferOp("slice", Attrs(), {&x, &s1, &e1}, &out, {true, true, false}),
              {"slice", "depends on values not known before execution", "ends"});
}

TEST(ExpandTile, MatchReference) {
  std::mt19937 rng(43);
  for (int trial = 0; trial < 40; ++trial) {
    const Shape target = RandomShape(rng, 0, 4, 4);
    const Shape in = BroadcastableTo(target, rng);
    Tensor x = Random<int64_t>(in, rng, -9, 9);
    // The shape operand may itself have 1s where the input is larger.
    Shape operand = target;
    for (size_t d = 0; d < in.size(); ++d)
      if (rng() % 3 == 0)
        operand[operand.size() - in.size() + d] = 1;
    Tensor ts = Ints(operand);
    auto got = RunOp("expand", Attrs(), {&x, &ts});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape;
    ASSERT_TRUE(NaiveBroadcast(in, operand, &shape));
    ASSERT_EQ((*got)[0].shape, shape);
    for (int64_t i = 0; i < NumElements(shape); ++i)
      ASSERT_EQ((*got)[0].data<int64_t>()[i],
                x.data<int64_t>()[BroadcastIndex(Unravel(i, shape), in)]);
  }
  for (int trial = 0; trial < 30; ++trial) {
    Tensor x = Random<float>(RandomShape(rng, 1, 3, 3), rng);
    std::vector<int64_t> reps;
    for (size_t d = 0; d < x.shape.size(); ++d)
      reps.push_back(rng() % 4);
    Tensor tr = Ints(reps);
    auto got = RunOp("tile", Attrs(), {&x, &tr});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape;
    for (size_t d = 0; d < reps.size(); ++d)
      shape.push_back(x.shape[d] * reps[d]);
    ASSERT_EQ((*got)[0].shape, shape);
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      auto idx = Unravel(i, shape);
      for (size_t d = 0; d < idx.size(); ++d)
        idx[d] %= x.shape[d];
      ASSERT_EQ((*got)[0].data<float>()[i], x.data<float>()[Ravel(idx, x.shape)]);
    }
  }
  Tensor x = Make<float>({3}, {1, 2, 3});
  Tensor bad = Ints({2});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("expand", Attrs(), {&x, &bad}, &out), {"expand", "do not broadcast"});
  ExpectError(InferOp("tile", Attrs(), {&x, &bad}, &out, {true, false}),
              {"tile", "depends on values not known before execution"});
  Tensor two = Ints({1, 1});
  ExpectError(InferOp("tile", Attrs(), {&x, &two}, &out), {"tile", "2 values", "rank 1"});
}

TEST(ConcatSplit, RoundTripOnEveryAxis) {
  std::mt19937 rng(44);
  for (int trial = 0; trial < 40; ++trial) {
    const Shape base = RandomShape(rng, 1, 4, 4);
    const int64_t rank = static_cast<int64_t>(base.size());
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    std::vector<Tensor> parts;
    std::vector<int64_t> sizes;
    for (int p = 0; p < 3; ++p) {
      Shape s = base;
      s[axis] = rng() % 3; // empty parts too
      sizes.push_back(s[axis]);
      parts.push_back(Random<int32_t>(s, rng, -99, 99));
    }
    auto cat = RunOp("concat", Attrs().Int("axis", trial % 2 ? axis : axis - rank),
                     {&parts[0], &parts[1], &parts[2]});
    ASSERT_TRUE(cat.ok()) << cat.status().message();
    const Tensor &c = (*cat)[0];
    ASSERT_EQ(c.shape[axis], sizes[0] + sizes[1] + sizes[2]);
    for (int64_t i = 0; i < c.numel(); ++i) {
      auto idx = Unravel(i, c.shape);
      int p = 0;
      while (idx[axis] >= sizes[p])
        idx[axis] -= sizes[p++];
      ASSERT_EQ(c.data<int32_t>()[i], parts[p].data<int32_t>()[Ravel(idx, parts[p].shape)]);
    }
    Tensor split = Ints(sizes);
    auto back = RunOp("split", Attrs().Int("axis", axis), {&c, &split}, 3);
    ASSERT_TRUE(back.ok()) << back.status().message();
    for (int p = 0; p < 3; ++p) {
      EXPECT_EQ((*back)[p].shape, parts[p].shape);
      EXPECT_EQ((*back)[p].bytes, parts[p].bytes);
    }
  }
}

TEST(Split, NumOutputsAndEqualSplit) {
  Tensor x = Make<float>({7}, {0, 1, 2, 3, 4, 5, 6});
  auto got = RunOp("split", Attrs().Int("num_outputs", 3), {&x}, 3);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ((*got)[1].values<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ((*got)[2].values<float>(), (std::vector<float>{6}));
  Tensor y = Make<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  got = RunOp("split", Attrs().Int("axis", -1), {&y}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[1].shape, (Shape{2, 2}));
  EXPECT_EQ((*got)[1].values<float>(), (std::vector<float>{2, 3, 6, 7}));
  std::vector<TensorView> out(3);
  ExpectError(InferOp("split", Attrs(), {&y}, &out), {"split", "does not split evenly"});
  Tensor wrong = Ints({1, 1, 1});
  ExpectError(InferOp("split", Attrs(), {&x, &wrong}, &out), {"split", "sum to 3", "expected 7"});
  ExpectError(InferOp("split", Attrs().Int("num_outputs", 2), {&x}, &out),
              {"split", "num_outputs is 2", "3 results"});
}

TEST(Concat, Errors) {
  Tensor a = Make<float>({2, 2}, std::vector<float>(4)),
         b = Make<float>({3, 3}, std::vector<float>(9));
  Tensor c = Make<int64_t>({2, 2}, std::vector<int64_t>(4));
  std::vector<TensorView> out(1);
  ExpectError(InferOp("concat", Attrs().Int("axis", 0), {&a, &b}, &out),
              {"concat", "differ outside axis 0"});
  ExpectError(InferOp("concat", Attrs().Int("axis", 0), {&a, &c}, &out), {"concat", "same dtype"});
  ExpectError(InferOp("concat", Attrs(), {&a}, &out), {"concat", "'axis'"});
}

TEST(Gather, NegativeIndicesAnyAxisAndRangeErrors) {
  std::mt19937 rng(45);
  for (int trial = 0; trial < 40; ++trial) {
    Tensor x = Random<float>(RandomShape(rng, 1, 3, 5), rng);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = static_cast<int64_t>(rng() % rank);
    const int64_t dim = x.shape[axis];
    const Shape ishape = RandomShape(rng, 0, 2, 3);
    Tensor idx = Random<int64_t>(ishape, rng, -dim, dim - 1);
    auto got = RunOp("gather", Attrs().Int("axis", axis), {&x, &idx});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape shape(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), ishape.begin(), ishape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    ASSERT_EQ((*got)[0].shape, shape);
    for (int64_t i = 0; i < NumElements(shape); ++i) {
      const auto oi = Unravel(i, shape);
      std::vector<int64_t> pos(oi.begin() + axis, oi.begin() + axis + ishape.size());
      int64_t v = idx.data<int64_t>()[Ravel(pos, ishape)];
      if (v < 0)
        v += dim;
      std::vector<int64_t> xi(oi.begin(), oi.begin() + axis);
      xi.push_back(v);
      xi.insert(xi.end(), oi.begin() + axis + ishape.size(), oi.end());
      ASSERT_EQ((*got)[0].data<float>()[i], x.data<float>()[Ravel(xi, x.shape)]);
    }
  }
  Tensor emb = Make<float>({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor i32 = Make<int32_t>({2}, {2, -3});
  auto got = RunOp("gather", Attrs(), {&emb, &i32});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].values<float>(), (std::vector<float>{4, 5, 0, 1}));
  Tensor bad = Make<int64_t>({3}, {0, 3, 1});
  ExpectError(RunOp("gather", Attrs(), {&emb, &bad}).status(),
              {"gather", "index 3", "position 1", "axis 0 of size 3"});
  Tensor bad_neg = Make<int64_t>({1}, {-4});
  ExpectError(RunOp("gather", Attrs(), {&emb, &bad_neg}).status(), {"gather", "index -4"});
  Tensor fidx = Make<float>({1}, {0});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("gather", Attrs(), {&emb, &fidx}, &out), {"gather", "'indices'", "f32"});
  ExpectError(InferOp("gather", Attrs().Int("axis", 2), {&emb, &bad}, &out), {"gather", "axis 2"});
}

TEST(Trilu, UpperLowerWithK) {
  std::mt19937 rng(46);
  for (int trial = 0; trial < 60; ++trial) {
    Tensor x = Random<int64_t>(RandomShape(rng, 2, 4, 5), rng, 1, 9);
    const int64_t k = trial % 7 == 0 ? (trial % 2 ? kMax : kMin) : int64_t(rng() % 9) - 4;
    const bool upper = trial % 2;
    Tensor tk = ScalarI64(k);
    auto got = RunOp("trilu", Attrs().Int("upper", upper), {&x, trial % 5 ? &tk : nullptr});
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int64_t kk = trial % 5 ? k : 0;
    const Shape &s = x.shape;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto idx = Unravel(i, s);
      const __int128 r = idx[s.size() - 2], c = idx.back();
      const bool keep = upper ? c - r >= kk : c - r <= kk;
      ASSERT_EQ((*got)[0].data<int64_t>()[i], keep ? x.data<int64_t>()[i] : 0);
    }
  }
  Tensor v = Make<float>({3}, {1, 2, 3});
  std::vector<TensorView> out(1);
  ExpectError(InferOp("trilu", Attrs(), {&v}, &out), {"trilu", "rank >= 2"});
}

} // namespace
} // namespace kiln::test
