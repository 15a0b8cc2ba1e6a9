// all_reduce and all_gather for every backend: the communicator does the
// exchange in the backend's memory space, and what differs between backends
// is only how they copy that memory. Mem provides
//   Status Copy(void *dst, const void *src, uint64_t bytes);
//   Status CopyRows(void *dst, uint64_t dst_pitch, const void *src, uint64_t row_bytes,
//                   int64_t rows);   // rows of row_bytes, packed in src
//   StatusOr<void *> Scratch(uint64_t bytes);  // valid until the op returns
// Without a communicator (one rank) both ops are copies, so a tensor-parallel
// program built for one rank runs unchanged.
#pragma once

#include "comm/communicator.h"
#include "core/kernel.h"
#include "core/shapes/collective.h"

#include <cstdint>

namespace kiln {

template <class Mem>
Status RunAllReduceWith(Mem &mem, ExecContext &ctx, const Inputs &in, Outputs &out) {
  const uint64_t bytes = in[0]->bytes();
  if (out[0].data != in[0]->data && bytes > 0)
    KILN_RETURN_IF_ERROR(mem.Copy(out[0].data, in[0]->data, bytes));
  if (!ctx.comm || bytes == 0)
    return Status::Ok();
  return ctx.comm->AllReduceSum(out[0].data, in[0]->numel(), in[0]->dtype, ctx.stream);
}

template <class Mem>
Status RunAllGatherWith(Mem &mem, ExecContext &ctx, const OpAttrs &attrs, const Inputs &in,
                        Outputs &out) {
  const TensorView &x = *in[0];
  const int rank = ctx.comm ? ctx.comm->rank() : 0;
  const int size = ctx.comm ? ctx.comm->size() : 1;
  KILN_ASSIGN_OR_RETURN(AllGatherRun run, PlanAllGather(attrs, x, rank, size));
  if (!ctx.comm)
    return out[0].data == x.data || x.bytes() == 0 ? Status::Ok()
                                                   : mem.Copy(out[0].data, x.data, x.bytes());
  const AllGatherSpec &spec = run.spec;
  // The communicator concatenates whole buffers, rank after rank: the
  // result itself when the axis is the outermost one. Along an inner axis
  // the rank blocks land in scratch, and each is strided into its columns.
  if (spec.outer == 1)
    return ctx.comm->AllGather(x.data, out[0].data, run.counts, x.dtype, ctx.stream);
  const uint64_t elem = DTypeSize(x.dtype);
  KILN_ASSIGN_OR_RETURN(
      void *scratch,
      mem.Scratch(static_cast<uint64_t>(spec.outer * run.total * spec.inner) * elem));
  KILN_RETURN_IF_ERROR(ctx.comm->AllGather(x.data, scratch, run.counts, x.dtype, ctx.stream));
  const auto *src = static_cast<const uint8_t *>(scratch);
  auto *dst = static_cast<uint8_t *>(out[0].data);
  const uint64_t dst_pitch = static_cast<uint64_t>(run.total * spec.inner) * elem;
  int64_t offset = 0; // along the axis, of this rank block's columns
  for (int64_t s : spec.sizes) {
    const uint64_t row = static_cast<uint64_t>(s * spec.inner) * elem;
    if (row > 0)
      KILN_RETURN_IF_ERROR(mem.CopyRows(dst + static_cast<uint64_t>(offset * spec.inner) * elem,
                                        dst_pitch, src, row, spec.outer));
    src += row * static_cast<uint64_t>(spec.outer);
    offset += s;
  }
  return Status::Ok();
}

} // namespace kiln
