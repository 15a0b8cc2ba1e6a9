// CUDA kernels of all_reduce and all_gather: the execution context's
// communicator (NCCL) on the backend's stream, so they are ordered with the
// other kernels and recorded by a CUDA graph capture; device copies through
// backends/collective_run.h.
#include "backends/collective_run.h"
#include "backends/op_families.h"
#include "cuda_kernels.h"
#include "cuda_util.h"

namespace kiln::cuda {
namespace {

struct DeviceMemory {
  ExecContext &ctx;
  Status Copy(void *dst, const void *src, uint64_t bytes) {
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, Stream(ctx)));
    return Status::Ok();
  }
  Status CopyRows(void *dst, uint64_t dst_pitch, const void *src, uint64_t row_bytes,
                  int64_t rows) {
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, dst_pitch, src, row_bytes, row_bytes,
                                                static_cast<size_t>(rows), cudaMemcpyDeviceToDevice,
                                                Stream(ctx)));
    return Status::Ok();
  }
  StatusOr<void *> Scratch(uint64_t bytes) { return OpScratch(ctx, bytes); }
};

Status RunAllReduce(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  DeviceMemory mem{ctx};
  return RunAllReduceWith(mem, ctx, in, out);
}

Status RunAllGather(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  DeviceMemory mem{ctx};
  return RunAllGatherWith(mem, ctx, attrs, in, out);
}

} // namespace

void AddCollectiveKernels(std::vector<KernelDef> &table) { KILN_ADD_COLLECTIVE_KERNELS(table); }

} // namespace kiln::cuda
