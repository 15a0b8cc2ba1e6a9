// MakeBroadcast (declared in pointwise.h): host code only, in a file of its
// own so host tests can build it without the kernels.
#include "kernels/cuda/pointwise.h"

namespace kiln::kernels::cuda {

bool MakeBroadcast(const std::vector<std::vector<int64_t>> &inputs, const std::vector<int64_t> &out,
                   Broadcast *b) {
  const int n = static_cast<int>(inputs.size());
  if (n < 1 || n > Broadcast::kMaxInputs)
    return false;
  const int rank = static_cast<int>(out.size());
  *b = Broadcast();
  b->num_inputs = n;
  b->numel = 1;
  for (int64_t d : out)
    b->numel *= d;
  // Right-aligned strides of each input over the output's dims (0 where
  // broadcast), innermost first.
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(rank, 0));
  for (int k = 0; k < n; ++k) {
    const int in_rank = static_cast<int>(inputs[k].size());
    if (in_rank > rank)
      return false;
    int64_t stride = 1, count = 1;
    for (int j = 0; j < rank; ++j) {
      const int d = rank - 1 - j; // output dim, from the innermost
      const int src = d - (rank - in_rank);
      const int64_t dim = src >= 0 ? inputs[k][src] : 1;
      if (dim != out[d] && dim != 1)
        return false;
      strides[k][j] = dim == 1 ? 0 : stride;
      stride *= dim;
      count *= dim;
    }
    // An input with as many elements as the output is laid out like it.
    if (count != b->numel)
      b->same_shape = false;
  }
  if (b->numel == 0)
    return true;
  // Drop unit dims; merge a dim into the one inside it when every input
  // steps over both as one (both contiguous, or both broadcast).
  for (int j = 0; j < rank; ++j) {
    const int64_t dim = out[rank - 1 - j];
    if (dim == 1)
      continue;
    bool merge = b->rank > 0;
    for (int k = 0; k < n && merge; ++k)
      merge = strides[k][j] == b->strides[k][b->rank - 1] * b->dims[b->rank - 1];
    if (merge) {
      b->dims[b->rank - 1] *= dim;
      continue;
    }
    if (b->rank == Broadcast::kMaxRank)
      return false;
    b->dims[b->rank] = dim;
    for (int k = 0; k < n; ++k)
      b->strides[k][b->rank] = strides[k][j];
    ++b->rank;
  }
  return true;
}

} // namespace kiln::kernels::cuda
