// CUDA wrappers of the reductions (ReduceSum/Mean/Max/Min),
// Softmax/LogSoftmax and CumSum; their shape rules are in core/shapes/reduce.cpp and
// the kernels in kernels/cuda/reduce.h.
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/op_operands.h"
#include "backends/op_families.h"
#include "core/shapes/operand_checks.h"
#include "core/shapes/reduce.h"
#include "kernels/cuda/reduce.h"

#include <string>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;
using kc::ElemType;

// The reduced dims when the shapes alone decide them, so no axes need
// reading. Dims of 1 are left out (reducing one or not moves no data). With
// keepdims a reduced dim is 1 where the input's is not; without, the
// result's other dims must fit into the input's at one place only (the
// leftmost and rightmost fits agree): [7,13,37] -> [13] does, [3,3] -> [3]
// does not.
bool ReducedDimsFromShapes(const Shape &in, const Shape &out, bool keepdims,
                           std::vector<bool> *reduce) {
  reduce->assign(in.size(), false);
  if (keepdims) {
    if (out.size() != in.size())
      return false;
    for (size_t d = 0; d < in.size(); ++d)
      (*reduce)[d] = out[d] != in[d];
    return true;
  }
  std::vector<size_t> dims; // the input's dims other than 1
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1)
      dims.push_back(d);
  std::vector<int64_t> want; // the result's
  for (int64_t o : out)
    if (o != 1)
      want.push_back(o);
  std::vector<size_t> left, right(want.size());
  size_t p = 0;
  for (int64_t w : want) {
    while (p < dims.size() && in[dims[p]] != w)
      ++p;
    if (p == dims.size())
      return false;
    left.push_back(p++);
  }
  size_t q = dims.size();
  for (size_t j = want.size(); j-- > 0;) {
    while (q > 0 && in[dims[q - 1]] != want[j])
      --q;
    if (q == 0)
      return false;
    right[j] = --q;
  }
  if (left != right)
    return false;
  for (size_t i = 0; i < dims.size(); ++i)
    (*reduce)[dims[i]] = true;
  for (size_t i : left)
    (*reduce)[dims[i]] = false;
  return true;
}

// Which dims are reduced: from the shapes when they decide it, else from the
// axes operand, read directly when the plan holds it on the host, else
// copied back from device memory, which waits for the stream (a few bytes;
// only an ambiguous reduction with its axes on the device pays it).
StatusOr<std::vector<bool>> ReducedDimsOf(ExecContext &ctx, const char *op, const OpAttrs &attrs,
                                          const Inputs &in, const TensorView &out) {
  std::vector<bool> reduce;
  if (ReducedDimsFromShapes(in[0]->shape, out.shape, attrs.Int("keepdims", 1) != 0, &reduce))
    return reduce;
  const TensorView *axes = in.size() > 1 ? in[1] : nullptr;
  if (axes == nullptr || axes->space == MemorySpace::kHost || axes->numel() == 0)
    return ReducedDims(op, attrs, in);
  if (axes->dtype != DType::kI64 && axes->dtype != DType::kI32)
    return OpError(op,
                   std::string("operand 'axes' must be i64 or i32, got ") + DTypeName(axes->dtype));
  std::vector<uint8_t> bytes(axes->bytes());
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(bytes.data(), axes->data, bytes.size(), cudaMemcpyDeviceToHost, Stream(ctx)));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(Stream(ctx)));
  TensorView host = *axes;
  host.data = bytes.data();
  host.space = MemorySpace::kHost;
  Inputs with_host = in;
  with_host[1] = &host;
  return ReducedDims(op, attrs, with_host);
}

template <size_t kIndex>
Status RunReduce(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr auto def = kReduceOps[kIndex];
  KILN_ASSIGN_OR_RETURN(ElemType t, ElemTypeOf(def.name, *in[0]));
  if (t == ElemType::kBool)
    return NoKernel(def.name, in[0]->dtype);
  KILN_ASSIGN_OR_RETURN(std::vector<bool> reduce, ReducedDimsOf(ctx, def.name, attrs, in, out[0]));
  if (!kc::ReduceShapeSupported(in[0]->shape, reduce))
    return OpError(def.name, "input shape " + ShapeToString(in[0]->shape) +
                                 " alternates kept and reduced dims more than the CUDA kernels' " +
                                 std::to_string(kc::kMaxReduceGroups) + " groups of each");
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage(def.name, ctx, {in[0]}));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Reduce(def.kind, t, x.data(0), in[0]->shape, reduce, out[0].data, Stream(ctx)));
  return Status::Ok();
}

// ---- Softmax, LogSoftmax (opset 13: one axis) ---------------------------

template <bool kLog>
Status RunSoftmax(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  constexpr const char *name = kSoftmaxName<kLog>;
  KILN_ASSIGN_OR_RETURN(ElemType t, ElemTypeOf(name, *in[0]));
  if (!kc::IsFloatType(t))
    return NoKernel(name, in[0]->dtype);
  KILN_ASSIGN_OR_RETURN(SoftmaxDims dims, SoftmaxDimsOf(name, attrs, in[0]->shape));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage(name, ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Softmax(t, x.data(0), out[0].data, dims.outer, dims.len, dims.inner, kLog, Stream(ctx)));
  return Status::Ok();
}

// ---- CumSum ---------------------------------------------------------------

// The axis operand is read on the host; one held on the device is copied
// back first, which waits for the stream (a few bytes; CumSum numbers
// positions in dense plans, where the ragged rewrite has not removed it).
Status RunCumSum(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(ElemType t, ElemTypeOf("cumsum", *in[0]));
  if (t == ElemType::kBool)
    return NoKernel("cumsum", in[0]->dtype);
  const TensorView *axis = in[1];
  std::vector<uint8_t> bytes;
  TensorView host = *axis;
  if (axis->space != MemorySpace::kHost && axis->numel() > 0) {
    bytes.resize(axis->bytes());
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(bytes.data(), axis->data, bytes.size(),
                                              cudaMemcpyDeviceToHost, Stream(ctx)));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(Stream(ctx)));
    host.data = bytes.data();
    host.space = MemorySpace::kHost;
  }
  KILN_ASSIGN_OR_RETURN(SoftmaxDims dims, CumSumDimsOf({in[0], &host}));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("cumsum", ctx, {in[0]}));
  KILN_CUDA_RETURN_IF_ERROR(kc::CumSum(t, x.data(0), out[0].data, dims.outer, dims.len, dims.inner,
                                       attrs.Int("exclusive", 0) != 0, attrs.Int("reverse", 0) != 0,
                                       Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddReduceKernels(std::vector<KernelDef> &table) { KILN_ADD_REDUCE_KERNELS(table); }

} // namespace kiln::cuda
