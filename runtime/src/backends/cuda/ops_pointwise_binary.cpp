// CUDA wrappers of the broadcasting ops: arithmetic (add, sub, mul, div,
// pow), variadic Max/Min, comparisons, logic and Where. The shape rules
// (core/shapes/pointwise_binary.cpp) already accepted the operands and sized the
// result; the kernels are kernels/cuda/pointwise.h.
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

StatusOr<kc::Broadcast> LayoutOf(std::string_view op, const std::vector<Shape> &in,
                                 const Shape &out) {
  kc::Broadcast b;
  if (!kc::MakeBroadcast(in, out, &b))
    return OpError(op, "operands do not broadcast to result shape " + ShapeToString(out) +
                           " within the CUDA kernels' " + std::to_string(kc::Broadcast::kMaxRank) +
                           " merged dims");
  return b;
}

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// Where an op whose operands mix float types (MixesHalf) computes: in f32,
// into a region of op scratch when the result is f16/bf16, cast at the end.
struct Result {
  void *data;
  ElemType type;
  bool via_f32;
};

Result ResultOf(const TensorView &out, ElemType compute, bool widen, void *f32_region) {
  if (widen && IsHalf(out.dtype))
    return {f32_region, ElemType::kF32, true};
  return {out.data, compute, false};
}

Status FinishResult(ExecContext &ctx, std::string_view op, const Result &r, TensorView &out) {
  if (!r.via_f32)
    return Status::Ok();
  KILN_ASSIGN_OR_RETURN(ElemType to, ElemTypeOf(op, out));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Cast(ElemType::kF32, r.data, to, out.data, out.numel(), Stream(ctx)));
  return Status::Ok();
}

uint64_t F32Bytes(const TensorView &t) { return static_cast<uint64_t>(t.numel()) * sizeof(float); }

// ---- Arithmetic: add, sub, mul, div, pow --------------------------------

// Pow's exponent may have its own dtype; as on the CPU it is converted to
// the base's (compute) type first, by Cast's rules, so a float exponent of
// an integer base truncates.
template <size_t kIndex>
Status RunArith(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kArithOps[kIndex];
  KILN_ASSIGN_OR_RETURN(kc::Broadcast b,
                        LayoutOf(def.name, {in[0]->shape, in[1]->shape}, out[0].shape));
  // A half base with an exponent of another type computes in f32 too.
  const bool widen =
      MixesHalf(in, &out[0]) || (IsHalf(in[0]->dtype) && in[1]->dtype != in[0]->dtype);
  KILN_ASSIGN_OR_RETURN(ElemType base, ElemTypeOf(def.name, *in[0]));
  KILN_ASSIGN_OR_RETURN(ElemType exp, ElemTypeOf(def.name, *in[1]));
  if (widen) {
    base = IsHalf(in[0]->dtype) ? ElemType::kF32 : base;
    exp = IsHalf(in[1]->dtype) ? ElemType::kF32 : exp;
  }
  if (base == ElemType::kBool || exp == ElemType::kBool)
    return NoKernel(def.name, DType::kBool);
  if (exp != base && def.kind != kc::BinaryOp::kPow)
    return OpError(def.name, std::string("operands differ in dtype: ") + DTypeName(in[0]->dtype) +
                                 " and " + DTypeName(in[1]->dtype));
  const uint64_t conv_bytes =
      exp == base ? 0 : static_cast<uint64_t>(in[1]->numel()) * kc::ElemSize(base);
  KILN_ASSIGN_OR_RETURN(
      StagedOperands x,
      StagedOperands::Stage(def.name, ctx, in, widen, {conv_bytes, widen ? F32Bytes(out[0]) : 0}));
  const void *e = x.data(1);
  if (exp != base) {
    KILN_CUDA_RETURN_IF_ERROR(kc::Cast(exp, e, base, x.extra(0), in[1]->numel(), Stream(ctx)));
    e = x.extra(0);
  }
  const Result r = ResultOf(out[0], base, widen, x.extra(1));
  KILN_CUDA_RETURN_IF_ERROR(kc::Binary(def.kind, base, b, x.data(0), e, r.data, Stream(ctx)));
  return FinishResult(ctx, def.name, r, out[0]);
}

// ---- Max, Min: any number of operands, folded pairwise ------------------

template <bool kMax> constexpr const char *kMaxMinName = kMax ? "max" : "min";

template <bool kMax>
Status RunMaxMin(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr const char *name = kMaxMinName<kMax>;
  const kc::BinaryOp op = kMax ? kc::BinaryOp::kMax : kc::BinaryOp::kMin;
  const bool widen = MixesHalf(in, &out[0]);
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage(name, ctx, in, widen,
                                                                {widen ? F32Bytes(out[0]) : 0}));
  const ElemType t = x.type(0);
  if (t == ElemType::kBool)
    return NoKernel(name, in[0]->dtype);
  for (size_t i = 1; i < in.size(); ++i)
    if (x.type(i) != t)
      return OpError(name, std::string("operands differ in dtype: ") + DTypeName(in[0]->dtype) +
                               " and " + DTypeName(in[i]->dtype));
  const Result r = ResultOf(out[0], t, widen, x.extra(0));
  if (in.size() == 1) {
    // One operand broadcasts to itself.
    if (!r.via_f32)
      return CopyToResult(ctx, x.data(0), out[0]);
    KILN_CUDA_RETURN_IF_ERROR(kc::Cast(t, x.data(0), r.type, r.data, in[0]->numel(), Stream(ctx)));
    return FinishResult(ctx, name, r, out[0]);
  }
  // The first pair broadcasts straight into the result; later operands fold
  // into it in place (each element read and written by the same thread).
  KILN_ASSIGN_OR_RETURN(kc::Broadcast b,
                        LayoutOf(name, {in[0]->shape, in[1]->shape}, out[0].shape));
  KILN_CUDA_RETURN_IF_ERROR(kc::Binary(op, t, b, x.data(0), x.data(1), r.data, Stream(ctx)));
  for (size_t i = 2; i < in.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(b, LayoutOf(name, {out[0].shape, in[i]->shape}, out[0].shape));
    KILN_CUDA_RETURN_IF_ERROR(kc::Binary(op, t, b, r.data, x.data(i), r.data, Stream(ctx)));
  }
  return FinishResult(ctx, name, r, out[0]);
}

// ---- Comparisons --------------------------------------------------------

template <size_t kIndex>
Status RunCompare(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kCompareOps[kIndex];
  KILN_ASSIGN_OR_RETURN(kc::Broadcast b,
                        LayoutOf(def.name, {in[0]->shape, in[1]->shape}, out[0].shape));
  KILN_ASSIGN_OR_RETURN(StagedOperands x,
                        StagedOperands::Stage(def.name, ctx, in, MixesHalf(in, nullptr)));
  const ElemType t = x.type(0);
  if (x.type(1) != t)
    return OpError(def.name, std::string("operands differ in dtype: ") + DTypeName(in[0]->dtype) +
                                 " and " + DTypeName(in[1]->dtype));
  if (t == ElemType::kBool && def.kind != kc::CompareOp::kEqual)
    return NoKernel(def.name, in[0]->dtype);
  KILN_CUDA_RETURN_IF_ERROR(
      kc::Compare(def.kind, t, b, x.data(0), x.data(1), out[0].as<uint8_t>(), Stream(ctx)));
  return Status::Ok();
}

// ---- Logic: and, or, xor ------------------------------------------------

template <size_t kIndex>
Status RunLogic(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kLogicOps[kIndex];
  KILN_ASSIGN_OR_RETURN(kc::Broadcast b,
                        LayoutOf(def.name, {in[0]->shape, in[1]->shape}, out[0].shape));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage(def.name, ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(kc::Logic(def.kind, b, static_cast<const uint8_t *>(x.data(0)),
                                      static_cast<const uint8_t *>(x.data(1)), out[0].as<uint8_t>(),
                                      Stream(ctx)));
  return Status::Ok();
}

// ---- Where --------------------------------------------------------------

Status RunWhere(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(
      kc::Broadcast b, LayoutOf("where", {in[0]->shape, in[1]->shape, in[2]->shape}, out[0].shape));
  const size_t size = DTypeSize(out[0].dtype);
  if (size != 1 && size != 2 && size != 4 && size != 8)
    return OpError("where", std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  KILN_ASSIGN_OR_RETURN(StagedOperands x, StagedOperands::Stage("where", ctx, in));
  KILN_CUDA_RETURN_IF_ERROR(kc::Where(size, b, static_cast<const uint8_t *>(x.data(0)), x.data(1),
                                      x.data(2), out[0].data, Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddPointwiseBinaryKernels(std::vector<KernelDef> &table) {
  KILN_ADD_POINTWISE_BINARY_KERNELS(table);
}

} // namespace kiln::cuda
