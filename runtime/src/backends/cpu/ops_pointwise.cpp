// CPU kernels of the same-shape ops of one tensor: unary math, Not, IsNaN,
// Identity, Clip, Cast and Gelu; their shape rules are in
// core/shapes/pointwise.cpp (the broadcasting ones: ops_pointwise_binary.cpp).
#include "backends/op_families.h"
#include "core/shapes/products_mlp.h"
#include "cpu_kernels.h"
#include "fused_activation.h"
#include "kernels/cpu/pointwise_activation.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/pointwise.h"
#include "op_util.h"

#include <limits>

namespace kiln::cpu {
namespace {

using kernels::UnaryOp;

template <size_t kIndex>
Status RunUnary(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kUnaryOps[kIndex];
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (!kernels::Unary<T>(def.kind, in[0]->as<const T>(), out[0].as<T>(), in[0]->numel()))
      return OpError(def.name, std::string("not defined for dtype ") + DTypeName(in[0]->dtype));
    return Status::Ok();
  });
}

Status RunNot(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::LogicalNot(in[0]->as<const uint8_t>(), out[0].as<uint8_t>(), in[0]->numel());
  return Status::Ok();
}

Status RunIsNaN(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  const int64_t n = in[0]->numel();
  uint8_t *y = out[0].as<uint8_t>();
  switch (in[0]->dtype) {
  case DType::kF32:
    kernels::IsNaN(in[0]->as<const float>(), y, n);
    break;
  case DType::kF64:
    kernels::IsNaN(in[0]->as<const double>(), y, n);
    break;
  case DType::kF16:
    kernels::IsNaN16(in[0]->as<const uint16_t>(), false, y, n);
    break;
  case DType::kBF16:
    kernels::IsNaN16(in[0]->as<const uint16_t>(), true, y, n);
    break;
  default:
    return OpError("is_nan", std::string("unsupported dtype ") + DTypeName(in[0]->dtype));
  }
  return Status::Ok();
}

Status RunIdentity(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  CopyBytes(*in[0], out[0]);
  return Status::Ok();
}

// ---- Clip ---------------------------------------------------------------

Status RunClip(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  return DispatchNumeric("clip", in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    // Absent bounds are the type's extremes, so one kernel covers all forms.
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (std::numeric_limits<T>::has_infinity) {
      lo = -std::numeric_limits<T>::infinity();
      hi = std::numeric_limits<T>::infinity();
    }
    if (in.size() > 1 && in[1] != nullptr)
      lo = *in[1]->as<const T>();
    if (in.size() > 2 && in[2] != nullptr)
      hi = *in[2]->as<const T>();
    kernels::Clip<T>(in[0]->as<const T>(), lo, hi, out[0].as<T>(), in[0]->numel());
    return Status::Ok();
  });
}

// ---- Cast: `to` is a kiln DType number ---------------------------------

Status RunCast(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::ElemType from, to;
  if (!ToElemType(in[0]->dtype, &from) || !ToElemType(out[0].dtype, &to))
    return OpError("cast", std::string("cannot cast ") + DTypeName(in[0]->dtype) + " to " +
                               DTypeName(out[0].dtype));
  if (in[0]->dtype == out[0].dtype) {
    CopyBytes(*in[0], out[0]);
    return Status::Ok();
  }
  kernels::CastElements(from, in[0]->data, to, out[0].data, in[0]->numel());
  return Status::Ok();
}

// ---- gelu ----------------------------------------------------------------

// x and y are f32 and contiguous, so the whole tensor is one array.
Status RunGelu(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(kernels::Activation act, KernelActivation(GeluActivation(attrs)));
  kernels::Activate(act, in[0]->as<const float>(), out[0].as<float>(), in[0]->numel());
  return Status::Ok();
}

} // namespace

void AddPointwiseKernels(std::vector<KernelDef> &table) {
  table.push_back({"gelu", RunGelu});
  KILN_ADD_POINTWISE_KERNELS(table);
}

} // namespace kiln::cpu
