#include "kernels/cpu/pointwise_broadcast.h"

namespace kiln::kernels {

bool MakeBroadcastLayout(const std::vector<std::vector<int64_t>> &inputs,
                         const std::vector<int64_t> &out, BroadcastLayout *layout) {
  const int n = static_cast<int>(inputs.size());
  if (n > BroadcastLayout::kMaxInputs)
    return false;
  const size_t rank = out.size();
  *layout = BroadcastLayout();
  layout->num_inputs = n;

  // Right-align every input against the output and check compatibility.
  std::vector<std::vector<int64_t>> dims(n, std::vector<int64_t>(rank, 1));
  int64_t numel = 1;
  for (size_t d = 0; d < rank; ++d)
    numel *= out[d];
  for (int i = 0; i < n; ++i) {
    if (inputs[i].size() > rank)
      return false;
    const size_t lead = rank - inputs[i].size();
    for (size_t d = 0; d < rank; ++d) {
      const int64_t v = d < lead ? 1 : inputs[i][d - lead];
      if (v != out[d] && v != 1)
        return false;
      dims[i][d] = v;
    }
  }
  if (numel == 0) {
    layout->rows = 0;
    layout->inner = 0;
    return true;
  }

  // Contiguous element strides of each input in its own (aligned) shape.
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(rank, 0));
  for (int i = 0; i < n; ++i) {
    int64_t s = 1;
    for (size_t d = rank; d-- > 0;) {
      strides[i][d] = dims[i][d] == 1 ? 0 : s;
      s *= dims[i][d];
    }
  }

  // Group consecutive non-unit output dims whose broadcast pattern (which
  // inputs are full along them) is the same; within a group every full input
  // is contiguous, so the group acts as one dim.
  struct Group {
    int64_t size;
    unsigned pattern;
    int64_t stride[BroadcastLayout::kMaxInputs];
  };
  std::vector<Group> groups; // innermost first
  for (size_t d = rank; d-- > 0;) {
    if (out[d] == 1)
      continue;
    unsigned pattern = 0;
    for (int i = 0; i < n; ++i)
      if (dims[i][d] != 1)
        pattern |= 1u << i;
    if (!groups.empty() && groups.back().pattern == pattern) {
      groups.back().size *= out[d];
      continue;
    }
    Group g{out[d], pattern, {0, 0, 0}};
    for (int i = 0; i < n; ++i)
      g.stride[i] = strides[i][d];
    groups.push_back(g);
  }
  if (groups.empty())
    return true; // a single element

  layout->inner = groups[0].size;
  for (int i = 0; i < n; ++i)
    layout->inner_full[i] = (groups[0].pattern >> i) & 1u;
  layout->rows = 1;
  for (size_t g = groups.size(); g-- > 1;) {
    layout->outer_dims.push_back(groups[g].size);
    for (int i = 0; i < n; ++i)
      layout->outer_strides[i].push_back(groups[g].stride[i]);
    layout->rows *= groups[g].size;
  }
  return true;
}

} // namespace kiln::kernels
