// The CUDA kernels' broadcast layout (MakeBroadcast, kernels/cuda/pointwise.h)
// and the offsets the broadcast loop derives from it (BroadcastOffsets,
// broadcast.cuh), run on the host against the naive numpy index of
// test/support/index_math.h for every element of many shapes.
#include "kernels/cuda/pointwise_broadcast.cuh"
#include "test/support/index_math.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kiln::kernels::cuda {
namespace {

using Shape = std::vector<int64_t>;

std::string Str(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t Numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

// Every output element's offsets in each input, as the kernels compute them
// (with 64-bit and 32-bit index arithmetic), against the naive index.
void CheckOffsets(const std::vector<Shape> &in, const Shape &out) {
  Broadcast b;
  ASSERT_TRUE(MakeBroadcast(in, out, &b)) << Str(out);
  ASSERT_EQ(b.numel, Numel(out));
  for (int64_t i = 0; i < b.numel; ++i) {
    int64_t off64[3], off32[3];
    BroadcastOffsets<3>(b, i, off64);
    BroadcastOffsets<3>(b, static_cast<uint32_t>(i), off32);
    const Shape idx = test::Unravel(i, out);
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t want = test::BroadcastIndex(idx, in[k]);
      ASSERT_EQ(off64[k], want) << "input " << k << " " << Str(in[k]) << " of " << Str(out)
                                << ", element " << i;
      ASSERT_EQ(off32[k], want);
      if (b.same_shape)
        ASSERT_EQ(want, i) << "same_shape but input " << k << " is broadcast";
    }
  }
}

TEST(CudaBroadcastLayout, SameShapesMergeIntoOneDim) {
  Broadcast b;
  ASSERT_TRUE(MakeBroadcast({{3, 4, 5}, {3, 4, 5}}, {3, 4, 5}, &b));
  EXPECT_TRUE(b.same_shape);
  EXPECT_EQ(b.rank, 1);
  EXPECT_EQ(b.dims[0], 60);
  // Leading and inner unit dims change nothing.
  ASSERT_TRUE(MakeBroadcast({{1, 5, 1}, {5, 1}}, {1, 5, 1}, &b));
  EXPECT_TRUE(b.same_shape);
  EXPECT_EQ(b.rank, 1);
}

TEST(CudaBroadcastLayout, DimsThatBroadcastAlikeMerge) {
  Broadcast b;
  // [7,13,37] with [13,1]: b is broadcast along 37 and 7, full along 13.
  ASSERT_TRUE(MakeBroadcast({{7, 13, 37}, {13, 1}}, {7, 13, 37}, &b));
  EXPECT_FALSE(b.same_shape);
  ASSERT_EQ(b.rank, 3);
  EXPECT_EQ(b.dims[0], 37); // innermost first
  EXPECT_EQ(b.strides[1][0], 0);
  EXPECT_EQ(b.strides[1][1], 1);
  // A row vector against a matrix: two dims.
  ASSERT_TRUE(MakeBroadcast({{4, 5, 6}, {6}}, {4, 5, 6}, &b));
  ASSERT_EQ(b.rank, 2);
  EXPECT_EQ(b.dims[0], 6);
  EXPECT_EQ(b.dims[1], 20);
  EXPECT_EQ(b.strides[1][1], 0);
}

TEST(CudaBroadcastLayout, RefusesWhatDoesNotFit) {
  Broadcast b;
  EXPECT_FALSE(MakeBroadcast({{3}}, {4}, &b));                // does not broadcast
  EXPECT_FALSE(MakeBroadcast({{2, 3}}, {3}, &b));             // input above the output's rank
  EXPECT_FALSE(MakeBroadcast({{1}, {1}, {1}, {1}}, {1}, &b)); // four inputs
  // Nine dims that alternate which operand is broadcast cannot merge.
  const Shape a9 = {2, 1, 2, 1, 2, 1, 2, 1, 2}, b9 = {1, 3, 1, 3, 1, 3, 1, 3, 1};
  const Shape out9 = {2, 3, 2, 3, 2, 3, 2, 3, 2};
  EXPECT_FALSE(MakeBroadcast({a9, b9}, out9, &b));
  const Shape a8(a9.begin() + 1, a9.end()), b8(b9.begin() + 1, b9.end());
  const Shape out8(out9.begin() + 1, out9.end());
  EXPECT_TRUE(MakeBroadcast({a8, b8}, out8, &b));
  EXPECT_EQ(b.rank, 8);
}

TEST(CudaBroadcastLayout, EmptyAndScalar) {
  Broadcast b;
  ASSERT_TRUE(MakeBroadcast({{0, 3}, {3}}, {0, 3}, &b));
  EXPECT_EQ(b.numel, 0);
  ASSERT_TRUE(MakeBroadcast({{}, {}}, {}, &b));
  EXPECT_EQ(b.numel, 1);
  EXPECT_EQ(b.rank, 0);
  CheckOffsets({{}, {1}, {}}, {1});
}

TEST(CudaBroadcastLayout, OffsetsMatchNaiveIndexOnRandomShapes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int rank = static_cast<int>(rng() % 7);
    Shape out(rank);
    for (int64_t &d : out)
      d = 1 + rng() % 4;
    std::vector<Shape> in(3);
    for (Shape &s : in) {
      // A suffix of the output's dims, each kept or broadcast (1).
      const int r = static_cast<int>(rng() % (rank + 1));
      s.assign(out.end() - r, out.end());
      for (int64_t &d : s)
        if (rng() % 2)
          d = 1;
    }
    CheckOffsets(in, out);
  }
}

} // namespace
} // namespace kiln::kernels::cuda
