// CPU kernels of all_reduce and all_gather over the execution context's
// communicator (gloo), through backends/collective_run.h with host copies.
#include "backends/collective_run.h"
#include "backends/op_families.h"
#include "cpu_kernels.h"

#include <cstring>
#include <vector>

namespace kiln::cpu {
namespace {

struct HostMemory {
  std::vector<uint8_t> scratch;
  Status Copy(void *dst, const void *src, uint64_t bytes) {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyRows(void *dst, uint64_t dst_pitch, const void *src, uint64_t row_bytes,
                  int64_t rows) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<uint8_t *>(dst) + static_cast<uint64_t>(r) * dst_pitch,
                  static_cast<const uint8_t *>(src) + static_cast<uint64_t>(r) * row_bytes,
                  row_bytes);
    return Status::Ok();
  }
  StatusOr<void *> Scratch(uint64_t bytes) {
    scratch.resize(static_cast<size_t>(bytes));
    return static_cast<void *>(scratch.data());
  }
};

Status RunAllReduce(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  HostMemory mem;
  return RunAllReduceWith(mem, ctx, in, out);
}

Status RunAllGather(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  HostMemory mem;
  return RunAllGatherWith(mem, ctx, attrs, in, out);
}

} // namespace

void AddCollectiveKernels(std::vector<KernelDef> &table) { KILN_ADD_COLLECTIVE_KERNELS(table); }

} // namespace kiln::cpu
