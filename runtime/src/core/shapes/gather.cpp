// Shape rules of the ops that address a tensor with indices: Gather (along
// one axis), GatherND and ScatterND. The indices' values are checked by the kernels,
// before anything is written.
#include "core/shapes/gather.h"

#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {

StatusOr<ScatterReduction> ScatterReductionOf(const OpAttrs &attrs) {
  const std::string r = attrs.String("reduction", "none");
  if (r == "none")
    return ScatterReduction::kNone;
  if (r == "add")
    return ScatterReduction::kAdd;
  if (r == "mul")
    return ScatterReduction::kMul;
  if (r == "max")
    return ScatterReduction::kMax;
  if (r == "min")
    return ScatterReduction::kMin;
  return OpError("scatter_nd", "reduction '" + r + "' is not one of none, add, mul, max, min");
}

namespace {

// ---- GatherND -----------------------------------------------------------

Status InferGatherND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("gather_nd", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("gather_nd", "indices", *in[1], {DType::kI64}));
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const int64_t r = static_cast<int64_t>(s.size()), q = static_cast<int64_t>(is.size());
  const int64_t b = attrs.Int("batch_dims", 0);
  if (r < 1 || q < 1)
    return OpError("gather_nd", "data and indices must have rank >= 1, got " + ShapeToString(s) +
                                    " and " + ShapeToString(is));
  if (b < 0 || b >= r || b >= q)
    return OpError("gather_nd", "batch_dims " + std::to_string(b) +
                                    " must be in [0, min(rank(data), rank(indices)))");
  const int64_t m = is.back();
  if (m < 1 || m > r - b)
    return OpError("gather_nd", "the last dim of indices " + ShapeToString(is) +
                                    " must be in [1, " + std::to_string(r - b) + "] for data " +
                                    ShapeToString(s) + " and batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (s[d] != is[d])
      return OpError("gather_nd", "batch dim " + std::to_string(d) + " differs: data " +
                                      ShapeToString(s) + ", indices " + ShapeToString(is));
  Shape shape(is.begin(), is.end() - 1);
  shape.insert(shape.end(), s.begin() + b + m, s.end());
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

// ---- ScatterND ----------------------------------------------------------

Status InferScatterND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("scatter_nd", in, 3, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("scatter_nd", "indices", *in[1], {DType::kI64}));
  KILN_RETURN_IF_ERROR(CheckSameDType("scatter_nd", *in[0], *in[2]));
  KILN_ASSIGN_OR_RETURN(ScatterReduction reduction, ScatterReductionOf(attrs));
  if (reduction != ScatterReduction::kNone && in[0]->dtype == DType::kBool)
    return OpError("scatter_nd", "reduction '" + attrs.String("reduction", "") +
                                     "' is not supported for bool data");
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  if (r < 1 || is.empty())
    return OpError("scatter_nd", "data and indices must have rank >= 1, got " + ShapeToString(s) +
                                     " and " + ShapeToString(is));
  const int64_t k = is.back();
  if (k < 1 || k > r)
    return OpError("scatter_nd", "the last dim of indices " + ShapeToString(is) +
                                     " must be in [1, " + std::to_string(r) + "] for data " +
                                     ShapeToString(s));
  Shape expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), s.begin() + k, s.end());
  if (in[2]->shape != expected)
    return OpError("scatter_nd", "updates " + ShapeToString(in[2]->shape) + " must have shape " +
                                     ShapeToString(expected) +
                                     " (indices.shape[:-1] + data.shape[k:])");
  out[0] = {in[0]->dtype, s, nullptr};
  return Status::Ok();
}

// ---- Gather -------------------------------------------------------------

Status InferGather(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("gather", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("gather", "indices", *in[1], {DType::kI64, DType::kI32}));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("gather", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  Shape shape(s.begin(), s.begin() + axis);
  shape.insert(shape.end(), in[1]->shape.begin(), in[1]->shape.end());
  shape.insert(shape.end(), s.begin() + axis + 1, s.end());
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddGatherShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"gather", InferGather});
  rules.push_back({"gather_nd", InferGatherND});
  rules.push_back({"scatter_nd", InferScatterND});
}

} // namespace kiln
