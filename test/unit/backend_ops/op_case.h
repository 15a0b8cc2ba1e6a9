// One op case of the oracle: an op type with attributes, how to make its
// operands from a seed, and how close a result must be. Cases know nothing of
// backends; the driver (oracle.h) runs each on every backend.
#pragma once

#include "core/op_attrs.h"
#include "host_tensor.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace kiln::oracle {

// How close a float result must be to the one it is checked against:
//  - nmse: normalized mean squared error, sum (got - want)^2 / sum want^2
//    (ggml's test-backend-ops measure): the overall error, insensitive to
//    cancellation near zero in one element;
//  - max_err: the worst element's |got - want| over max |want| (at least 1
//    when want is all zeros), so one wrong element in a large tensor still
//    fails.
// Both zero means bit-exact (data movement, integers, bool).
struct Tolerance {
  double nmse = 0;
  double max_err = 0;
};

// f32 math against double: rounding of single operations.
constexpr Tolerance kPointwise = {1e-12, 1e-6};
// Sums, products and exponentials over a row of up to a few hundred values.
constexpr Tolerance kAccumulated = {1e-10, 2e-5};
constexpr Tolerance kExact = {0, 0};

// Makes one operand; an operand with dtype kUndefined is omitted (nullptr).
using Generator = std::function<HostTensor(std::mt19937 &)>;

struct OpCase {
  std::string name; // unique, [A-Za-z0-9_]: "rms_norm_f32_37x129"
  std::string op;   // the plan op type
  OpAttrs attrs;
  std::vector<Generator> inputs;
  // For ops whose operands must agree with each other (paged attention's
  // index arrays): makes all of them at once; `inputs` is then unused.
  std::function<std::vector<HostTensor>(std::mt19937 &)> make_inputs;
  int num_outputs = 1;
  // The results' dtypes as a plan gives them before the shape rule runs
  // (constant_of_shape keeps it); empty: the first operand's.
  std::vector<DType> result_dtypes;
  // Operands the op updates in place (the paged KV caches): after the run
  // they are compared too, after the results.
  std::vector<int> in_place;
  // Operands a plan holds on the host on every backend (shape tensors:
  // slice bounds, reshape and expand targets); the rest live in the
  // backend's memory.
  std::vector<int> host_inputs;
  Tolerance tol = kExact;
};

// ---- Generators -----------------------------------------------------------
// Uniform values in [lo, hi): floats rounded to `dtype`, integers in [lo, hi].
Generator Uniform(DType dtype, Shape shape, double lo = -2, double hi = 2);
// Uniform values with |x| >= min_abs (for divisors and reciprocals).
Generator AwayFromZero(DType dtype, Shape shape, double min_abs, double max_abs);
// Whole numbers in [lo, hi] stored as `dtype` (comparisons then see ties).
Generator IntValued(DType dtype, Shape shape, int64_t lo, int64_t hi);
Generator Bools(Shape shape);
Generator Fixed(DType dtype, Shape shape, std::vector<double> values);
Generator Omitted();
inline Generator Ints(std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Fixed(DType::kI64, {n}, std::move(values));
}

// ---- Attributes -----------------------------------------------------------
class Attrs {
public:
  Attrs &Int(const std::string &name, int64_t v);
  Attrs &Float(const std::string &name, float v);
  Attrs &String(const std::string &name, std::string v);
  Attrs &IntList(const std::string &name, std::vector<int64_t> v);
  operator OpAttrs() const { return attrs_; }

private:
  OpAttrs attrs_;
};

// A case named CaseName(op, dtype, shape, variant); operands from `inputs`.
OpCase MakeCase(const std::string &op, DType dtype, const Shape &shape, const std::string &variant,
                OpAttrs attrs, std::vector<Generator> inputs, Tolerance tol);

// "op_dtype_shape" plus "_variant" when given.
std::string CaseName(const std::string &op, DType dtype, const Shape &shape,
                     const std::string &variant = "");

// Every case, in a fixed order; names are unique.
const std::vector<OpCase> &AllCases();

// The case lists of each family (cases_*.cpp).
void AddPointwiseCases(std::vector<OpCase> &cases);
void AddMovementCases(std::vector<OpCase> &cases);
void AddReduceNormCases(std::vector<OpCase> &cases);
void AddProductCases(std::vector<OpCase> &cases);
void AddAttentionCases(std::vector<OpCase> &cases);
// Edges of device kernels: block sizes, high-rank broadcasts, strided
// reductions (cases_pointwise_edges.cpp).
void AddPointwiseEdgeCases(std::vector<OpCase> &cases);
// Products of few rows: the device GEMV path (cases_gemv.cpp).
void AddGemvCases(std::vector<OpCase> &cases);

} // namespace kiln::oracle
