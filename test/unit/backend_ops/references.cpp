#include "references.h"

#include <algorithm>

namespace kiln::oracle {

const RefFn *FindReference(std::string_view op) {
  static const RefTable table = [] {
    RefTable t;
    AddPointwiseRefs(t);
    AddMovementRefs(t);
    AddReduceNormRefs(t);
    AddProductRefs(t);
    AddAttentionRefs(t);
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

Shape BroadcastAll(const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes)
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1)
        out[rank - s.size() + d] = s[d];
  return out;
}

int64_t Axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

} // namespace kiln::oracle
