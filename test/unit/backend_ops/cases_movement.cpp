// Cases of the data movement ops. Results must be bit-exact. Shape operands
// (slice bounds, expand and reshape targets, split sizes, tile repeats) stay
// on the host, as the plans hold them.
#include "op_case.h"

#include <algorithm>
#include <numeric>

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, F64 = DType::kF64,
                I64 = DType::kI64, I32 = DType::kI32, I8 = DType::kI8, U8 = DType::kU8,
                BOOL = DType::kBool;

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

// Index tuples of shape lead + [dims.size()], component d uniform in
// [0, dims[d]).
Generator Tuples(Shape lead, std::vector<int64_t> dims) {
  return [=](std::mt19937 &rng) {
    Shape shape = lead;
    shape.push_back(static_cast<int64_t>(dims.size()));
    std::vector<double> v;
    for (int64_t t = 0; t < NumElements(lead); ++t)
      for (int64_t d : dims)
        v.push_back(static_cast<double>(std::uniform_int_distribution<int64_t>(0, d - 1)(rng)));
    return FromDoubles(I64, shape, v);
  };
}

Generator I32s(std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Fixed(I32, {n}, std::move(values));
}

OpCase WithOutputs(OpCase c, int n) {
  c.num_outputs = n;
  return c;
}

// What a device backend's kernels meet beyond the cases above: sizes that
// cross thread-block edges, high ranks, 1- and 8-byte elements, rows that a
// kernel copies in wide words (and rows that it cannot), index operands of
// both widths with negative values, and value operands (slice bounds,
// Trilu's k, Range's start and delta) held in device memory, as a weight or
// a staged graph input is at run time.
void AddDeviceEdges(std::vector<OpCase> &c) {
  const Shape r6 = {3, 5, 2, 7, 4, 3};
  c.push_back(MakeCase("transpose", F32, r6, "rank6", Attrs().IntList("perm", {5, 3, 1, 0, 2, 4}),
                       {Uniform(F32, r6)}, kExact));
  c.push_back(MakeCase("transpose", I8, r6, "rank6", Attrs().IntList("perm", {4, 0, 5, 2, 3, 1}),
                       {Uniform(I8, r6, -100, 100)}, kExact));
  c.push_back(MakeCase("transpose", F64, {2, 3, 5, 7, 11}, "reversed", {},
                       {Uniform(F64, {2, 3, 5, 7, 11})}, kExact));
  c.push_back(MakeCase("transpose", U8, {1031, 257}, "large", {},
                       {Uniform(U8, {1031, 257}, 0, 255)}, kExact));
  c.push_back(MakeCase("transpose", F16, {37, 19, 128}, "rows", Attrs().IntList("perm", {1, 0, 2}),
                       {Uniform(F16, {37, 19, 128})}, kExact));
  c.push_back(
      WithHost(MakeCase("slice", F16, {33, 520}, "aligned_rows", {},
                        {Uniform(F16, {33, 520}), Ints({8}), Ints({520}), Ints({1})}, kExact),
               {1, 2, 3}));
  c.push_back(WithHost(
      MakeCase("slice", I8, {33, 521}, "odd_rows", {},
               {Uniform(I8, {33, 521}, -100, 100), Ints({1}), Ints({-3}), Ints({1})}, kExact),
      {1, 2, 3}));
  c.push_back(WithHost(MakeCase("slice", BF16, {1031, 515}, "large_strided", {},
                                {Uniform(BF16, {1031, 515}), Ints({5, 3}), Ints({1030, 514}),
                                 Ints({0, 1}), Ints({1, 2})},
                                kExact),
                       {1, 2, 3, 4}));
  c.push_back(MakeCase(
      "slice", F32, {13, 37, 7}, "device_bounds_i32", {},
      {Uniform(F32, {13, 37, 7}), I32s({1, -30}), I32s({12, 100}), I32s({0, 1}), I32s({2, 3})},
      kExact));
  c.push_back(MakeCase("slice", I64, {129, 67}, "device_bounds_reverse", {},
                       {Uniform(I64, {129, 67}, -100, 100), Ints({-2, 60}), Ints({-1000, 3}),
                        Ints({0, -1}), Ints({-3, -7})},
                       kExact));
  c.push_back(MakeCase("slice", F16, {7, 129}, "device_bounds_no_axes", {},
                       {Uniform(F16, {7, 129}), Ints({0, 5}), Ints({7, 128})}, kExact));
  c.push_back(WithHost(MakeCase("expand", BF16, {1, 4099}, "rows", {},
                                {Uniform(BF16, {1, 4099}), Ints({67, 4099})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("expand", F64, {5, 1, 3}, "rank_up", {},
                                {Uniform(F64, {5, 1, 3}), Ints({2, 5, 7, 3})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("tile", I64, {33, 65}, "large", {},
                                {Uniform(I64, {33, 65}, -9, 9), Ints({7, 3})}, kExact),
                       {1}));
  c.push_back(WithHost(MakeCase("tile", U8, {5, 3, 7}, "rank3", {},
                                {Uniform(U8, {5, 3, 7}, 0, 255), Ints({2, 1, 3})}, kExact),
                       {1}));
  c.push_back(MakeCase(
      "concat", BF16, {129, 515}, "axis1_large", Attrs().Int("axis", 1),
      {Uniform(BF16, {129, 515}), Uniform(BF16, {129, 1}), Uniform(BF16, {129, 1030})}, kExact));
  c.push_back(MakeCase("concat", I8, {3, 5, 7}, "axis0", Attrs().Int("axis", 0),
                       {Uniform(I8, {3, 5, 7}, -9, 9), Uniform(I8, {1, 5, 7}, -9, 9)}, kExact));
  c.push_back(
      WithOutputs(WithHost(MakeCase("split", F32, {67, 1031}, "axis1_large", Attrs().Int("axis", 1),
                                    {Uniform(F32, {67, 1031}), Ints({515, 1, 515})}, kExact),
                           {1}),
                  3));
  // A decode step's fused QKV product split into q, k and v (the CUDA
  // kernel's 16-byte words), rows of 6-byte parts (2-byte words), and more
  // parts than one launch takes (nine; the CUDA backend copies them one by one).
  c.push_back(WithOutputs(
      WithHost(MakeCase("split", BF16, {1, 2, 6144}, "qkv_decode", Attrs().Int("axis", 2),
                        {Uniform(BF16, {1, 2, 6144}), Ints({4096, 1024, 1024})}, kExact),
               {1}),
      3));
  c.push_back(WithOutputs(MakeCase("split", F16, {5, 9}, "num_outputs3_odd_bytes",
                                   Attrs().Int("axis", 1).Int("num_outputs", 3),
                                   {Uniform(F16, {5, 9})}, kExact),
                          3));
  c.push_back(WithOutputs(MakeCase("split", F32, {3, 18}, "num_outputs9",
                                   Attrs().Int("axis", 1).Int("num_outputs", 9),
                                   {Uniform(F32, {3, 18})}, kExact),
                          9));
  c.push_back(
      WithOutputs(MakeCase("split", BOOL, {13, 8}, "num_outputs3",
                           Attrs().Int("axis", 1).Int("num_outputs", 3), {Bools({13, 8})}, kExact),
                  3));
  c.push_back(MakeCase("trilu", F16, {5, 129, 67}, "upper_device_k", Attrs().Int("upper", 1),
                       {Uniform(F16, {5, 129, 67}), Fixed(I64, {}, {-3})}, kExact));
  c.push_back(WithHost(MakeCase("trilu", U8, {67, 129}, "lower_k100", Attrs().Int("upper", 0),
                                {Uniform(U8, {67, 129}, 0, 255), Fixed(I64, {}, {100})}, kExact),
                       {1}));

  // Gathers: both index widths, negative indices, rows of odd byte counts.
  c.push_back(MakeCase("gather", F32, {1031, 515}, "rows_i32", Attrs().Int("axis", 0),
                       {Uniform(F32, {1031, 515}), Uniform(I32, {67}, -1031, 1030)}, kExact));
  c.push_back(MakeCase("gather", BF16, {517, 1029}, "rows_i64", Attrs().Int("axis", 0),
                       {Uniform(BF16, {517, 1029}), Uniform(I64, {3, 67}, -517, 516)}, kExact));
  c.push_back(MakeCase("gather", I8, {13, 1031, 3}, "axis1", Attrs().Int("axis", 1),
                       {Uniform(I8, {13, 1031, 3}, -100, 100), Uniform(I64, {129}, -1031, 1030)},
                       kExact));
  c.push_back(MakeCase("gather", BOOL, {7, 13}, "axis_last_i32", Attrs().Int("axis", -1),
                       {Bools({7, 13}), Uniform(I32, {5, 3}, -13, 12)}, kExact));
  c.push_back(MakeCase("gather", F64, {37, 5, 7}, "scalar_i32", Attrs().Int("axis", 2),
                       {Uniform(F64, {37, 5, 7}), Uniform(I32, {}, -7, 6)}, kExact));
  c.push_back(MakeCase("gather_nd", F16, {13, 67, 129}, "pairs_large", {},
                       {Uniform(F16, {13, 67, 129}), Tuples({7, 5}, {13, 67})}, kExact));
  c.push_back(MakeCase("gather_nd", I8, {5, 13, 7}, "batch_dims1_full",
                       Attrs().Int("batch_dims", 1),
                       {Uniform(I8, {5, 13, 7}, -100, 100), Tuples({5, 4}, {13, 7})}, kExact));
  c.push_back(MakeCase("scatter_nd", F32, {1031, 67}, "none_large", {},
                       {Uniform(F32, {1031, 67}), DistinctRows(1031, 300), Uniform(F32, {300, 67})},
                       kExact));
  c.push_back(
      MakeCase("scatter_nd", F16, {67, 129}, "add_large", Attrs().String("reduction", "add"),
               {Uniform(F16, {67, 129}), Uniform(I64, {300, 1}, 0, 66), Uniform(F16, {300, 129})},
               kPointwise));
  c.push_back(MakeCase(
      "scatter_nd", I32, {13, 7}, "mul", Attrs().String("reduction", "mul"),
      {Uniform(I32, {13, 7}, -9, 9), Uniform(I64, {19, 1}, 0, 12), Uniform(I32, {19, 7}, -3, 3)},
      kExact));
  c.push_back(MakeCase(
      "scatter_nd", I64, {13, 7, 5}, "max_pairs", Attrs().String("reduction", "max"),
      {Uniform(I64, {13, 7, 5}, -99, 99), Tuples({20}, {13, 7}), Uniform(I64, {20, 5}, -99, 99)},
      kExact));

  // Generators, with value operands in device memory and large results.
  c.push_back(WithHost(
      MakeCase("range", I32, {}, "large", {},
               {Fixed(I32, {}, {-7}), Fixed(I32, {}, {100000}), Fixed(I32, {}, {3})}, kExact),
      {0, 1, 2}));
  c.push_back(MakeCase("range", F64, {}, "device_operands", {},
                       {Fixed(F64, {}, {1000}), Fixed(F64, {}, {-1000}), Fixed(F64, {}, {-0.37})},
                       kPointwise));
  c.push_back(MakeCase("range", F32, {}, "device_operands", {},
                       {Fixed(F32, {}, {-3}), Fixed(F32, {}, {600}), Fixed(F32, {}, {0.125})},
                       kPointwise));
  struct Fill {
    DType t;
    Shape shape;
    OpAttrs value;
  };
  for (const Fill &f :
       {Fill{BF16, {67, 1031}, Attrs().Float("value", 3.14159f)},
        Fill{F64, {5, 7, 3}, Attrs().Float("value", -0.1f)},
        Fill{I8, {1031}, Attrs().Float("value", -100.0f)},
        Fill{U8, {129}, Attrs().Int("value", 200)}, Fill{BOOL, {13, 7}, Attrs().Int("value", 1)}}) {
    std::vector<double> dims(f.shape.begin(), f.shape.end());
    OpCase fill = WithHost(
        MakeCase("constant_of_shape", f.t, f.shape, "", f.value, {Ints(dims)}, kExact), {0});
    fill.result_dtypes = {f.t};
    c.push_back(fill);
  }

  // Shape and Size read only dims; a device backend writes them to device
  // memory when a plan does not evaluate them on the host.
  c.push_back(MakeCase("shape", F32, {7, 1, 13, 5}, "start1_end_m1",
                       Attrs().Int("start", 1).Int("end", -1), {Uniform(F32, {7, 1, 13, 5})},
                       kExact));
  c.push_back(MakeCase("shape", I8, {3, 5}, "", {}, {Uniform(I8, {3, 5}, -9, 9)}, kExact));
  c.push_back(MakeCase("size", BF16, {7, 13, 5}, "", {}, {Uniform(BF16, {7, 13, 5})}, kExact));
}

} // namespace

void AddMovementCases(std::vector<OpCase> &cases) {
  AddLayout(cases);
  AddIndexing(cases);
  AddReshapes(cases);
  AddGenerators(cases);
  AddDeviceEdges(cases);
}

} // namespace kiln::oracle
