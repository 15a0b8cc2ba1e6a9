// CPU kernels of all_reduce and all_gather over the execution context's
// communicator (gloo). Without one (a single rank) they are copies, so a
// tensor-parallel program built for one rank runs unchanged.
#include "backends/op_families.h"
#include "comm/communicator.h"
#include "core/shapes/collective.h"
#include "cpu_kernels.h"
#include "op_util.h"

#include <cstring>

namespace kiln::cpu {
namespace {

Status RunAllReduce(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  const uint64_t bytes = in[0]->bytes();
  if (out[0].data != in[0]->data && bytes > 0)
    std::memcpy(out[0].data, in[0]->data, bytes);
  if (!ctx.comm) // one rank without a communicator
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
      std::memcpy(out[0].data, x.data, x.bytes());
    return Status::Ok();
  }
  // The communicator concatenates whole buffers, rank after rank; along an
  // inner axis each rank's block is then interleaved into place.
  if (spec.outer == 1)
    return ctx.comm->AllGather(x.data, out[0].data, run.counts, x.dtype);
  const uint64_t elem = DTypeSize(x.dtype);
  std::vector<uint8_t> blocks(static_cast<size_t>(spec.outer * run.total * spec.inner * elem));
  KILN_RETURN_IF_ERROR(ctx.comm->AllGather(x.data, blocks.data(), run.counts, x.dtype));
  const uint8_t *src = blocks.data();
  auto *dst = static_cast<uint8_t *>(out[0].data);
  int64_t offset = 0; // along the axis, of rank r's slice
  for (int64_t s : spec.sizes) {
    const uint64_t row = static_cast<uint64_t>(s * spec.inner) * elem;
    for (int64_t o = 0; o < spec.outer; ++o)
      std::memcpy(dst + (static_cast<uint64_t>(o * run.total + offset) * spec.inner) * elem,
                  src + o * row, row);
    src += spec.outer * row;
    offset += s;
  }
  return Status::Ok();
}

} // namespace

void AddCollectiveKernels(std::vector<KernelDef> &table) { KILN_ADD_COLLECTIVE_KERNELS(table); }

} // namespace kiln::cpu
