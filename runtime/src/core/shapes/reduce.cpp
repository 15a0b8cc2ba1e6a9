// Shape rules of the reductions (ReduceSum/Mean/Max/Min) and
// Softmax/LogSoftmax.
#include "core/shapes/reduce.h"

#include "core/named_list.h"
#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {

StatusOr<std::vector<bool>> ReducedDims(const char *op, const OpAttrs &attrs, const Inputs &in) {
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1] != nullptr) {
    KILN_ASSIGN_OR_RETURN(axes, ReadInts(op, "axes", *in[1]));
  } else {
    axes = attrs.Ints("axes");
  }
  if (axes.empty()) {
    const bool noop = attrs.Int("noop_with_empty_axes", 0) != 0;
    return std::vector<bool>(static_cast<size_t>(rank), !noop);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(op, axes, rank));
  std::vector<bool> reduce(static_cast<size_t>(rank), false);
  for (int64_t a : norm)
    reduce[a] = true;
  return reduce;
}

StatusOr<SoftmaxDims> SoftmaxDimsOf(const char *op, const OpAttrs &attrs, const Shape &shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  SoftmaxDims dims;
  if (rank == 0)
    return dims;
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, attrs.Int("axis", -1), rank));
  for (int64_t d = 0; d < axis; ++d)
    dims.outer *= shape[d];
  dims.len = shape[axis];
  for (int64_t d = axis + 1; d < rank; ++d)
    dims.inner *= shape[d];
  return dims;
}

StatusOr<SoftmaxDims> CumSumDimsOf(const Inputs &in) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axis, ReadInts("cumsum", "axis", *in[1]));
  if (axis.size() != 1)
    return OpError("cumsum", "operand 'axis' must hold one element, got shape " +
                                 ShapeToString(in[1]->shape));
  Shape shape = in[0]->shape;
  if (shape.empty())
    return OpError("cumsum", "input must have rank >= 1");
  OpAttrs attrs;
  AttrValue v;
  v.i = axis[0];
  attrs.Set("axis", v);
  return SoftmaxDimsOf("cumsum", attrs, shape);
}

namespace {

struct ReduceName {
  const char *name;
};
constexpr ReduceName kReduce[] = {
#define KILN_REDUCE(Id, name) {name},
#include "kernels/reduce_ops.def"
};

template <size_t kIndex> Status InferReduce(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr const char *name = kReduce[kIndex].name;
  KILN_RETURN_IF_ERROR(CheckArity(name, in, 1, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType(name, "data", *in[0],
                 {DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}));
  KILN_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedDims(name, attrs, in));
  const bool keepdims = attrs.Int("keepdims", 1) != 0;
  Shape shape;
  for (size_t d = 0; d < reduce.size(); ++d) {
    if (!reduce[d]) {
      shape.push_back(in[0]->shape[d]);
    } else if (keepdims) {
      shape.push_back(1);
    }
  }
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

// ---- Softmax, LogSoftmax (opset 13: one axis) ---------------------------

template <bool kLog> Status InferSoftmax(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr const char *name = kSoftmaxName<kLog>;
  KILN_RETURN_IF_ERROR(CheckArity(name, in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(name, "input", *in[0], {DType::kF32, DType::kF64}));
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
  // A scalar has one implicit axis of length 1.
  if (rank > 0)
    KILN_RETURN_IF_ERROR(NormalizeAxis(name, attrs.Int("axis", -1), rank).status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

// ---- CumSum ---------------------------------------------------------------

Status InferCumSum(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("cumsum", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("cumsum", "input", *in[0],
                 {DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}));
  KILN_RETURN_IF_ERROR(CheckDType("cumsum", "axis", *in[1], {DType::kI32, DType::kI64}));
  for (const char *flag : {"exclusive", "reverse"})
    if (attrs.Int(flag, 0) != 0 && attrs.Int(flag, 0) != 1)
      return OpError("cumsum", std::string("attribute '") + flag + "' must be 0 or 1");
  if (in[1]->data != nullptr)
    KILN_RETURN_IF_ERROR(CumSumDimsOf(in).status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddReduceShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"cumsum", InferCumSum});
  AddEach<kReduce>(rules, [](auto i) { return InferReduce<decltype(i)::value>; });
  rules.push_back({"softmax", InferSoftmax<false>});
  rules.push_back({"log_softmax", InferSoftmax<true>});
}

} // namespace kiln
