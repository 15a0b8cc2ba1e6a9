// CUDA wrappers of the elementwise ops: unary math, Not, IsNaN, Identity,
// Clip, Cast, the broadcasting binary ops, comparisons, logic and Where.
// The shape rules (core/shapes/pointwise.cpp, pointwise_binary.cpp) already accepted the
// operands and sized the results; the kernels are kernels/cuda/pointwise.h.
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/op_operands.h"
#include "backends/op_families.h"
#include "core/shapes/operand_checks.h"
#include "kernels/cuda/pointwise.h"

#include <string>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;
using kc::ElemType;

// ---- Unary math -----------------------------------------------------------

template <size_t kIndex>
Status RunUnary(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kUnaryOps[kIndex];
  KILN_ASSIGN_OR_RETURN(ElemType t, ElemTypeOf(def.name, *in[0]));
  if (!kc::UnaryDefined(def.kind, t))
    return OpError(def.name, std::string("not defined for dtype ") + DTypeName(in[0]->dtype));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage(def.name, ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Unary(def.kind, t, x.data(0), out[0].data, in[0]->numel(), Stream(ctx)));
  return Status::Ok();
}

Status RunNot(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("not", ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(kc::LogicalNot(static_cast<const uint8_t *>(x.data(0)),
                                           out[0].as<uint8_t>(), in[0]->numel(), Stream(ctx)));
  return Status::Ok();
}

Status RunIsNaN(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(ElemType t, ElemTypeOf("is_nan", *in[0]));
  if (!kc::IsFloatType(t))
    return OpError("is_nan", std::string("unsupported dtype ") + DTypeName(in[0]->dtype));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("is_nan", ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::IsNaN(t, x.data(0), out[0].as<uint8_t>(), in[0]->numel(), Stream(ctx)));
  return Status::Ok();
}

Status RunIdentity(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("identity", ctx, in));
  return CopyToResult(ctx, x.data(0), out[0]);
}

// ---- Clip: scalar bounds, read by the kernel from device memory ---------

Status RunClip(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != nullptr && in[i]->numel() != 1)
      return OpError("clip", "bound " + std::to_string(i) + " must be one element, got shape " +
                                 ShapeToString(in[i]->shape));
  // Bounds of another float type than the input: everything in f32.
  const bool widen = MixesHalf(in, &out[0]);
  const bool via_f32 = widen && out[0].dtype != DType::kF32;
  const int64_t n = in[0]->numel();
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("clip", ctx, in, widen,
                                                                {via_f32 ? n * sizeof(float) : 0}));
  const ElemType t = x.type(0);
  if (t == ElemType::kBool)
    return NoKernel("clip", in[0]->dtype);
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != nullptr && x.type(i) != t)
      return OpError("clip", std::string("bound ") + std::to_string(i) + " is " +
                                 DTypeName(in[i]->dtype) + ", the input " +
                                 DTypeName(in[0]->dtype));
  const void *lo = in.size() > 1 ? x.data(1) : nullptr;
  const void *hi = in.size() > 2 ? x.data(2) : nullptr;
  void *y = via_f32 ? x.extra(0) : out[0].data;
  KILN_CUDA_RETURN_IF_ERROR(kc::Clip(t, x.data(0), lo, hi, y, n, Stream(ctx)));
  if (via_f32) {
    KILN_ASSIGN_OR_RETURN(ElemType to, ElemTypeOf("clip", out[0]));
    KILN_CUDA_RETURN_IF_ERROR(kc::Cast(ElemType::kF32, y, to, out[0].data, n, Stream(ctx)));
  }
  return Status::Ok();
}

// ---- Cast: `to` is a kiln DType number; the rule set out[0].dtype --------

Status RunCast(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  ElemType from, to;
  if (!ToElemType(in[0]->dtype, &from) || !ToElemType(out[0].dtype, &to))
    return OpError("cast", std::string("cannot cast ") + DTypeName(in[0]->dtype) + " to " +
                               DTypeName(out[0].dtype));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("cast", ctx, in));
  if (from == to)
    return CopyToResult(ctx, x.data(0), out[0]);
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Cast(from, x.data(0), to, out[0].data, in[0]->numel(), Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddPointwiseKernels(std::vector<KernelDef> &table) { KILN_ADD_POINTWISE_KERNELS(table); }

} // namespace kiln::cuda
