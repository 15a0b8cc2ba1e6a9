// CPU kernels of the broadcasting binary ops (arithmetic, comparisons,
// logic), variadic Max/Min and Where; their shape rules are in
// core/shapes/pointwise_binary.cpp.
#include "backends/op_families.h"
#include "cpu_kernels.h"
#include "kernels/cpu/pointwise_broadcast.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/pointwise.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

using kernels::BinaryOp;
using kernels::BroadcastLayout;
using kernels::CompareOp;
using kernels::LogicOp;

Status MakeLayout(std::string_view op, const std::vector<Shape> &in, const Shape &out,
                  BroadcastLayout *layout) {
  if (!kernels::MakeBroadcastLayout(in, out, layout))
    return OpError(op, "operands do not broadcast to result shape " + ShapeToString(out));
  return Status::Ok();
}

// ---- Arithmetic: add, sub, mul, div, pow --------------------------------

template <size_t kIndex>
Status RunArith(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kArithOps[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  const void *b = in[1]->data;
  std::vector<uint8_t> converted;
  if (in[1]->dtype != in[0]->dtype) {
    // Mixed-type Pow: bring the exponent to the base type once.
    kernels::ElemType from, to;
    if (!ToElemType(in[1]->dtype, &from) || !ToElemType(in[0]->dtype, &to))
      return OpError(def.name, "unsupported operand dtypes");
    converted.resize(static_cast<size_t>(in[1]->numel()) * DTypeSize(in[0]->dtype));
    kernels::CastElements(from, in[1]->data, to, converted.data(), in[1]->numel());
    b = converted.data();
  }
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Binary<T>(def.kind, layout, in[0]->as<const T>(), static_cast<const T *>(b),
                       out[0].as<T>());
    return Status::Ok();
  });
}

// ---- Max, Min: any number of operands, folded pairwise ------------------

template <bool kMax> constexpr const char *kMaxMinName = kMax ? "max" : "min";

template <bool kMax>
Status RunMaxMin(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr const char *name = kMaxMinName<kMax>;
  const BinaryOp op = kMax ? BinaryOp::kMax : BinaryOp::kMin;
  if (in.size() == 1) {
    // One operand broadcasts to itself: a copy.
    CopyBytes(*in[0], out[0]);
    return Status::Ok();
  }
  return DispatchNumeric(name, in[0]->dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    BroadcastLayout layout;
    // The first pair broadcasts straight into the result; later operands
    // fold into it in place (same index in and out, so aliasing is safe).
    KILN_RETURN_IF_ERROR(MakeLayout(name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
    kernels::Binary<T>(op, layout, in[0]->as<const T>(), in[1]->as<const T>(), out[0].as<T>());
    for (size_t i = 2; i < in.size(); ++i) {
      KILN_RETURN_IF_ERROR(MakeLayout(name, {out[0].shape, in[i]->shape}, out[0].shape, &layout));
      kernels::Binary<T>(op, layout, out[0].as<const T>(), in[i]->as<const T>(), out[0].as<T>());
    }
    return Status::Ok();
  });
}

// ---- Comparisons --------------------------------------------------------

template <size_t kIndex>
Status RunCompare(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kCompareOps[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  if (in[0]->dtype == DType::kBool) {
    kernels::Logic(LogicOp::kEqual, layout, in[0]->as<const uint8_t>(), in[1]->as<const uint8_t>(),
                   out[0].as<uint8_t>());
    return Status::Ok();
  }
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Compare<T>(def.kind, layout, in[0]->as<const T>(), in[1]->as<const T>(),
                        out[0].as<uint8_t>());
    return Status::Ok();
  });
}

// ---- Logic: and, or, xor ------------------------------------------------

template <size_t kIndex>
Status RunLogic(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr auto def = kLogicOps[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  kernels::Logic(def.kind, layout, in[0]->as<const uint8_t>(), in[1]->as<const uint8_t>(),
                 out[0].as<uint8_t>());
  return Status::Ok();
}

// ---- Where --------------------------------------------------------------

Status RunWhere(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(
      MakeLayout("where", {in[0]->shape, in[1]->shape, in[2]->shape}, out[0].shape, &layout));
  if (!kernels::Where(DTypeSize(out[0].dtype), layout, in[0]->as<const uint8_t>(), in[1]->data,
                      in[2]->data, out[0].data))
    return OpError("where", std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  return Status::Ok();
}

} // namespace

void AddPointwiseBinaryKernels(std::vector<KernelDef> &table) {
  KILN_ADD_POINTWISE_BINARY_KERNELS(table);
}

} // namespace kiln::cpu
