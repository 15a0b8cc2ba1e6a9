// Cases of the data movement ops. Results must be bit-exact. Shape operands
// (slice bounds, expand and reshape targets, split sizes, tile repeats) stay
// on the host, as the plans hold them.
#include "op_case.h"

#include <algorithm>
#include <numeric>

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, I64 = DType::kI64,
                I32 = DType::kI32, BOOL = DType::kBool;

OpCase WithHost(OpCase c, std::vector<int> host) {
  c.host_inputs = std::move(host);
  return c;
}

// `count` distinct rows of [0, n) as [count, 1] indices (ScatterND without a
// reduction is order-dependent on duplicates).
Generator DistinctRows(int64_t n, int64_t count) {
  return [=](std::mt19937 &rng) {
    std::vector<double> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0.0);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(static_cast<size_t>(count));
    return FromDoubles(I64, {count, 1}, all);
  };
}

void AddLayout(std::vector<OpCase> &c) {
  for (DType t : {F32, F16, I64})
    c.push_back(MakeCase("transpose", t, {7, 13, 37}, "perm_2_0_1",
                         Attrs().IntList("perm", {2, 0, 1}), {Uniform(t, {7, 13, 37}, -100, 100)},
                         kExact));
  c.push_back(MakeCase("transpose", F32, {5, 7, 3, 13}, "perm_0_2_1_3",
                       Attrs().IntList("perm", {0, 2, 1, 3}), {Uniform(F32, {5, 7, 3, 13})},
                       kExact));
  c.push_back(
      MakeCase("transpose", F32, {257, 1031}, "large", {}, {Uniform(F32, {257, 1031})}, kExact));
  c.push_back(
      MakeCase("transpose", BF16, {13, 37}, "reversed", {}, {Uniform(BF16, {13, 37})}, kExact));
  c.push_back(WithHost(MakeCase("slice", F32, {13, 37, 7}, "steps", {},
                                {Uniform(F32, {13, 37, 7}), Ints({1, -30}), Ints({12, 100}),
                                 Ints({0, 1}), Ints({2, 3})},
                                kExact),
                       {1, 2, 3, 4}));
  c.push_back(WithHost(MakeCase("slice", I64, {13, 37}, "reverse", {},
                                {Uniform(I64, {13, 37}, -100, 100), Ints({-2}), Ints({-100}),
                                 Ints({-1}), Ints({-3})},
                                kExact),
                       {1, 2, 3, 4}));
  c.push_back(WithHost(MakeCase("slice", F16, {7, 129}, "no_axes", {},
                                {Uniform(F16, {7, 129}), Ints({0, 5}), Ints({7, 128})}, kExact),
                       {1, 2}));
  c.push_back(WithHost(MakeCase("expand", F32, {7, 1, 1}, "", {},
                                {Uniform(F32, {7, 1, 1}), Ints({7, 13, 37})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("slice", F32, {7, 13}, "huge_step", {},
                                {Uniform(F32, {7, 13}), Ints({-100, 3}), Ints({100, 1000}),
                                 Ints({0, 1}), Ints({50, 4})},
                                kExact),
                       {1, 2, 3, 4}));
  c.push_back(WithHost(MakeCase("expand", F16, {7, 1, 13}, "target_lower_rank", {},
                                {Uniform(F16, {7, 1, 13}), Ints({5, 1})}, kExact),
                       {1}));
  c.push_back(WithHost(
      MakeCase("expand", BOOL, {1, 13}, "rank_up", {}, {Bools({1, 13}), Ints({3, 7, 1})}, kExact),
      {1}));
  c.push_back(WithHost(
      MakeCase("tile", F32, {7, 13}, "", {}, {Uniform(F32, {7, 13}), Ints({3, 2})}, kExact), {1}));
  c.push_back(MakeCase(
      "concat", F32, {7, 3, 13}, "axis1", Attrs().Int("axis", 1),
      {Uniform(F32, {7, 3, 13}), Uniform(F32, {7, 13, 13}), Uniform(F32, {7, 1, 13})}, kExact));
  c.push_back(MakeCase("concat", I64, {13, 7}, "axis_last", Attrs().Int("axis", -1),
                       {Uniform(I64, {13, 7}, -9, 9), Uniform(I64, {13, 37}, -9, 9)}, kExact));
  c.push_back(MakeCase("concat", F16, {5, 37}, "axis0", Attrs().Int("axis", 0),
                       {Uniform(F16, {5, 37}), Uniform(F16, {13, 37})}, kExact));
  OpCase split = WithHost(MakeCase("split", F32, {7, 13, 9}, "axis1", Attrs().Int("axis", 1),
                                   {Uniform(F32, {7, 13, 9}), Ints({5, 1, 7})}, kExact),
                          {1});
  split.num_outputs = 3;
  c.push_back(split);
  OpCase chunks =
      MakeCase("split", F16, {13, 7}, "num_outputs3", Attrs().Int("axis", 0).Int("num_outputs", 3),
               {Uniform(F16, {13, 7})}, kExact);
  chunks.num_outputs = 3;
  c.push_back(chunks);
  c.push_back(WithHost(MakeCase("trilu", F32, {7, 13, 37}, "upper_k2", Attrs().Int("upper", 1),
                                {Uniform(F32, {7, 13, 37}), Fixed(I64, {}, {2})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("trilu", I64, {37, 13}, "lower_km3", Attrs().Int("upper", 0),
                                {Uniform(I64, {37, 13}, -9, 9), Fixed(I64, {}, {-3})}, kExact),
                       {1}));
  c.push_back(MakeCase("trilu", BOOL, {13, 13}, "lower", Attrs().Int("upper", 0), {Bools({13, 13})},
                       kExact));
}

void AddIndexing(std::vector<OpCase> &c) {
  // Embedding lookup: negative indices count from the end.
  c.push_back(MakeCase("gather", F32, {129, 37}, "axis0", Attrs().Int("axis", 0),
                       {Uniform(F32, {129, 37}), Uniform(I64, {7, 13}, -129, 128)}, kExact));
  c.push_back(MakeCase("gather", F16, {7, 37, 13}, "axis1_i32", Attrs().Int("axis", 1),
                       {Uniform(F16, {7, 37, 13}), Uniform(I32, {5}, -37, 36)}, kExact));
  c.push_back(MakeCase("gather", F32, {129, 37}, "empty_indices", Attrs().Int("axis", 0),
                       {Uniform(F32, {129, 37}), Uniform(I64, {0, 3}, 0, 128)}, kExact));
  c.push_back(MakeCase("gather", I64, {13, 7}, "scalar_index", Attrs().Int("axis", -1),
                       {Uniform(I64, {13, 7}, -99, 99), Uniform(I64, {}, 0, 6)}, kExact));
  c.push_back(MakeCase("gather_nd", F32, {7, 13, 37}, "pairs", {},
                       {Uniform(F32, {7, 13, 37}),
                        [](std::mt19937 &rng) {
                          std::vector<double> v;
                          for (int i = 0; i < 11; ++i) {
                            v.push_back(std::uniform_int_distribution<int>(0, 6)(rng));
                            v.push_back(std::uniform_int_distribution<int>(0, 12)(rng));
                          }
                          return FromDoubles(I64, {11, 2}, v);
                        }},
                       kExact));
  c.push_back(MakeCase("gather_nd", BF16, {5, 13, 7}, "batch_dims1", Attrs().Int("batch_dims", 1),
                       {Uniform(BF16, {5, 13, 7}), Uniform(I64, {5, 3, 1}, 0, 12)}, kExact));
  c.push_back(MakeCase("scatter_nd", F32, {37, 13}, "none", {},
                       {Uniform(F32, {37, 13}), DistinctRows(37, 11), Uniform(F32, {11, 13})},
                       kExact));
  for (const char *red : {"add", "mul", "max", "min"})
    c.push_back(MakeCase(
        "scatter_nd", F32, {13, 7}, red, Attrs().String("reduction", red),
        {Uniform(F32, {13, 7}), Uniform(I64, {19, 1}, 0, 12), Uniform(F32, {19, 7})}, kPointwise));
  c.push_back(MakeCase("scatter_nd", BF16, {13, 7}, "add", Attrs().String("reduction", "add"),
                       {Uniform(BF16, {13, 7}), Uniform(I64, {5, 1}, 0, 12), Uniform(BF16, {5, 7})},
                       kPointwise));
}

void AddReshapes(std::vector<OpCase> &c) {
  c.push_back(WithHost(MakeCase("reshape", F32, {7, 13, 37}, "copy_and_infer", {},
                                {Uniform(F32, {7, 13, 37}), Ints({0, -1})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("reshape", I64, {13, 37}, "split_dim", {},
                                {Uniform(I64, {13, 37}, -9, 9), Ints({13, 1, 37, 1})}, kExact),
                       {1}));
  c.push_back(MakeCase("flatten", F16, {7, 13, 5}, "axis2", Attrs().Int("axis", 2),
                       {Uniform(F16, {7, 13, 5})}, kExact));
  c.push_back(WithHost(MakeCase("squeeze", F32, {7, 1, 13, 1}, "axes", {},
                                {Uniform(F32, {7, 1, 13, 1}), Ints({1, -1})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("unsqueeze", F32, {7, 13}, "axes", {},
                                {Uniform(F32, {7, 13}), Ints({0, 3})}, kExact),
                       {1}));
}

// Generators of values from shapes; their operands are host scalars and
// shape tensors.
void AddGenerators(std::vector<OpCase> &c) {
  for (DType t : {F32, F16, I64}) {
    OpCase fill = WithHost(MakeCase("constant_of_shape", t, {7, 13, 37}, "",
                                    Attrs().Float("value", -1.5f), {Ints({7, 13, 37})}, kExact),
                           {0});
    fill.result_dtypes = {t};
    c.push_back(fill);
  }
  OpCase int_fill = WithHost(MakeCase("constant_of_shape", I64, {129}, "int_value",
                                      Attrs().Int("value", -3), {Ints({129})}, kExact),
                             {0});
  int_fill.result_dtypes = {I64};
  c.push_back(int_fill);
  c.push_back(
      WithHost(MakeCase("range", I64, {}, "step3", {},
                        {Fixed(I64, {}, {3}), Fixed(I64, {}, {40}), Fixed(I64, {}, {3})}, kExact),
               {0, 1, 2}));
  c.push_back(WithHost(
      MakeCase("range", F32, {}, "descending", {},
               {Fixed(F32, {}, {7}), Fixed(F32, {}, {-1.5}), Fixed(F32, {}, {-0.25})}, kPointwise),
      {0, 1, 2}));
}

} // namespace

void AddMovementCases(std::vector<OpCase> &cases) {
  AddLayout(cases);
  AddIndexing(cases);
  AddReshapes(cases);
  AddGenerators(cases);
}

} // namespace kiln::oracle
