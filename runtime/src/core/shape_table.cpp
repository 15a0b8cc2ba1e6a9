// The shape table, built once from every op family's rules.
#include "core/shape_table.h"

#include "core/op_list.h"
#include "core/shapes/shape_rules.h"

#include <algorithm>
#include <memory>

namespace kiln {
namespace {

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// `infer` run with half operands seen as f32 (their values hidden: none of
// these rules reads float values), and f32 results turned back into the
// operands' half type.
InferFn HalfAsF32(InferFn infer) {
  return [infer](const OpAttrs &attrs, const Inputs &in, Outputs &out) -> Status {
    DType half = DType::kUndefined;
    for (const TensorView *t : in)
      if (t && IsHalf(t->dtype) && half == DType::kUndefined)
        half = t->dtype;
    if (half == DType::kUndefined)
      return infer(attrs, in, out);
    std::vector<TensorView> views(in.size());
    Inputs ptrs(in.size(), nullptr);
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i])
        continue;
      views[i] = *in[i];
      if (IsHalf(views[i].dtype)) {
        views[i].dtype = DType::kF32;
        views[i].data = nullptr;
      }
      ptrs[i] = &views[i];
    }
    for (TensorView &o : out)
      if (IsHalf(o.dtype))
        o.dtype = DType::kF32;
    KILN_RETURN_IF_ERROR(infer(attrs, ptrs, out));
    for (TensorView &o : out)
      if (o.dtype == DType::kF32)
        o.dtype = half;
    return Status::Ok();
  };
}

// Sorted by type for binary search; built once (thread-safe static init).
const std::vector<ShapeRule> &Table() {
  static const std::vector<ShapeRule> table = [] {
    std::vector<ShapeRule> t;
    for (const ShapeRuleFamily &f : ShapeRuleFamilies())
      f.add(t);
    for (ShapeRule &r : t)
      if (ComputesInF32ForHalf(r.type))
        r.infer = HalfAsF32(r.infer);
    std::sort(t.begin(), t.end(), [](const ShapeRule &a, const ShapeRule &b) {
      return std::string_view(a.type) < std::string_view(b.type);
    });
    return t;
  }();
  return table;
}

} // namespace

const std::vector<ShapeRuleFamily> &ShapeRuleFamilies() {
  static const std::vector<ShapeRuleFamily> families = {
      {OpFamily::kPointwise, AddPointwiseShapeRules},
      {OpFamily::kPointwise, AddPointwiseBinaryShapeRules},
      {OpFamily::kMovement, AddMovementShapeRules},
      {OpFamily::kMovement, AddMovementShapeOpRules},
      {OpFamily::kGather, AddGatherShapeRules},
      {OpFamily::kReduce, AddReduceShapeRules},
      {OpFamily::kNorm, AddNormShapeRules},
      {OpFamily::kNorm, AddNormFusedShapeRules},
      {OpFamily::kProducts, AddProductsShapeRules},
      {OpFamily::kProducts, AddProductsMlpShapeRules},
      {OpFamily::kAttention, AddAttentionShapeRules},
      {OpFamily::kAttention, AddAttentionPagedShapeRules},
      {OpFamily::kCollective, AddCollectiveShapeRules},
  };
  return families;
}

bool ComputesInF32ForHalf(std::string_view type) {
  const OpInfo *op = FindOp(type);
  return op && op->half == HalfRule::kF32;
}

const ShapeRule *FindShapeRule(std::string_view type) {
  const std::vector<ShapeRule> &t = Table();
  auto it = std::lower_bound(t.begin(), t.end(), type, [](const ShapeRule &r, std::string_view v) {
    return std::string_view(r.type) < v;
  });
  if (it == t.end() || std::string_view(it->type) != type)
    return nullptr;
  return &*it;
}

std::vector<std::string> ShapeRuleTypes() {
  std::vector<std::string> types;
  for (const ShapeRule &r : Table())
    types.emplace_back(r.type);
  return types;
}

} // namespace kiln
