// CPU kernels of the reductions (ReduceSum/Mean/Max/Min) and
// Softmax/LogSoftmax; their shape rules are in core/shapes/reduce.cpp.
#include "core/shapes/reduce.h"
#include "cpu_kernels.h"
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

template <int kIndex>
Status RunReduce(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
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

template <bool kLog>
Status RunSoftmax(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
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

void AddReduceKernels(std::vector<KernelDef> &table) {
  table.push_back({"reduce_sum", RunReduce<0>});
  table.push_back({"reduce_mean", RunReduce<1>});
  table.push_back({"reduce_max", RunReduce<2>});
  table.push_back({"reduce_min", RunReduce<3>});
  table.push_back({"softmax", RunSoftmax<false>});
  table.push_back({"log_softmax", RunSoftmax<true>});
}

} // namespace kiln::cpu
