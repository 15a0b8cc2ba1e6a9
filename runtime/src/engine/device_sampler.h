// The engine's on-device sampling: the records of the kiln.sample kernel
// (core/sampling_contract.h) built from each row's SamplingParams,
// history and draw, run on logits left in the backend's memory, and turned
// back into SampledTokens. The CPU sampler is the reference; a backend
// without the kernel (the cpu) samples on the host instead.
#pragma once

#include "core/backend.h"
#include "engine/model_runner.h"
#include "core/sampling_contract.h"

#include <memory>
#include <vector>

namespace kiln::engine {

class DeviceSampler {
public:
  // nullptr when `backend` has no sampling kernel, or when the environment
  // sets KILN_DEVICE_SAMPLING=0 (host sampling, for A/B runs).
  static std::unique_ptr<DeviceSampler> Create(Backend &backend);

  // Samples rows[i] from row logits_rows[i] of `logits` (f32 [R, vocab] in
  // the backend's memory; the penalties are applied to those rows in
  // place). Waits for the results; InvalidArgument for a bad row index.
  Status Sample(const TensorView &logits, const std::vector<int64_t> &logits_rows,
                const std::vector<RowSampling> &rows, std::vector<RowSample> &out);

private:
  DeviceSampler(Backend &backend, const KernelDef *kernel) : backend_(backend), kernel_(kernel) {}
  // Appends row `r`'s penalty entries and fills its record.
  void BuildRow(const RowSampling &r, int64_t logits_row, int64_t vocab);
  // `buffer` holds at least `bytes` (grown by doubling, so rarely).
  Status Reserve(DeviceBuffer &buffer, uint64_t bytes);

  Backend &backend_;
  const KernelDef *kernel_;
  DeviceBuffer rows_dev_, penalties_dev_, results_dev_;
  std::vector<sampling::SampleRow> rows_;
  std::vector<sampling::PenaltyEntry> penalties_;
  std::vector<sampling::SampleResult> results_;
  std::vector<std::pair<int32_t, int32_t>> tokens_; // (id, kind) while building a row
};

} // namespace kiln::engine
