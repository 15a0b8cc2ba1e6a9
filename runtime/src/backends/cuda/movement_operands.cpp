#include "movement_operands.h"

#include "cuda_util.h"

namespace kiln::cuda {
namespace {

constexpr uint64_t kAlign = 256;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool NeedsStaging(const TensorView *t) {
  return t != nullptr && t->space == MemorySpace::kHost && t->bytes() > 0;
}

} // namespace

StatusOr<DeviceOperands> DeviceOperands::Make(ExecContext &ctx, const Inputs &in,
                                              std::initializer_list<int> which,
                                              uint64_t extra_bytes) {
  DeviceOperands d;
  d.ptrs_.assign(in.size(), nullptr);
  uint64_t total = AlignUp(extra_bytes);
  for (int i : which)
    if (static_cast<size_t>(i) < in.size() && NeedsStaging(in[i]))
      total += AlignUp(in[i]->bytes());
  char *scratch = nullptr;
  if (total > 0) {
    KILN_ASSIGN_OR_RETURN(void *p, OpScratch(ctx, total));
    scratch = static_cast<char *>(p);
  }
  uint64_t pos = 0;
  if (extra_bytes > 0) {
    d.extra_ = scratch;
    pos = AlignUp(extra_bytes);
  }
  for (int i : which) {
    if (static_cast<size_t>(i) >= in.size() || in[i] == nullptr)
      continue;
    if (!NeedsStaging(in[i])) {
      d.ptrs_[i] = in[i]->data;
      continue;
    }
    char *dst = scratch + pos;
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, in[i]->data, in[i]->bytes(), cudaMemcpyHostToDevice, Stream(ctx)));
    d.ptrs_[i] = dst;
    pos += AlignUp(in[i]->bytes());
  }
  return d;
}

cudaMemcpyKind CopyKindFrom(const TensorView &t) {
  return t.space == MemorySpace::kHost ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
}

Status CopyTensor(ExecContext &ctx, const TensorView &src, TensorView &dst) {
  const size_t bytes = dst.bytes();
  if (bytes == 0 || src.data == dst.data)
    return Status::Ok();
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst.data, src.data, bytes, CopyKindFrom(src), Stream(ctx)));
  return Status::Ok();
}

} // namespace kiln::cuda
