// The CPU op table: every family file contributes its ops once, on first use.
#include "op_registry.h"

#include "half_via_f32.h"
#include "op_util.h"

#include <algorithm>

namespace kiln::cpu {
namespace {

// Sorted by type for binary search; built once (thread-safe static init).
const std::vector<OpDef> &Table() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> t = AllOpDefs();
    for (OpDef &d : t)
      if (ComputesInF32ForHalf(d.type))
        d = WithHalfViaF32(d);
    std::sort(t.begin(), t.end(), [](const OpDef &a, const OpDef &b) {
      return std::string_view(a.type) < std::string_view(b.type);
    });
    return t;
  }();
  return table;
}

} // namespace

const std::vector<OpDef> &AllOpDefs() {
  static const std::vector<OpDef> defs = [] {
    std::vector<OpDef> t;
    AddBinaryOps(t);
    AddUnaryOps(t);
    AddMatMulOps(t);
    AddReduceOps(t);
    AddNormOps(t);
    AddShapeOps(t);
    AddLayoutOps(t);
    AddIndexOps(t);
    AddFusedNormOps(t);
    AddFusedMlpOps(t);
    AddFusedAttentionOps(t);
    AddPagedAttentionOps(t);
    return t;
  }();
  return defs;
}

const OpDef *FindOp(std::string_view type) {
  const std::vector<OpDef> &t = Table();
  auto it = std::lower_bound(t.begin(), t.end(), type, [](const OpDef &d, std::string_view v) {
    return std::string_view(d.type) < v;
  });
  if (it == t.end() || std::string_view(it->type) != type)
    return nullptr;
  return &*it;
}

std::vector<std::string> SupportedOpTypes() {
  std::vector<std::string> types;
  for (const OpDef &d : Table())
    types.emplace_back(d.type);
  return types;
}

} // namespace kiln::cpu
