#include "backends/cuda/op_operands.h"

#include "backends/kernel_kinds.h"
#include "kernels/cuda/pointwise.h"

#include <string>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

constexpr uint64_t kAlign = 256;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }
bool IsFloat(DType t) { return IsHalf(t) || t == DType::kF32 || t == DType::kF64; }

bool OnHost(const TensorView *t) {
  return t != nullptr && t->space == MemorySpace::kHost && t->bytes() > 0;
}

bool Widened(const TensorView *t, bool widen_halves) {
  return t != nullptr && widen_halves && IsHalf(t->dtype);
}

} // namespace

Status NoKernel(std::string_view op, DType t) {
  return Unimplemented(std::string(op) + ": no CUDA kernel for dtype " + DTypeName(t));
}

StatusOr<kc::ElemType> ElemTypeOf(std::string_view op, const TensorView &t) {
  kc::ElemType e;
  if (!ToElemType(t.dtype, &e))
    return NoKernel(op, t.dtype);
  return e;
}

Status CopyToResult(ExecContext &ctx, const void *in, TensorView &out) {
  if (out.data == in || out.bytes() == 0)
    return Status::Ok();
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.data, in, out.bytes(), cudaMemcpyDeviceToDevice, Stream(ctx)));
  return Status::Ok();
}

bool MixesHalf(const Inputs &in, const TensorView *out) {
  std::vector<DType> floats;
  for (const TensorView *t : in)
    if (t != nullptr && IsFloat(t->dtype))
      floats.push_back(t->dtype);
  if (out != nullptr && IsFloat(out->dtype))
    floats.push_back(out->dtype);
  bool half = false, mixed = false;
  for (DType t : floats) {
    half = half || IsHalf(t);
    mixed = mixed || t != floats[0];
  }
  return half && mixed;
}

StatusOr<StagedOperands> StagedOperands::Stage(std::string_view op, ExecContext &ctx,
                                               const Inputs &in, bool widen_halves,
                                               const std::vector<uint64_t> &extra) {
  StagedOperands s;
  s.data_.assign(in.size(), nullptr);
  s.type_.assign(in.size(), kc::ElemType::kF32);
  s.extra_.assign(extra.size(), nullptr);
  uint64_t total = 0;
  for (uint64_t bytes : extra)
    total += AlignUp(bytes);
  for (const TensorView *t : in) {
    if (OnHost(t))
      total += AlignUp(t->bytes());
    if (Widened(t, widen_halves))
      total += AlignUp(static_cast<uint64_t>(t->numel()) * sizeof(float));
  }
  uint8_t *scratch = nullptr;
  if (total > 0) {
    KILN_ASSIGN_OR_RETURN(void *p, OpScratch(ctx, total));
    scratch = static_cast<uint8_t *>(p);
  }
  uint64_t pos = 0;
  for (size_t k = 0; k < extra.size(); ++k) {
    if (extra[k] > 0)
      s.extra_[k] = scratch + pos;
    pos += AlignUp(extra[k]);
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorView *t = in[i];
    if (t == nullptr)
      continue;
    KILN_ASSIGN_OR_RETURN(s.type_[i], ElemTypeOf(op, *t));
    s.data_[i] = t->data;
    if (OnHost(t)) {
      // From pageable memory this returns once the bytes are staged, so the
      // host tensor may change afterwards.
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(scratch + pos, t->data, t->bytes(), cudaMemcpyHostToDevice, Stream(ctx)));
      s.data_[i] = scratch + pos;
      pos += AlignUp(t->bytes());
    }
    if (Widened(t, widen_halves)) {
      KILN_CUDA_RETURN_IF_ERROR(kc::Cast(s.type_[i], s.data_[i], kc::ElemType::kF32, scratch + pos,
                                         t->numel(), Stream(ctx)));
      s.data_[i] = scratch + pos;
      s.type_[i] = kc::ElemType::kF32;
      pos += AlignUp(static_cast<uint64_t>(t->numel()) * sizeof(float));
    }
  }
  return s;
}

} // namespace kiln::cuda
