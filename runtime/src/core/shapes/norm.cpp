// Shape rule of LayerNormalization over dims [axis, rank), with optional
// Mean and InvStdDev results (stash type f32).
#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr const char *kName = "layer_normalization";

// Checks that Scale/B broadcast (unidirectionally) onto the normalized
// shape.
Status CheckParam(const char *name, const TensorView &p, const Shape &norm) {
  Shape bc;
  if (!BroadcastShapes(p.shape, norm, &bc) || bc != norm)
    return OpError(kName, std::string("operand '") + name + "' of shape " + ShapeToString(p.shape) +
                              " does not broadcast to the normalized shape " + ShapeToString(norm));
  return Status::Ok();
}

Status InferLayerNorm(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kName, in, 2, 3, out, 1, 3));
  const TensorView &x = *in[0];
  KILN_RETURN_IF_ERROR(CheckDType(kName, "X", x, {DType::kF32, DType::kF64}));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(kName, attrs.Int("axis", -1), rank));
  const Shape norm(x.shape.begin() + axis, x.shape.end());
  KILN_RETURN_IF_ERROR(CheckSameDType(kName, x, *in[1]));
  KILN_RETURN_IF_ERROR(CheckParam("Scale", *in[1], norm));
  if (in.size() > 2 && in[2] != nullptr) {
    KILN_RETURN_IF_ERROR(CheckSameDType(kName, x, *in[2]));
    KILN_RETURN_IF_ERROR(CheckParam("B", *in[2], norm));
  }
  out[0] = {x.dtype, x.shape, nullptr};
  Shape stat_shape = x.shape;
  for (int64_t d = axis; d < rank; ++d)
    stat_shape[d] = 1;
  for (size_t j = 1; j < out.size(); ++j)
    out[j] = {DType::kF32, stat_shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddNormShapeRules(std::vector<ShapeRule> &rules) { rules.push_back({kName, InferLayerNorm}); }

} // namespace kiln
