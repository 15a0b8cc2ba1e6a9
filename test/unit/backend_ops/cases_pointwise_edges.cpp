// Cases of the elementwise ops, reductions and softmax at the edges a device
// kernel has and the CPU's does not: element counts either side of a 256- or
// 1024-thread block, rows just short of and past the length where a
// reduction switches from a warp to a block per row, reductions whose
// reduced dims are not innermost (strided walks), broadcasts whose merged
// rank is high (every dim alternating between operands), integer Pow and
// mixed-dtype Pow, casts between more dtype pairs, operands a plan keeps in
// host memory (axes, scalars the host computed), and float operands of mixed
// types (f32 with f16, f16 with bf16), which compute in f32.
#include "op_case.h"

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, F64 = DType::kF64,
                I8 = DType::kI8, U8 = DType::kU8, I32 = DType::kI32, I64 = DType::kI64,
                BOOL = DType::kBool;

void AddBlockEdges(std::vector<OpCase> &c) {
  // One row each: the element count is the whole story.
  for (int64_t n : {255, 256, 257, 1023, 1024, 1025, 4097}) {
    c.push_back(
        MakeCase("add", F32, {n}, "edge", {}, {Uniform(F32, {n}), Uniform(F32, {n})}, kPointwise));
    c.push_back(MakeCase("exp", BF16, {n}, "edge", {}, {Uniform(BF16, {n}, -4, 4)}, kPointwise));
    c.push_back(MakeCase("cast", F32, {n}, "edge_to_f16", Attrs().Int("to", int64_t(F16)),
                         {Uniform(F32, {n}, -100, 100)}, kExact));
  }
  // Broadcast against a row: the strided loop at the same edges.
  for (int64_t n : {255, 257, 1025})
    c.push_back(MakeCase("mul", F16, {3, n}, "edge_bcast", {},
                         {Uniform(F16, {3, n}), Uniform(F16, {n})}, kPointwise));
}

void AddHighRankBroadcast(std::vector<OpCase> &c) {
  // Every dim alternates which operand is broadcast, so none merge: the
  // kernels' full rank of 8.
  const Shape a8 = {2, 1, 3, 1, 2, 1, 3, 1}, b8 = {1, 3, 1, 2, 1, 3, 1, 2};
  const Shape out8 = {2, 3, 3, 2, 2, 3, 3, 2};
  c.push_back(
      MakeCase("sub", F32, out8, "rank8", {}, {Uniform(F32, a8), Uniform(F32, b8)}, kPointwise));
  c.push_back(MakeCase("div", I32, out8, "rank8", {},
                       {Uniform(I32, a8, -1000, 1000), AwayFromZero(I32, b8, 1, 40)}, kExact));
  c.push_back(MakeCase("less", F16, out8, "rank8", {},
                       {IntValued(F16, a8, -3, 3), IntValued(F16, b8, -3, 3)}, kExact));
  c.push_back(MakeCase("xor", BOOL, out8, "rank8", {}, {Bools(a8), Bools(b8)}, kExact));
  // Rank 6 with a scalar-like operand and a lower-rank one.
  c.push_back(MakeCase(
      "max", BF16, {2, 4, 3, 6, 5, 7}, "rank6", {},
      {Uniform(BF16, {2, 1, 3, 1, 5, 1}), Uniform(BF16, {4, 1, 6, 1, 7}), Uniform(BF16, {1})},
      kPointwise));
  // Where with all three operands broadcast differently.
  for (DType t : {F16, F64, I8})
    c.push_back(MakeCase("where", t, {2, 4, 3, 6, 5}, "rank5", {},
                         {Bools({2, 1, 3, 1, 5}), IntValued(t, {4, 1, 6, 1}, -100, 100),
                          IntValued(t, {2, 4, 1, 1, 5}, -100, 100)},
                         kExact));
}

void AddPowAndCasts(std::vector<OpCase> &c) {
  // Integer Pow: exact powers, and negative exponents (0 or +-1 after
  // truncation).
  c.push_back(MakeCase("pow", I64, {13, 37}, "int", {},
                       {IntValued(I64, {13, 37}, -6, 6), IntValued(I64, {37}, 0, 9)}, kExact));
  c.push_back(MakeCase("pow", I32, {13, 37}, "int_negative_exponent", {},
                       {AwayFromZero(I32, {13, 37}, 1, 5), IntValued(I32, {13, 1}, -3, -1)},
                       kExact));
  // Mixed dtypes: a half base with an f32 exponent, an integer base with an
  // i64 exponent, an f32 base with an f16 exponent.
  c.push_back(MakeCase("pow", F16, {13, 37}, "f32_exponent", {},
                       {Uniform(F16, {13, 37}, 0.25, 3), Uniform(F32, {37}, -2, 2)}, kPointwise));
  c.push_back(MakeCase("pow", I32, {7, 13}, "i64_exponent", {},
                       {IntValued(I32, {7, 13}, -9, 9), IntValued(I64, {13}, 0, 5)}, kExact));
  c.push_back(MakeCase("pow", F32, {7, 13}, "f16_exponent", {},
                       {Uniform(F32, {7, 13}, 0.25, 3), Uniform(F16, {7, 13}, -2, 2)}, kPointwise));
  struct Cast {
    DType from, to;
    double lo, hi;
  };
  // Values stay inside the target's range (out-of-range casts are
  // implementation-defined in ONNX).
  const Cast casts[] = {{BF16, I32, -100, 100}, {F16, I64, -100, 100},  {F64, I8, -100, 100},
                        {F64, F32, -1e6, 1e6},  {U8, F16, 0, 255},      {I8, U8, 0, 100},
                        {I32, BF16, -300, 300}, {BOOL, BF16, 0, 1},     {BOOL, I64, 0, 1},
                        {F16, F64, -100, 100},  {BF16, F16, -100, 100}, {I64, F64, -1e9, 1e9}};
  for (const Cast &k : casts) {
    Generator g = k.from == BOOL ? Bools({1031}) : Uniform(k.from, {1031}, k.lo, k.hi);
    c.push_back(MakeCase("cast", k.from, {1031}, std::string("to_") + DTypeName(k.to),
                         Attrs().Int("to", static_cast<int64_t>(k.to)), {g}, kExact));
  }
  c.push_back(MakeCase("cast", F32, {1031}, "to_bool_edge", Attrs().Int("to", int64_t(BOOL)),
                       {IntValued(F32, {1031}, -1, 1)}, kExact));
}

void AddReductionEdges(std::vector<OpCase> &c) {
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    // Contiguous rows around the warp/block switch (1024).
    for (int64_t n : {1023, 1024, 1025})
      c.push_back(MakeCase(op, F32, {5, n}, "row", Attrs().Int("keepdims", 0),
                           {Uniform(F32, {5, n}), Ints({1})}, kAccumulated));
    // A long row of halves: a block per row, f32 accumulation.
    c.push_back(MakeCase(op, BF16, {3, 4099}, "row", {}, {Uniform(BF16, {3, 4099}), Ints({-1})},
                         kAccumulated));
    // Strided: few outputs with many values (a block per output), many
    // outputs (a thread per output), two reduced groups around a kept one.
    c.push_back(MakeCase(op, F32, {300, 5}, "axis0_block", Attrs().Int("keepdims", 0),
                         {Uniform(F32, {300, 5}), Ints({0})}, kAccumulated));
    c.push_back(MakeCase(op, F32, {5, 2100}, "axis0_threads", {},
                         {Uniform(F32, {5, 2100}), Ints({0})}, kAccumulated));
    c.push_back(MakeCase(op, F16, {4, 5, 6, 7}, "axes_0_2", Attrs().Int("keepdims", 0),
                         {Uniform(F16, {4, 5, 6, 7}), Ints({0, 2})}, kAccumulated));
    c.push_back(MakeCase(op, I32, {6, 1, 7, 9}, "axes_1_3", Attrs().Int("keepdims", 0),
                         {Uniform(I32, {6, 1, 7, 9}, -1000, 1000), Ints({1, 3})}, kExact));
    c.push_back(MakeCase(op, I8, {7, 13}, "axis1", Attrs().Int("keepdims", 0),
                         {Uniform(I8, {7, 13}, -5, 5), Ints({1})}, kExact));
    // Shapes that do not say which dim went ([6,6] -> [6]): the axes decide.
    c.push_back(MakeCase(op, F32, {6, 6}, "axis1_square", Attrs().Int("keepdims", 0),
                         {Uniform(F32, {6, 6}), Ints({1})}, kAccumulated));
    // An empty reduced dim: the identity (NaN for a float mean).
    c.push_back(MakeCase(op, F32, {0, 13}, "empty_axis", {}, {Uniform(F32, {0, 13}), Ints({0})},
                         kAccumulated));
  }
}

void AddSoftmaxEdges(std::vector<OpCase> &c) {
  for (const char *op : {"softmax", "log_softmax"}) {
    for (int64_t n : {1023, 1024, 4099})
      c.push_back(
          MakeCase(op, F32, {3, n}, "row", {}, {Uniform(F32, {3, n}, -8, 8)}, kAccumulated));
    c.push_back(
        MakeCase(op, BF16, {5, 2053}, "row", {}, {Uniform(BF16, {5, 2053}, -8, 8)}, kAccumulated));
    c.push_back(
        MakeCase(op, F64, {7, 33}, "row", {}, {Uniform(F64, {7, 33}, -8, 8)}, kAccumulated));
    // A non-last axis: a thread per column walks the axis by stride.
    c.push_back(MakeCase(op, F16, {3, 300, 5}, "axis1", Attrs().Int("axis", 1),
                         {Uniform(F16, {3, 300, 5}, -8, 8)}, kAccumulated));
    c.push_back(MakeCase(op, F32, {1100, 3}, "axis0", Attrs().Int("axis", 0),
                         {Uniform(F32, {1100, 3}, -8, 8)}, kAccumulated));
  }
}

void AddHostAndMixedOperands(std::vector<OpCase> &c) {
  // Reduction axes on the host, as plans hold them; keepdims 0 so the axes
  // decide which dims go.
  for (const char *op : {"reduce_sum", "reduce_max"}) {
    OpCase r = MakeCase(op, F32, {7, 13, 37}, "host_axes", Attrs().Int("keepdims", 0),
                        {Uniform(F32, {7, 13, 37}), Ints({0, 2})}, kAccumulated);
    r.host_inputs = {1};
    c.push_back(r);
  }
  // Device ops reading a tensor the host computed.
  OpCase add = MakeCase("add", F32, {13, 37}, "host_operand", {},
                        {Uniform(F32, {13, 37}), Uniform(F32, {37})}, kPointwise);
  add.host_inputs = {1};
  c.push_back(add);
  OpCase clip = MakeCase(
      "clip", F32, {13, 37}, "host_bounds", {},
      {Uniform(F32, {13, 37}, -3, 3), Fixed(F32, {}, {-0.5}), Fixed(F32, {}, {1.5})}, kExact);
  clip.host_inputs = {1, 2};
  c.push_back(clip);
  OpCase cast =
      MakeCase("cast", I64, {1031}, "host_operand_to_f32", Attrs().Int("to", int64_t(F32)),
               {Uniform(I64, {1031}, -1000, 1000)}, kExact);
  cast.host_inputs = {0};
  c.push_back(cast);
  // Float operands of mixed types: f32 math, a half result.
  c.push_back(MakeCase("add", F32, {13, 37}, "mixed_f16", {},
                       {Uniform(F32, {13, 37}), Uniform(F16, {37})}, kPointwise));
  c.push_back(MakeCase("mul", F16, {13, 37}, "mixed_bf16", {},
                       {Uniform(F16, {13, 37}), Uniform(BF16, {13, 1})}, kPointwise));
  c.push_back(MakeCase("max", BF16, {7, 13}, "mixed_f32", {},
                       {Uniform(BF16, {7, 13}), Uniform(F32, {13}), Uniform(BF16, {7, 1})},
                       kPointwise));
  c.push_back(MakeCase("less", F16, {7, 13}, "mixed_f32", {},
                       {IntValued(F16, {7, 13}, -3, 3), IntValued(F32, {13}, -3, 3)}, kExact));
  c.push_back(MakeCase("clip", F16, {13, 37}, "mixed_f32_bounds", {},
                       {Uniform(F16, {13, 37}, -3, 3), Fixed(F32, {}, {-1.25}), Omitted()},
                       kExact));
}

} // namespace

void AddPointwiseEdgeCases(std::vector<OpCase> &cases) {
  AddBlockEdges(cases);
  AddHighRankBroadcast(cases);
  AddPowAndCasts(cases);
  AddReductionEdges(cases);
  AddSoftmaxEdges(cases);
  AddHostAndMixedOperands(cases);
}

} // namespace kiln::oracle
