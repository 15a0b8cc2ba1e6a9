// Numpy-style broadcasting of up to three inputs onto one output, reduced to
// "rows": the output is walked as contiguous runs in which every input either
// advances with the output or stays on one element. Kernels then do all index
// arithmetic once per row instead of once per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

struct BroadcastLayout {
  static constexpr int kMaxInputs = 3;
  int num_inputs = 0;
  // Length of each contiguous output run.
  int64_t inner = 1;
  // Per input: true when it advances by one element along the run, false when
  // the run reads one element over and over.
  bool inner_full[kMaxInputs] = {true, true, true};
  // Collapsed dims above the run, outermost first, and each input's element
  // stride along them (0 where that input is broadcast).
  std::vector<int64_t> outer_dims;
  std::vector<int64_t> outer_strides[kMaxInputs];
  // Number of runs; 0 when the output is empty.
  int64_t rows = 1;
};

// Builds the row layout of `inputs` (each right-aligned against `out`) onto
// `out`. False when an input does not broadcast to `out` or there are more than
// kMaxInputs inputs.
bool MakeBroadcastLayout(const std::vector<std::vector<int64_t>> &inputs,
                         const std::vector<int64_t> &out, BroadcastLayout *layout);

// Calls f(const int64_t *input_offsets, int64_t output_offset) once per row,
// offsets in elements. Header-only so that `f` inlines into each kernel.
template <typename F> void ForEachRow(const BroadcastLayout &layout, F &&f) {
  if (layout.rows == 0)
    return;
  const int rank = static_cast<int>(layout.outer_dims.size());
  int64_t offsets[BroadcastLayout::kMaxInputs] = {0, 0, 0};
  if (rank == 0) {
    f(offsets, int64_t{0});
    return;
  }
  // Odometer over the outer dims; offsets move incrementally.
  std::vector<int64_t> counter(rank, 0);
  int64_t out_offset = 0;
  for (int64_t row = 0; row < layout.rows; ++row) {
    f(offsets, out_offset);
    out_offset += layout.inner;
    for (int d = rank - 1; d >= 0; --d) {
      for (int i = 0; i < layout.num_inputs; ++i)
        offsets[i] += layout.outer_strides[i][d];
      if (++counter[d] < layout.outer_dims[d])
        break;
      for (int i = 0; i < layout.num_inputs; ++i)
        offsets[i] -= layout.outer_strides[i][d] * layout.outer_dims[d];
      counter[d] = 0;
    }
  }
}

} // namespace kiln::kernels
