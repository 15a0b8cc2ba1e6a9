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

std::vector<int64_t> Unravel(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t Ravel(const std::vector<int64_t> &index, const Shape &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

int64_t BroadcastFrom(const std::vector<int64_t> &out_idx, const Shape &in) {
  const size_t lead = out_idx.size() - in.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in.size(); ++d)
    flat = flat * in[d] + (in[d] == 1 ? 0 : out_idx[d + lead]);
  return flat;
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
