#include "core/kernel.h"

#include <algorithm>

namespace kiln {

KernelTable::KernelTable(std::vector<KernelDef> defs) : defs_(std::move(defs)) {
  std::sort(defs_.begin(), defs_.end(), [](const KernelDef &a, const KernelDef &b) {
    return std::string_view(a.type) < std::string_view(b.type);
  });
}

const KernelDef *KernelTable::Find(std::string_view type) const {
  auto it = std::lower_bound(
      defs_.begin(), defs_.end(), type,
      [](const KernelDef &d, std::string_view v) { return std::string_view(d.type) < v; });
  if (it == defs_.end() || std::string_view(it->type) != type)
    return nullptr;
  return &*it;
}

std::vector<std::string> KernelTable::Types() const {
  std::vector<std::string> types;
  for (const KernelDef &d : defs_)
    types.emplace_back(d.type);
  return types;
}

} // namespace kiln
