// Naive row-major index helpers that the plain reference implementations of
// the kernel tests (test/unit/kernels) and of the op oracle
// (test/unit/backend_ops) share: one element at a time, obviously right.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::test {

// The index of each dim of flat position `flat` in a tensor of `shape`.
inline std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

inline int64_t Ravel(const std::vector<int64_t> &index, const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

// The flat index into `in` that output index `out_idx` reads when `in`
// broadcasts (numpy rules: right-aligned, size-1 dims repeat).
inline int64_t BroadcastIndex(const std::vector<int64_t> &out_idx, const std::vector<int64_t> &in) {
  const size_t lead = out_idx.size() - in.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in.size(); ++d)
    flat = flat * in[d] + (in[d] == 1 ? 0 : out_idx[d + lead]);
  return flat;
}

} // namespace kiln::test
