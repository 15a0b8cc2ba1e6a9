#include "half_via_f32.h"

#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace kiln::cpu {
namespace {

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

kernels::ElemType KindOf(DType t) {
  return t == DType::kF16 ? kernels::ElemType::kF16 : kernels::ElemType::kBF16;
}

// The half dtype of the first half operand, or kUndefined.
DType HalfType(const std::vector<const TensorView *> &in) {
  for (const TensorView *t : in)
    if (t && IsHalf(t->dtype))
      return t->dtype;
  return DType::kUndefined;
}

// Whether `t` is a half weight with a packed copy of its own type held for
// the way the products read it ([k, n], leading dim n, not transposed).
// A [E, k, n] weight (a moe op's experts) is one such matrix per expert, each
// packed on its own.
bool PackedHalf(const TensorView &t) {
  if (!IsHalf(t.dtype) || t.shape.size() < 2 || t.shape.size() > 3 || t.data == nullptr)
    return false;
  const kernels::PackedElem want =
      t.dtype == DType::kF16 ? kernels::PackedElem::kF16 : kernels::PackedElem::kBF16;
  const size_t r = t.shape.size();
  const int64_t k = t.shape[r - 2], n = t.shape[r - 1], count = r == 3 ? t.shape[0] : 1;
  for (int64_t e = 0; e < count; ++e) {
    const kernels::PackedMatrix *p = kernels::FindPacked(
        static_cast<const uint16_t *>(t.data) + e * k * n, k, n, n, false);
    if (p == nullptr || p->source_elem() != want)
      return false;
  }
  return true;
}

// f32 copies of the half operands, but for those at positions `packed` that
// PackedHalf (passed as they are, labelled f32); views of the others.
// Storage lives in `buffers`, and `ptrs` points into `views`: both must
// outlive the call.
void WidenInputs(const std::vector<const TensorView *> &in, const std::vector<size_t> &packed,
                 std::vector<std::unique_ptr<float[]>> &buffers, std::vector<TensorView> &views,
                 std::vector<const TensorView *> &ptrs) {
  views.clear();
  views.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorView *t = in[i];
    if (!t) {
      views.emplace_back();
      continue;
    }
    TensorView v = *t;
    if (IsHalf(t->dtype)) {
      v.dtype = DType::kF32;
      const bool pass =
          std::find(packed.begin(), packed.end(), i) != packed.end() && PackedHalf(*t);
      if (t->data && !pass) {
        int64_t n = t->numel();
        buffers.emplace_back(new float[std::max<int64_t>(n, 1)]);
        kernels::CastElements(KindOf(t->dtype), t->data, kernels::ElemType::kF32,
                              buffers.back().get(), n);
        v.data = buffers.back().get();
      }
    }
    views.push_back(std::move(v));
  }
  ptrs.clear();
  for (size_t i = 0; i < in.size(); ++i)
    ptrs.push_back(in[i] ? &views[i] : nullptr);
}

} // namespace

KernelFn WithHalfViaF32(KernelFn run, std::vector<size_t> packed_weights) {
  return [run, packed_weights](ExecContext &ctx, const OpAttrs &attrs, const Inputs &in,
                               Outputs &out) -> Status {
    DType half = HalfType(in);
    if (half == DType::kUndefined)
      return run(ctx, attrs, in, out);
    std::vector<std::unique_ptr<float[]>> buffers;
    std::vector<const TensorView *> ptrs;
    std::vector<TensorView> views;
    WidenInputs(in, packed_weights, buffers, views, ptrs);
    std::vector<TensorView> wide_out = out;
    std::vector<std::unique_ptr<float[]>> out_buffers(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!IsHalf(out[i].dtype))
        continue;
      out_buffers[i].reset(new float[std::max<int64_t>(out[i].numel(), 1)]);
      wide_out[i].dtype = DType::kF32;
      wide_out[i].data = out_buffers[i].get();
    }
    KILN_RETURN_IF_ERROR(run(ctx, attrs, ptrs, wide_out));
    for (size_t i = 0; i < out.size(); ++i)
      if (out_buffers[i])
        kernels::CastElements(kernels::ElemType::kF32, out_buffers[i].get(), KindOf(out[i].dtype),
                              out[i].data, out[i].numel());
    return Status::Ok();
  };
}

} // namespace kiln::cpu
