// CPU kernels of the ops that compute shapes or views of one buffer:
// Reshape, Flatten, Squeeze, Unsqueeze (a copy, or nothing in place), Shape,
// Size, plus the generators ConstantOfShape and Range; their shape rules are
// in core/shapes/movement_shape.cpp.
#include "backends/op_families.h"
#include "core/shapes/movement_shape.h"
#include "cpu_kernels.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/movement_fill.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

Status RunCopy(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  CopyBytes(*in[0], out[0]);
  return Status::Ok();
}

// ---- Shape --------------------------------------------------------------

Status RunShape(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  int64_t start, end;
  ShapeRange(attrs, static_cast<int64_t>(in[0]->shape.size()), &start, &end);
  for (int64_t d = start; d < end; ++d)
    out[0].as<int64_t>()[d - start] = in[0]->shape[d];
  return Status::Ok();
}

// ---- Size ---------------------------------------------------------------

Status RunSize(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  *out[0].as<int64_t>() = in[0]->numel();
  return Status::Ok();
}

// ---- ConstantOfShape ----------------------------------------------------

Status RunConstantOfShape(ExecContext &, const OpAttrs &attrs, const Inputs &, Outputs &out) {
  kernels::ElemType to;
  if (!ToElemType(out[0].dtype, &to))
    return OpError("constant_of_shape",
                   std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  uint8_t value[8] = {};
  // An integer `value` stays exact; a float one is converted like Cast.
  auto it = attrs.all().find("value");
  if (it != attrs.all().end() && it->second.kind == AttrValue::Kind::kInt) {
    const int64_t v = it->second.i;
    kernels::CastElements(kernels::ElemType::kI64, &v, to, value, 1);
  } else {
    const float v = attrs.Float("value", 0.0f);
    kernels::CastElements(kernels::ElemType::kF32, &v, to, value, 1);
  }
  kernels::FillBytes(DTypeSize(out[0].dtype), value, out[0].data, out[0].numel());
  return Status::Ok();
}

// ---- Range --------------------------------------------------------------

Status RunRange(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  const int64_t n = out[0].numel();
  switch (out[0].dtype) {
  case DType::kF32:
    kernels::Range<float>(*in[0]->as<const float>(), *in[2]->as<const float>(), out[0].as<float>(),
                          n);
    break;
  case DType::kF64:
    kernels::Range<double>(*in[0]->as<const double>(), *in[2]->as<const double>(),
                           out[0].as<double>(), n);
    break;
  case DType::kI32:
    kernels::Range<int32_t>(*in[0]->as<const int32_t>(), *in[2]->as<const int32_t>(),
                            out[0].as<int32_t>(), n);
    break;
  case DType::kI64:
    kernels::Range<int64_t>(*in[0]->as<const int64_t>(), *in[2]->as<const int64_t>(),
                            out[0].as<int64_t>(), n);
    break;
  default:
    return OpError("range", std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  }
  return Status::Ok();
}

} // namespace

void AddMovementShapeOpKernels(std::vector<KernelDef> &table) {
  KILN_ADD_MOVEMENT_SHAPE_KERNELS(table);
}

} // namespace kiln::cpu
