// Shape rules of the same-shape ops of one tensor: unary math, Not, IsNaN,
// Identity, Clip, Cast and Gelu (the broadcasting ones: pointwise_binary.cpp).
#include "core/named_list.h"
#include "core/shapes/fused_checks.h"
#include "core/shapes/operand_checks.h"
#include "core/shapes/products_mlp.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr const char *kGelu = "gelu";

// ---- gelu ----------------------------------------------------------------

// Pointwise: y has x's shape and dtype.
Status InferGelu(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kGelu, in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kGelu, "x", *in[0]));
  KILN_RETURN_IF_ERROR(GeluActivation(attrs).status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

// The unary math ops, in kernels/unary_ops.def's order: integer dtypes
// where the op is defined on them (KILN_UNARY_INT), floats always.
struct UnaryRule {
  const char *name;
  bool integers;
};
constexpr UnaryRule kUnary[] = {
#define KILN_UNARY(Id, name, float_math) {name, false},
#define KILN_UNARY_INT(Id, name, float_math, int_math) {name, true},
#include "kernels/unary_ops.def"
};

template <size_t kIndex> Status InferUnary(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr UnaryRule def = kUnary[kIndex];
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

Status InferNot(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("not", in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("not", "X", *in[0], {DType::kBool}));
  out[0] = {DType::kBool, in[0]->shape, nullptr};
  return Status::Ok();
}

Status InferIsNaN(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("is_nan", in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("is_nan", "X", *in[0], {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}));
  out[0] = {DType::kBool, in[0]->shape, nullptr};
  return Status::Ok();
}

Status InferIdentity(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("identity", in, 1, 1, out, 1, 1));
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
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

// ---- Cast: `to` is a kiln DType number ---------------------------------

StatusOr<DType> CastTarget(const OpAttrs &attrs) {
  if (!attrs.Has("to"))
    return OpError("cast", "attribute 'to' is missing");
  const int64_t to = attrs.Int("to", 0);
  if (to < 0 || to > 127 || !IsValueDType(static_cast<DType>(to)))
    return OpError("cast", "attribute 'to' = " + std::to_string(to) +
                               " is not a kiln dtype (expected 1..9, see schemas/plan.fbs)");
  return static_cast<DType>(to);
}

Status InferCast(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("cast", in, 1, 1, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(DType to, CastTarget(attrs));
  if (!IsValueDType(in[0]->dtype))
    return OpError("cast", std::string("cannot cast from dtype ") + DTypeName(in[0]->dtype));
  out[0] = {to, in[0]->shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddPointwiseShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({kGelu, InferGelu});
  AddEach<kUnary>(rules, [](auto i) { return InferUnary<decltype(i)::value>; });
  rules.push_back({"not", InferNot});
  rules.push_back({"is_nan", InferIsNaN});
  rules.push_back({"identity", InferIdentity});
  rules.push_back({"clip", InferClip});
  rules.push_back({"cast", InferCast});
}

} // namespace kiln
