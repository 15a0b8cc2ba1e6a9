// CPU kernels of the reductions (ReduceSum/Mean/Max/Min),
// Softmax/LogSoftmax and CumSum; their shape rules are in core/shapes/reduce.cpp.
#include "backends/op_families.h"
#include "core/shapes/reduce.h"
#include "cpu_kernels.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/reduce_softmax.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

template <size_t kIndex>
Status RunReduce(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr auto def = kReduceOps[kIndex];
  KILN_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedDims(def.name, attrs, in));
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Reduce<T>(def.kind, in[0]->as<const T>(), in[0]->shape, reduce, out[0].as<T>());
    return Status::Ok();
  });
}

// ---- Softmax, LogSoftmax (opset 13: one axis) ---------------------------

template <bool kLog>
Status RunSoftmax(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr const char *name = kSoftmaxName<kLog>;
  KILN_ASSIGN_OR_RETURN(SoftmaxDims dims, SoftmaxDimsOf(name, attrs, in[0]->shape));
  return DispatchFloat(name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Softmax<T>(in[0]->as<const T>(), out[0].as<T>(), dims.outer, dims.len, dims.inner,
                        kLog);
    return Status::Ok();
  });
}

// ---- CumSum ---------------------------------------------------------------

Status RunCumSum(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(SoftmaxDims dims, CumSumDimsOf(in));
  const bool exclusive = attrs.Int("exclusive", 0) != 0, reverse = attrs.Int("reverse", 0) != 0;
  return DispatchNumeric("cumsum", in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::CumSum<T>(in[0]->as<const T>(), out[0].as<T>(), dims.outer, dims.len, dims.inner,
                       exclusive, reverse);
    return Status::Ok();
  });
}

} // namespace

void AddReduceKernels(std::vector<KernelDef> &table) { KILN_ADD_REDUCE_KERNELS(table); }

} // namespace kiln::cpu
