// Cases of the elementwise ops: odd sizes, broadcasting, every dtype the op
// takes (f16/bf16 where it computes through f32, integers where defined).
#include "op_case.h"

#include <cmath>

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, I64 = DType::kI64,
                I32 = DType::kI32, BOOL = DType::kBool;

// Mostly finite values with a NaN every few elements (for is_nan).
Generator WithNaNs(DType dtype, Shape shape) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(NumElements(shape)));
    for (double &x : v)
      x = rng() % 5 == 0 ? std::nan("") : std::uniform_real_distribution<double>(-3, 3)(rng);
    return FromDoubles(dtype, shape, v);
  };
}

void AddArithmetic(std::vector<OpCase> &c) {
  for (const char *op : {"add", "sub", "mul"}) {
    for (DType t : {F32, F16, BF16})
      c.push_back(MakeCase(op, t, {37, 129}, "", {}, {Uniform(t, {37, 129}), Uniform(t, {37, 129})},
                           kPointwise));
    c.push_back(MakeCase(op, F32, {7, 13, 37}, "bcast", {},
                         {Uniform(F32, {7, 13, 37}), Uniform(F32, {13, 1})}, kPointwise));
    c.push_back(MakeCase(op, I64, {13, 37}, "bcast", {},
                         {Uniform(I64, {13, 37}, -1000, 1000), Uniform(I64, {37}, -1000, 1000)},
                         kPointwise));
  }
  c.push_back(MakeCase("add", F32, {0, 13}, "empty", {},
                       {Uniform(F32, {0, 13}), Uniform(F32, {13})}, kPointwise));
  c.push_back(MakeCase("mul", F32, {257, 1031}, "large", {},
                       {Uniform(F32, {257, 1031}), Uniform(F32, {257, 1})}, kPointwise));
  for (DType t : {F32, F16})
    c.push_back(MakeCase("div", t, {37, 129}, "", {},
                         {Uniform(t, {37, 129}), AwayFromZero(t, {37, 129}, 0.25, 4)}, kPointwise));
  c.push_back(MakeCase("div", F32, {1, 13}, "bcast", {},
                       {Uniform(F32, {1, 13}), AwayFromZero(F32, {7, 1}, 0.25, 4)}, kPointwise));
  c.push_back(MakeCase("div", I64, {13, 37}, "", {},
                       {Uniform(I64, {13, 37}, -1000, 1000), AwayFromZero(I64, {13, 37}, 1, 50)},
                       kPointwise));
  c.push_back(MakeCase("pow", F32, {13, 37}, "", {},
                       {Uniform(F32, {13, 37}, 0.25, 3), Uniform(F32, {13, 37}, -2, 2)},
                       kPointwise));
  c.push_back(MakeCase("pow", F32, {7, 13}, "int_exponent", {},
                       {Uniform(F32, {7, 13}, -3, 3), IntValued(I64, {13}, 0, 3)}, kPointwise));
  for (const char *op : {"max", "min"}) {
    c.push_back(MakeCase(op, F32, {7, 13, 37}, "3_operands", {},
                         {Uniform(F32, {7, 13, 37}), Uniform(F32, {13, 1}), Uniform(F32, {37})},
                         kPointwise));
    c.push_back(MakeCase(op, I64, {13, 37}, "", {},
                         {Uniform(I64, {13, 37}, -50, 50), Uniform(I64, {13, 37}, -50, 50)},
                         kPointwise));
    c.push_back(MakeCase(op, F16, {37, 13}, "", {},
                         {Uniform(F16, {37, 13}), Uniform(F16, {37, 13})}, kPointwise));
  }
}

void AddCompareAndLogic(std::vector<OpCase> &c) {
  for (const char *op : {"equal", "less", "greater", "less_or_equal", "greater_or_equal"}) {
    c.push_back(MakeCase(op, F32, {13, 37}, "", {},
                         {IntValued(F32, {13, 37}, -3, 3), IntValued(F32, {37}, -3, 3)}, kExact));
    c.push_back(MakeCase(op, I64, {7, 13}, "", {},
                         {IntValued(I64, {7, 13}, -3, 3), IntValued(I64, {7, 1}, -3, 3)}, kExact));
  }
  c.push_back(MakeCase("equal", BOOL, {7, 13}, "", {}, {Bools({7, 13}), Bools({13})}, kExact));
  for (const char *op : {"and", "or", "xor"})
    c.push_back(
        MakeCase(op, BOOL, {7, 13, 37}, "", {}, {Bools({7, 13, 37}), Bools({13, 1})}, kExact));
  c.push_back(MakeCase("not", BOOL, {37, 13}, "", {}, {Bools({37, 13})}, kExact));
  for (DType t : {F32, F16, BF16})
    c.push_back(MakeCase("is_nan", t, {13, 37}, "", {}, {WithNaNs(t, {13, 37})}, kExact));
  for (DType t : {F32, I64, BF16})
    c.push_back(MakeCase(
        "where", t, {7, 13, 37}, "", {},
        {Bools({7, 1, 37}), IntValued(t, {13, 37}, -100, 100), IntValued(t, {37}, -100, 100)},
        kExact));
}

void AddUnary(std::vector<OpCase> &c) {
  struct Range {
    const char *op;
    double lo, hi;
  };
  const Range ranges[] = {{"sqrt", 0, 9},  {"exp", -5, 5},     {"log", 0.05, 9}, {"erf", -3, 3},
                          {"tanh", -4, 4}, {"sigmoid", -8, 8}, {"relu", -3, 3},  {"abs", -3, 3},
                          {"neg", -3, 3},  {"floor", -9, 9},   {"ceil", -9, 9},  {"sin", -7, 7},
                          {"cos", -7, 7},  {"identity", -3, 3}};
  for (const Range &r : ranges) {
    c.push_back(
        MakeCase(r.op, F32, {37, 129}, "", {}, {Uniform(F32, {37, 129}, r.lo, r.hi)}, kPointwise));
    if (std::string(r.op) != "identity")
      c.push_back(
          MakeCase(r.op, F16, {13, 37}, "", {}, {Uniform(F16, {13, 37}, r.lo, r.hi)}, kPointwise));
  }
  c.push_back(MakeCase("reciprocal", F32, {37, 129}, "", {}, {AwayFromZero(F32, {37, 129}, 0.1, 8)},
                       kPointwise));
  c.push_back(MakeCase("reciprocal", BF16, {13, 37}, "", {}, {AwayFromZero(BF16, {13, 37}, 0.1, 8)},
                       kPointwise));
  for (const char *op : {"relu", "abs", "neg", "identity"})
    c.push_back(MakeCase(op, I64, {13, 37}, "", {}, {Uniform(I64, {13, 37}, -1000, 1000)}, kExact));
  c.push_back(MakeCase("relu", I32, {7, 13}, "", {}, {Uniform(I32, {7, 13}, -1000, 1000)}, kExact));
}

void AddClipCastGelu(std::vector<OpCase> &c) {
  c.push_back(MakeCase(
      "clip", F32, {37, 129}, "", {},
      {Uniform(F32, {37, 129}, -3, 3), Fixed(F32, {}, {-1.5}), Fixed(F32, {}, {0.75})}, kExact));
  c.push_back(MakeCase("clip", F32, {13, 37}, "max_only", {},
                       {Uniform(F32, {13, 37}, -3, 3), Omitted(), Fixed(F32, {}, {0.5})}, kExact));
  c.push_back(MakeCase(
      "clip", I64, {13, 37}, "", {},
      {Uniform(I64, {13, 37}, -100, 100), Fixed(I64, {}, {-7}), Fixed(I64, {}, {13})}, kExact));
  c.push_back(MakeCase(
      "clip", F16, {13, 37}, "", {},
      {Uniform(F16, {13, 37}, -3, 3), Fixed(F16, {}, {-1}), Fixed(F16, {}, {1.25})}, kExact));
  struct Cast {
    DType from, to;
    double lo, hi;
  };
  // Values stay inside the target's range: out-of-range casts are
  // implementation-defined in ONNX.
  const Cast casts[] = {
      {F32, F16, -100, 100},         {F32, BF16, -100, 100},       {F32, I64, -100, 100},
      {F32, DType::kU8, 0, 200},     {F32, DType::kI8, -100, 100}, {F32, DType::kF64, -100, 100},
      {DType::kF64, F16, -100, 100}, {F32, I32, -100, 100},        {F32, BOOL, -1, 1},
      {F16, F32, -100, 100},         {BF16, F32, -100, 100},       {F16, BF16, -100, 100},
      {I64, F32, -1e6, 1e6},         {I64, I32, -1e6, 1e6},        {BOOL, F32, 0, 1},
      {I32, I64, -1e6, 1e6}};
  for (const Cast &k : casts) {
    Generator g = k.from == BOOL ? Bools({13, 37})
                  : k.to == BOOL ? IntValued(k.from, {13, 37}, -1, 1)
                                 : Uniform(k.from, {13, 37}, k.lo, k.hi);
    c.push_back(MakeCase("cast", k.from, {13, 37}, std::string("to_") + DTypeName(k.to),
                         Attrs().Int("to", static_cast<int64_t>(k.to)), {g}, kExact));
  }
  for (const char *approx : {"none", "tanh"}) {
    c.push_back(MakeCase("gelu", F32, {37, 129}, approx, Attrs().String("approximate", approx),
                         {Uniform(F32, {37, 129}, -5, 5)}, kPointwise));
    c.push_back(MakeCase("gelu", BF16, {13, 37}, approx, Attrs().String("approximate", approx),
                         {Uniform(BF16, {13, 37}, -5, 5)}, kPointwise));
  }
}

} // namespace

void AddPointwiseCases(std::vector<OpCase> &cases) {
  AddArithmetic(cases);
  AddCompareAndLogic(cases);
  AddUnary(cases);
  AddClipCastGelu(cases);
}

} // namespace kiln::oracle
