// Shape rules of the fused normalizations (docs/fused-ops.md): rms_norm, and
// the residual add fused with RMS norm or layer norm (add_rms_norm,
// add_layer_norm), whose two results are the sum and its normalization.
#include "core/shapes/fused_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr const char *kRmsNorm = "rms_norm";
constexpr const char *kAddRmsNorm = "add_rms_norm";
constexpr const char *kAddLayerNorm = "add_layer_norm";

// Checks x [..., D] (float, rank >= 1) and the 1-D parameter `name` [D] of
// x's dtype.
Status CheckRowsAndParam(std::string_view op, const char *x_name, const TensorView &x,
                         const char *name, const TensorView &p) {
  KILN_RETURN_IF_ERROR(CheckFloatOperand(op, x_name, x));
  KILN_RETURN_IF_ERROR(CheckMinRank(op, x_name, x, 1));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(op, name, p));
  return CheckExactShape(op, name, p, {x.shape.back()}, "[D]");
}

// Checks the residual pair a, b of the add_* ops: same dtype, same shape.
Status CheckResidual(std::string_view op, const TensorView &a, const TensorView &b) {
  KILN_RETURN_IF_ERROR(CheckFloatOperand(op, "a", a));
  KILN_RETURN_IF_ERROR(CheckMinRank(op, "a", a, 1));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(op, "b", b));
  return CheckExactShape(op, "b", b, a.shape, "a's shape");
}

// x [..., D], scale [D] -> y of x's shape and dtype.
Status InferRmsNorm(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kRmsNorm, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckRowsAndParam(kRmsNorm, "x", *in[0], "scale", *in[1]));
  KILN_RETURN_IF_ERROR(RequiredFloat(kRmsNorm, attrs, "epsilon").status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

// a, b [..., D], scale [D] -> (sum, y), both of a's shape.
Status InferAddRmsNorm(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kAddRmsNorm, in, 3, 3, out, 2, 2));
  KILN_RETURN_IF_ERROR(CheckResidual(kAddRmsNorm, *in[0], *in[1]));
  KILN_RETURN_IF_ERROR(CheckRowsAndParam(kAddRmsNorm, "a", *in[0], "scale", *in[2]));
  KILN_RETURN_IF_ERROR(RequiredFloat(kAddRmsNorm, attrs, "epsilon").status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  out[1] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

// a, b [..., D], scale [D], bias [D]? -> (sum, y), both of a's shape.
Status InferAddLayerNorm(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kAddLayerNorm, in, 3, 4, out, 2, 2));
  KILN_RETURN_IF_ERROR(CheckResidual(kAddLayerNorm, *in[0], *in[1]));
  KILN_RETURN_IF_ERROR(CheckRowsAndParam(kAddLayerNorm, "a", *in[0], "scale", *in[2]));
  if (in.size() > 3 && in[3] != nullptr)
    KILN_RETURN_IF_ERROR(CheckRowsAndParam(kAddLayerNorm, "a", *in[0], "bias", *in[3]));
  KILN_RETURN_IF_ERROR(RequiredFloat(kAddLayerNorm, attrs, "epsilon").status());
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  out[1] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddNormFusedShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({kRmsNorm, InferRmsNorm});
  rules.push_back({kAddRmsNorm, InferAddRmsNorm});
  rules.push_back({kAddLayerNorm, InferAddLayerNorm});
}

} // namespace kiln
