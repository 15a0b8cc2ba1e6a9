// The op list of core/ops.def as a table.
#include "core/op_list.h"

#include <algorithm>

namespace kiln {

const std::vector<OpInfo> &AllOps() {
  static const std::vector<OpInfo> ops = [] {
    std::vector<OpInfo> v = {
#define KILN_OP(id, name, family, half) {OpId::k##id, name, OpFamily::k##family, HalfRule::k##half},
#include "core/ops.def"
#undef KILN_OP
    };
    std::sort(v.begin(), v.end(), [](const OpInfo &a, const OpInfo &b) { return a.name < b.name; });
    return v;
  }();
  return ops;
}

const OpInfo *FindOp(std::string_view name) {
  const std::vector<OpInfo> &ops = AllOps();
  auto it = std::lower_bound(ops.begin(), ops.end(), name,
                             [](const OpInfo &op, std::string_view n) { return op.name < n; });
  return it != ops.end() && it->name == name ? &*it : nullptr;
}

const OpInfo &GetOp(OpId id) {
  static const std::vector<const OpInfo *> by_id = [] {
    std::vector<const OpInfo *> v(AllOps().size());
    for (const OpInfo &op : AllOps())
      v[static_cast<size_t>(op.id)] = &op;
    return v;
  }();
  return *by_id[static_cast<size_t>(id)];
}

std::string_view OpFamilyName(OpFamily family) {
  switch (family) {
  case OpFamily::kPointwise:
    return "pointwise";
  case OpFamily::kMovement:
    return "movement";
  case OpFamily::kGather:
    return "gather";
  case OpFamily::kReduce:
    return "reduce";
  case OpFamily::kNorm:
    return "norm";
  case OpFamily::kProducts:
    return "products";
  case OpFamily::kAttention:
    return "attention";
  case OpFamily::kCollective:
    return "collective";
  }
  return "?";
}

bool IsEngineKernel(std::string_view type) {
  return type.size() > 5 && type.substr(0, 5) == "kiln." && !FindOp(type);
}

} // namespace kiln
