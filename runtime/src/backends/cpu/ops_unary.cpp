// Same-shape ops of one tensor: unary math, Not, IsNaN, Identity, Clip and
// Cast.
#include "kernels/cpu/cast.h"
#include "kernels/cpu/elementwise.h"
#include "op_util.h"

#include <limits>

namespace kiln::cpu {
namespace {

using kernels::UnaryOp;

struct UnaryDef {
  const char *name;
  UnaryOp op;
  bool integers; // also defined on integer dtypes
};
constexpr UnaryDef kUnary[] = {
    {"sqrt", UnaryOp::kSqrt, false},   {"reciprocal", UnaryOp::kReciprocal, false},
    {"neg", UnaryOp::kNeg, true},      {"exp", UnaryOp::kExp, false},
    {"log", UnaryOp::kLog, false},     {"erf", UnaryOp::kErf, false},
    {"tanh", UnaryOp::kTanh, false},   {"sigmoid", UnaryOp::kSigmoid, false},
    {"relu", UnaryOp::kRelu, true},    {"abs", UnaryOp::kAbs, true},
    {"floor", UnaryOp::kFloor, false}, {"ceil", UnaryOp::kCeil, false},
    {"sin", UnaryOp::kSin, false},     {"cos", UnaryOp::kCos, false}};

template <int kIndex> Status InferUnary(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr UnaryDef def = kUnary[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 1, 1, out, 1, 1));
  if (def.integers) {
    KILN_RETURN_IF_ERROR(CheckDType(
        def.name, "X", *in[0], {DType::kF32, DType::kF64, DType::kI8, DType::kI32, DType::kI64}));
  } else {
    KILN_RETURN_IF_ERROR(CheckDType(def.name, "X", *in[0], {DType::kF32, DType::kF64}));
  }
  out[0].dtype = in[0]->dtype;
  out[0].shape = in[0]->shape;
  return Status::Ok();
}

template <int kIndex> Status RunUnary(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr UnaryDef def = kUnary[kIndex];
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (!kernels::Unary<T>(def.op, in[0]->as<const T>(), out[0].as<T>(), in[0]->numel()))
      return OpError(def.name, std::string("not defined for dtype ") + DTypeName(in[0]->dtype));
    return Status::Ok();
  });
}

Status InferNot(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("not", in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("not", "X", *in[0], {DType::kBool}));
  out[0] = {DType::kBool, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunNot(const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::LogicalNot(in[0]->as<const uint8_t>(), out[0].as<uint8_t>(), in[0]->numel());
  return Status::Ok();
}

Status InferIsNaN(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("is_nan", in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("is_nan", "X", *in[0], {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}));
  out[0] = {DType::kBool, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunIsNaN(const OpAttrs &, const Inputs &in, Outputs &out) {
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

Status InferIdentity(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("identity", in, 1, 1, out, 1, 1));
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunIdentity(const OpAttrs &, const Inputs &in, Outputs &out) {
  CopyBytes(*in[0], out[0]);
  return Status::Ok();
}

// ---- Clip ---------------------------------------------------------------

Status InferClip(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("clip", in, 1, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("clip", "input", *in[0],
                 {DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64}));
  const char *names[] = {"input", "min", "max"};
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i] == nullptr)
      continue;
    KILN_RETURN_IF_ERROR(CheckSameDType("clip", *in[0], *in[i]));
    if (in[i]->numel() != 1)
      return OpError("clip", std::string("operand '") + names[i] +
                                 "' must be a scalar, got shape " + ShapeToString(in[i]->shape));
  }
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunClip(const OpAttrs &, const Inputs &in, Outputs &out) {
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

StatusOr<DType> CastTarget(const OpAttrs &attrs) {
  if (!attrs.Has("to"))
    return OpError("cast", "attribute 'to' is missing");
  const int64_t to = attrs.Int("to", 0);
  kernels::ScalarKind kind;
  if (to < 0 || to > 127 || !ToScalarKind(static_cast<DType>(to), &kind))
    return OpError("cast", "attribute 'to' = " + std::to_string(to) +
                               " is not a kiln dtype (expected 1..9, see schemas/plan.fbs)");
  return static_cast<DType>(to);
}

Status InferCast(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("cast", in, 1, 1, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(DType to, CastTarget(attrs));
  kernels::ScalarKind kind;
  if (!ToScalarKind(in[0]->dtype, &kind))
    return OpError("cast", std::string("cannot cast from dtype ") + DTypeName(in[0]->dtype));
  out[0] = {to, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunCast(const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::ScalarKind from, to;
  if (!ToScalarKind(in[0]->dtype, &from) || !ToScalarKind(out[0].dtype, &to))
    return OpError("cast", std::string("cannot cast ") + DTypeName(in[0]->dtype) + " to " +
                               DTypeName(out[0].dtype));
  if (in[0]->dtype == out[0].dtype) {
    CopyBytes(*in[0], out[0]);
    return Status::Ok();
  }
  kernels::CastElements(from, in[0]->data, to, out[0].data, in[0]->numel());
  return Status::Ok();
}

} // namespace

void AddUnaryOps(std::vector<OpDef> &table) {
  table.push_back({"sqrt", InferUnary<0>, RunUnary<0>});
  table.push_back({"reciprocal", InferUnary<1>, RunUnary<1>});
  table.push_back({"neg", InferUnary<2>, RunUnary<2>});
  table.push_back({"exp", InferUnary<3>, RunUnary<3>});
  table.push_back({"log", InferUnary<4>, RunUnary<4>});
  table.push_back({"erf", InferUnary<5>, RunUnary<5>});
  table.push_back({"tanh", InferUnary<6>, RunUnary<6>});
  table.push_back({"sigmoid", InferUnary<7>, RunUnary<7>});
  table.push_back({"relu", InferUnary<8>, RunUnary<8>});
  table.push_back({"abs", InferUnary<9>, RunUnary<9>});
  table.push_back({"floor", InferUnary<10>, RunUnary<10>});
  table.push_back({"ceil", InferUnary<11>, RunUnary<11>});
  table.push_back({"sin", InferUnary<12>, RunUnary<12>});
  table.push_back({"cos", InferUnary<13>, RunUnary<13>});
  table.push_back({"not", InferNot, RunNot});
  table.push_back({"is_nan", InferIsNaN, RunIsNaN});
  table.push_back({"identity", InferIdentity, RunIdentity});
  table.push_back({"clip", InferClip, RunClip});
  table.push_back({"cast", InferCast, RunCast});
}

} // namespace kiln::cpu
