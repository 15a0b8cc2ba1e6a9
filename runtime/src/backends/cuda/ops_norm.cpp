// CUDA kernels of the normalizations and the row-wise fused ops:
// layer_normalization (ONNX, over dims [axis, rank), optional Mean and
// InvStdDev), rms_norm, add_rms_norm, add_layer_norm, rotary and gelu
// (docs/fused-ops.md). Their shape rules are in core/shapes/{norm,
// fused_norm,fused_attention,fused_mlp}.cpp; the device code is in
// kernels/cuda/{norm,rotary,gelu}.cu.
#include "core/shapes/attention.h"
#include "core/shapes/fused_checks.h"
#include "core/shapes/products_mlp.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "fused_operands.h"
#include "kernels/cuda/pointwise_gelu.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/attention_rotary.h"

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

constexpr const char *kLayerNorm = "layer_normalization";
constexpr const char *kRmsNorm = "rms_norm";
constexpr const char *kAddRmsNorm = "add_rms_norm";
constexpr const char *kAddLayerNorm = "add_layer_norm";
constexpr const char *kRotary = "rotary";
constexpr const char *kGelu = "gelu";

// Drops extent-1 dims and merges neighbours k, k+1 whose strides (in every
// array of `strides`) chain, so the index maps stay small.
void MergeDims(std::vector<int64_t> &dims, std::vector<std::vector<int64_t> *> strides) {
  std::vector<int64_t> md;
  std::vector<std::vector<int64_t>> ms(strides.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1)
      continue;
    bool chain = !md.empty();
    for (size_t a = 0; chain && a < strides.size(); ++a)
      chain = ms[a].back() == (*strides[a])[k] * dims[k];
    if (chain) {
      md.back() *= dims[k];
      for (size_t a = 0; a < strides.size(); ++a)
        ms[a].back() = (*strides[a])[k];
      continue;
    }
    md.push_back(dims[k]);
    for (size_t a = 0; a < strides.size(); ++a)
      ms[a].push_back((*strides[a])[k]);
  }
  dims = md;
  for (size_t a = 0; a < strides.size(); ++a)
    *strides[a] = ms[a];
}

// ---- normalizations ------------------------------------------------------

// A parameter [D] of the fused norms (contiguous over the row); an absent
// one has null data.
StatusOr<kc::NormParam> RowParam(const char *op, const char *name, const TensorView *p) {
  kc::NormParam param;
  if (p == nullptr)
    return param;
  KILN_ASSIGN_OR_RETURN(param.type, FusedFloatOf(op, name, *p));
  param.data = p->data;
  return param;
}

// layer_normalization's Scale or B, which broadcasts onto the normalized
// shape `norm`: contiguous when it has the row's element count, else an
// index map (right-aligned, stride 0 on broadcast dims) read in place.
StatusOr<kc::NormParam> BroadcastParam(const char *name, const TensorView *p, const Shape &norm) {
  kc::NormParam param;
  if (p == nullptr)
    return param;
  KILN_ASSIGN_OR_RETURN(param.type, FusedFloatOf(kLayerNorm, name, *p, true));
  param.data = p->data;
  if (p->numel() == NumElements(norm))
    return param;
  std::vector<int64_t> dims(norm.begin(), norm.end()), strides(norm.size(), 0);
  const std::vector<int64_t> ps = ContiguousStrides(p->shape);
  const size_t lead = norm.size() - p->shape.size();
  for (size_t d = lead; d < norm.size(); ++d)
    strides[d] = p->shape[d - lead] == 1 ? 0 : ps[d - lead];
  MergeDims(dims, {&strides});
  if (dims.size() > static_cast<size_t>(kc::kMaxNormParamRank))
    return OpError(kLayerNorm, std::string("operand '") + name + "' of shape " +
                                   ShapeToString(p->shape) + " broadcasts over more than " +
                                   std::to_string(kc::kMaxNormParamRank) +
                                   " dims, which the CUDA kernel does not index");
  param.rank = static_cast<int>(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    param.dims[k] = dims[k];
    param.strides[k] = strides[k];
  }
  return param;
}

// x [..., D] as rows of D.
kc::NormShape LastDimRows(const TensorView &x) {
  kc::NormShape s;
  s.cols = x.shape.back();
  s.rows = s.cols == 0 ? 0 : x.numel() / s.cols;
  return s;
}

// Read once per process: RMS norms whose rows fit hold them in registers
// (kernels/cuda/norm.h); on by default since it passed the GPU tests and
// measured faster at 8B (docs/gpu.md), KILN_VEC_NORM=0 turns it off for A/B
// runs.
kc::NormShape RmsRows(const TensorView &x) {
  static const bool in_registers = EnvSwitch("KILN_VEC_NORM", true);
  kc::NormShape s = LastDimRows(x);
  s.rows_in_registers = in_registers;
  return s;
}

Status RunLayerNorm(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const TensorView &x = *in[0];
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kLayerNorm, "X", x, true));
  KILN_RETURN_IF_ERROR(CheckResultDType(kLayerNorm, x, out, 1));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(kLayerNorm, attrs.Int("axis", -1), rank));
  const Shape norm(x.shape.begin() + axis, x.shape.end());
  kc::NormShape shape;
  shape.cols = NumElements(norm);
  shape.rows = shape.cols == 0 ? 0 : x.numel() / shape.cols;
  KILN_ASSIGN_OR_RETURN(kc::NormParam scale, BroadcastParam("Scale", in[1], norm));
  KILN_ASSIGN_OR_RETURN(kc::NormParam bias,
                        BroadcastParam("B", in.size() > 2 ? in[2] : nullptr, norm));
  float *mean = out.size() > 1 ? out[1].as<float>() : nullptr;
  float *inv_std = out.size() > 2 ? out[2].as<float>() : nullptr;
  KILN_CUDA_RETURN_IF_ERROR(kc::LayerNorm(type, x.data, scale, bias, out[0].data, mean, inv_std,
                                          shape, attrs.Float("epsilon", 1e-5f), Stream(ctx)));
  return Status::Ok();
}

Status RunRmsNorm(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kRmsNorm, attrs, "epsilon"));
  const TensorView &x = *in[0];
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kRmsNorm, "x", x));
  KILN_RETURN_IF_ERROR(CheckResultDType(kRmsNorm, x, out, 1));
  KILN_ASSIGN_OR_RETURN(kc::NormParam scale, RowParam(kRmsNorm, "scale", in[1]));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::RmsNorm(type, x.data, scale, out[0].data, RmsRows(x), epsilon, Stream(ctx)));
  return Status::Ok();
}

// a and b must share a dtype: the kernel reads both as x's type.
Status CheckResidualTypes(const char *op, const Inputs &in) {
  if (in[1]->dtype == in[0]->dtype)
    return Status::Ok();
  return OpError(op, std::string("operand 'b' is ") + DTypeName(in[1]->dtype) + " but 'a' is " +
                         DTypeName(in[0]->dtype) + "; the CUDA kernel needs one dtype");
}

// Results in plan order: out[0] the residual sum, out[1] its norm.
Status RunAddRmsNorm(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kAddRmsNorm, attrs, "epsilon"));
  const TensorView &a = *in[0];
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kAddRmsNorm, "a", a));
  KILN_RETURN_IF_ERROR(CheckResidualTypes(kAddRmsNorm, in));
  KILN_RETURN_IF_ERROR(CheckResultDType(kAddRmsNorm, a, out, 2));
  KILN_ASSIGN_OR_RETURN(kc::NormParam scale, RowParam(kAddRmsNorm, "scale", in[2]));
  KILN_CUDA_RETURN_IF_ERROR(kc::AddRmsNorm(type, a.data, in[1]->data, scale, out[0].data,
                                           out[1].data, RmsRows(a), epsilon, Stream(ctx)));
  return Status::Ok();
}

Status RunAddLayerNorm(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kAddLayerNorm, attrs, "epsilon"));
  const TensorView &a = *in[0];
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kAddLayerNorm, "a", a));
  KILN_RETURN_IF_ERROR(CheckResidualTypes(kAddLayerNorm, in));
  KILN_RETURN_IF_ERROR(CheckResultDType(kAddLayerNorm, a, out, 2));
  KILN_ASSIGN_OR_RETURN(kc::NormParam scale, RowParam(kAddLayerNorm, "scale", in[2]));
  KILN_ASSIGN_OR_RETURN(kc::NormParam bias,
                        RowParam(kAddLayerNorm, "bias", in.size() > 3 ? in[3] : nullptr));
  KILN_CUDA_RETURN_IF_ERROR(kc::AddLayerNorm(type, a.data, in[1]->data, scale, bias, out[0].data,
                                             out[1].data, LastDimRows(a), epsilon, Stream(ctx)));
  return Status::Ok();
}

// ---- rotary and gelu -----------------------------------------------------

// A table's strides over x's leading dims: contiguous, 0 where it broadcasts.
std::vector<int64_t> TableStrides(const TensorView &t) {
  std::vector<int64_t> strides = ContiguousStrides(t.shape);
  strides.pop_back();
  for (size_t d = 0; d < strides.size(); ++d)
    if (t.shape[d] == 1)
      strides[d] = 0;
  return strides;
}

Status RunRotary(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const TensorView &x = *in[0];
  KILN_ASSIGN_OR_RETURN(RotaryDims r, ResolveRotary(attrs, x));
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kRotary, "x", x));
  KILN_RETURN_IF_ERROR(CheckResultDType(kRotary, x, out, 1));
  kc::RotaryTable cos, sin;
  KILN_ASSIGN_OR_RETURN(cos.type, FusedFloatOf(kRotary, "cos", *in[1]));
  KILN_ASSIGN_OR_RETURN(sin.type, FusedFloatOf(kRotary, "sin", *in[2]));
  cos.data = in[1]->data;
  sin.data = in[2]->data;
  std::vector<int64_t> lead = r.lead, cs = TableStrides(*in[1]), ss = TableStrides(*in[2]);
  MergeDims(lead, {&cs, &ss});
  if (lead.size() > static_cast<size_t>(kc::kMaxRotaryLeadRank))
    return OpError(kRotary, "x of shape " + ShapeToString(x.shape) + " with cos/sin of shapes " +
                                ShapeToString(in[1]->shape) + ", " + ShapeToString(in[2]->shape) +
                                " needs more than " + std::to_string(kc::kMaxRotaryLeadRank) +
                                " leading dims after merging, which the CUDA kernel does not "
                                "index");
  kc::RotaryLayout layout;
  layout.lead_rank = static_cast<int>(lead.size());
  for (size_t k = 0; k < lead.size(); ++k) {
    layout.lead[k] = lead[k];
    cos.strides[k] = cs[k];
    sin.strides[k] = ss[k];
  }
  layout.dim = r.dim;
  layout.rotary_dim = r.rotary_dim;
  layout.interleaved = r.interleaved;
  if (r.dim == 0 || x.numel() == 0)
    return Status::Ok();
  KILN_CUDA_RETURN_IF_ERROR(kc::Rotary(type, x.data, cos, sin, out[0].data, layout, Stream(ctx)));
  return Status::Ok();
}

Status RunGelu(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(FusedActivation act, GeluActivation(attrs));
  const TensorView &x = *in[0];
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kGelu, "x", x));
  KILN_RETURN_IF_ERROR(CheckResultDType(kGelu, x, out, 1));
  KILN_CUDA_RETURN_IF_ERROR(kc::Gelu(type, act == FusedActivation::kGeluTanh, x.data, out[0].data,
                                     x.numel(), Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddNormKernels(std::vector<KernelDef> &table) {
  table.push_back({kLayerNorm, RunLayerNorm});
  table.push_back({kRmsNorm, RunRmsNorm});
  table.push_back({kAddRmsNorm, RunAddRmsNorm});
  table.push_back({kAddLayerNorm, RunAddLayerNorm});
}

// rotary (family attention) and gelu (family pointwise) share this file's
// dims merging with the norms; each is registered under its own family.
void AddRotaryKernels(std::vector<KernelDef> &table) { table.push_back({kRotary, RunRotary}); }

void AddGeluKernels(std::vector<KernelDef> &table) {
  table.push_back({kGelu, RunGelu});
}

} // namespace kiln::cuda
