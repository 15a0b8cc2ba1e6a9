// CUDA kernels of all_reduce and all_gather: the execution context's
// communicator (NCCL) on the backend's stream, so they are ordered with the
// other kernels and recorded by a CUDA graph capture. Without a
// communicator (one rank) they are device copies.
#include "backends/op_families.h"
#include "comm/communicator.h"
#include "core/shapes/collective.h"
#include "cuda_kernels.h"
#include "cuda_util.h"

namespace kiln::cuda {
namespace {

Status RunAllReduce(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  const uint64_t bytes = in[0]->bytes();
  if (out[0].data != in[0]->data && bytes > 0)
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out[0].data, in[0]->data, bytes, cudaMemcpyDeviceToDevice, Stream(ctx)));
  if (!ctx.comm || bytes == 0) // one rank without a communicator
    return Status::Ok();
  return ctx.comm->AllReduceSum(out[0].data, in[0]->numel(), in[0]->dtype, ctx.stream);
}

Status RunAllGather(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const TensorView &x = *in[0];
  KILN_ASSIGN_OR_RETURN(AllGatherRun run, PlanAllGather(attrs, x, ctx.comm ? ctx.comm->rank() : 0,
                                                        ctx.comm ? ctx.comm->size() : 1));
  const AllGatherSpec &spec = run.spec;
  if (!ctx.comm) {
    if (out[0].data != x.data && x.bytes() > 0)
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(out[0].data, x.data, x.bytes(), cudaMemcpyDeviceToDevice, Stream(ctx)));
    return Status::Ok();
  }
  if (spec.outer == 1)
    return ctx.comm->AllGather(x.data, out[0].data, run.counts, x.dtype, ctx.stream);
  // Rank blocks land one after another in scratch, then each is strided
  // into its columns of the result with one 2-D copy.
  const uint64_t elem = DTypeSize(x.dtype);
  KILN_ASSIGN_OR_RETURN(
      void *scratch,
      OpScratch(ctx, static_cast<uint64_t>(spec.outer * run.total * spec.inner) * elem));
  KILN_RETURN_IF_ERROR(ctx.comm->AllGather(x.data, scratch, run.counts, x.dtype, ctx.stream));
  const auto *src = static_cast<const uint8_t *>(scratch);
  auto *dst = static_cast<uint8_t *>(out[0].data);
  const uint64_t dst_pitch = static_cast<uint64_t>(run.total * spec.inner) * elem;
  int64_t offset = 0;
  for (int64_t s : spec.sizes) {
    const uint64_t row = static_cast<uint64_t>(s * spec.inner) * elem;
    if (row > 0)
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(
          dst + static_cast<uint64_t>(offset * spec.inner) * elem, dst_pitch, src, row, row,
          static_cast<size_t>(spec.outer), cudaMemcpyDeviceToDevice, Stream(ctx)));
    src += row * static_cast<uint64_t>(spec.outer);
    offset += s;
  }
  return Status::Ok();
}

} // namespace

void AddCollectiveKernels(std::vector<KernelDef> &table) { KILN_ADD_COLLECTIVE_KERNELS(table); }

} // namespace kiln::cuda
