// CPU kernel of LayerNormalization over dims [axis, rank), with optional
// Mean and InvStdDev results (stash type f32); its shape rule is in
// core/shapes/norm.cpp.
#include "cpu_kernels.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/norm_layer.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

constexpr const char *kName = "layer_normalization";

// Returns Scale/B as `cols` contiguous values, expanding a broadcast operand
// into `storage` (rare: exporters give full-size parameters).
const void *Materialize(const TensorView &p, const Shape &norm, std::vector<uint8_t> &storage) {
  if (p.numel() == NumElements(norm))
    return p.data;
  const size_t lead = norm.size() - p.shape.size();
  const std::vector<int64_t> ps = ContiguousStrides(p.shape);
  std::vector<int64_t> strides(norm.size(), 0);
  for (size_t d = lead; d < norm.size(); ++d)
    strides[d] = p.shape[d - lead] == 1 ? 0 : ps[d - lead];
  storage.resize(static_cast<size_t>(NumElements(norm)) * DTypeSize(p.dtype));
  kernels::StridedCopy(DTypeSize(p.dtype), p.data, norm, strides, storage.data());
  return storage.data();
}

Status RunLayerNorm(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const TensorView &x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(kName, attrs.Int("axis", -1), rank));
  const Shape norm(x.shape.begin() + axis, x.shape.end());
  const int64_t cols = NumElements(norm);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  std::vector<uint8_t> scale_storage, bias_storage;
  const void *scale = Materialize(*in[1], norm, scale_storage);
  const void *bias = nullptr;
  if (in.size() > 2 && in[2] != nullptr)
    bias = Materialize(*in[2], norm, bias_storage);
  float *mean = out.size() > 1 ? out[1].as<float>() : nullptr;
  float *inv_std = out.size() > 2 ? out[2].as<float>() : nullptr;
  const float epsilon = attrs.Float("epsilon", 1e-5f);
  return DispatchFloat(kName, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::LayerNorm<T>(x.as<const T>(), static_cast<const T *>(scale),
                          static_cast<const T *>(bias), out[0].as<T>(), rows, cols, epsilon, mean,
                          inv_std);
    return Status::Ok();
  });
}

} // namespace

void AddNormKernels(std::vector<KernelDef> &table) { table.push_back({kName, RunLayerNorm}); }

} // namespace kiln::cpu
