// Reductions (ReduceSum/Mean/Max/Min) and Softmax/LogSoftmax.
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/softmax.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

using kernels::ReduceOp;

struct ReduceDef {
  const char *name;
  ReduceOp op;
};
constexpr ReduceDef kReduce[] = {{"reduce_sum", ReduceOp::kSum},
                                 {"reduce_mean", ReduceOp::kMean},
                                 {"reduce_max", ReduceOp::kMax},
                                 {"reduce_min", ReduceOp::kMin}};

// Which dims of `data` are reduced, from the axes operand (opset 18 form) or,
// for robustness, an `axes` attribute. Empty axes mean all dims unless
// noop_with_empty_axes is set, in which case nothing is reduced.
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

template <int kIndex> Status InferReduce(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr ReduceDef def = kReduce[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 1, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType(def.name, "data", *in[0],
                 {DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}));
  KILN_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedDims(def.name, attrs, in));
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

template <int kIndex> Status RunReduce(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr ReduceDef def = kReduce[kIndex];
  KILN_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedDims(def.name, attrs, in));
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Reduce<T>(def.op, in[0]->as<const T>(), in[0]->shape, reduce, out[0].as<T>());
    return Status::Ok();
  });
}

// ---- Softmax, LogSoftmax (opset 13: one axis) ---------------------------

template <bool kLog> constexpr const char *kSoftmaxName = kLog ? "log_softmax" : "softmax";

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

template <bool kLog> Status RunSoftmax(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr const char *name = kSoftmaxName<kLog>;
  const Shape &s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t outer = 1, len = 1, inner = 1;
  if (rank > 0) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(name, attrs.Int("axis", -1), rank));
    for (int64_t d = 0; d < axis; ++d)
      outer *= s[d];
    len = s[axis];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= s[d];
  }
  return DispatchFloat(name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Softmax<T>(in[0]->as<const T>(), out[0].as<T>(), outer, len, inner, kLog);
    return Status::Ok();
  });
}

} // namespace

void AddReduceOps(std::vector<OpDef> &table) {
  table.push_back({"reduce_sum", InferReduce<0>, RunReduce<0>});
  table.push_back({"reduce_mean", InferReduce<1>, RunReduce<1>});
  table.push_back({"reduce_max", InferReduce<2>, RunReduce<2>});
  table.push_back({"reduce_min", InferReduce<3>, RunReduce<3>});
  table.push_back({"softmax", InferSoftmax<false>, RunSoftmax<false>});
  table.push_back({"log_softmax", InferSoftmax<true>, RunSoftmax<true>});
}

} // namespace kiln::cpu
