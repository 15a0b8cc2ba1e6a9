// The device sampler (kernels/cuda/sampling.h) in the CUDA kernel table,
// under kSampleOpType: no plan op, but the runner's way to the device
// without naming a CUDA type (engine/device_sampler.cpp). The operands are
// described in core/sampling_contract.h; the row records' logits rows
// and penalty ranges were checked by the engine before it uploaded them.
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "kernels/cuda/sampling.h"

#include <string>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

Status RunSample(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2] || out.size() != 1)
    return InvalidArgument(std::string(kc::kSampleOpType) +
                           " takes logits, rows and penalties, and gives results");
  const TensorView &logits = *in[0];
  if (logits.dtype != DType::kF32 || logits.shape.size() != 2 || logits.shape[1] < 1 ||
      logits.shape[1] > kc::kMaxSampleVocab)
    return InvalidArgument(std::string(kc::kSampleOpType) +
                           ": logits must be f32 [rows, vocab] with vocab in [1, " +
                           std::to_string(kc::kMaxSampleVocab) + "]");
  const uint64_t row_bytes = in[1]->bytes();
  if (row_bytes % sizeof(kc::SampleRow) != 0 || in[2]->bytes() % sizeof(kc::PenaltyEntry) != 0)
    return InvalidArgument(std::string(kc::kSampleOpType) +
                           ": rows and penalties must hold whole records");
  const int64_t rows = static_cast<int64_t>(row_bytes / sizeof(kc::SampleRow));
  if (out[0].bytes() != static_cast<uint64_t>(rows) * sizeof(kc::SampleResult))
    return InvalidArgument(std::string(kc::kSampleOpType) + ": results must hold " +
                           std::to_string(rows) + " records");
  if (rows == 0)
    return Status::Ok();
  const auto *row_records = in[1]->as<const kc::SampleRow>();
  if (in[2]->bytes() > 0)
    KILN_CUDA_RETURN_IF_ERROR(kc::ApplyPenalties(logits.as<float>(), logits.shape[1], row_records,
                                                 rows, in[2]->as<const kc::PenaltyEntry>(),
                                                 Stream(ctx)));
  KILN_CUDA_RETURN_IF_ERROR(kc::SampleRows(logits.as<const float>(), logits.shape[1], row_records,
                                           rows, out[0].as<kc::SampleResult>(), Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddSamplingKernels(std::vector<KernelDef> &table) {
  table.push_back({kc::kSampleOpType, RunSample});
}

} // namespace kiln::cuda
