// CPU kernels of the fused MLP ops (docs/fused-ops.md): gelu, linear (matmul
// + bias + activation) and gated_mlp (SwiGLU/GeGLU up, gate and down
// projections); their shape rules are in core/shapes/fused_mlp.cpp.
#include "core/shapes/fused_mlp.h"
#include "cpu_kernels.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/mlp.h"
#include "kernels/cpu/packed_matrix.h"
#include "op_util.h"

#include <vector>

namespace kiln::cpu {
namespace {

constexpr const char *kGelu = "gelu";
constexpr const char *kLinear = "linear";
constexpr const char *kGatedMlp = "gated_mlp";
constexpr const char *kLinearQ8 = "linear_q8";
constexpr const char *kGatedMlpQ8 = "gated_mlp_q8";

using kernels::Activation;

// The shape rule's activation as the kernels' enum.
StatusOr<Activation> KernelActivation(StatusOr<FusedActivation> act) {
  KILN_RETURN_IF_ERROR(act.status());
  switch (*act) {
  case FusedActivation::kNone:
    return Activation::kNone;
  case FusedActivation::kRelu:
    return Activation::kRelu;
  case FusedActivation::kGelu:
    return Activation::kGelu;
  case FusedActivation::kGeluTanh:
    return Activation::kGeluTanh;
  case FusedActivation::kSilu:
    return Activation::kSilu;
  }
  return Activation::kNone;
}

// ---- gelu ----------------------------------------------------------------

// x and y are f32 and contiguous, so the whole tensor is one array.
Status RunGelu(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(GeluActivation(attrs)));
  kernels::Activate(act, in[0]->as<const float>(), out[0].as<float>(), in[0]->numel());
  return Status::Ok();
}

// ---- linear and gated_mlp ------------------------------------------------

// An omitted bias runs the GEMM with beta = 0.
Status RunLinear(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(LinearActivation(attrs)));
  const int64_t n = in[1]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  const float *bias = in.size() > 2 && in[2] != nullptr ? in[2]->as<const float>() : nullptr;
  kernels::Linear(in[0]->as<const float>(), in[1]->as<const float>(), bias, out[0].as<float>(),
                  d.rows, d.k, n, act);
  return Status::Ok();
}

// The [block, 2F] intermediate lives only for this call.
Status RunGatedMlp(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(GatedMlpActivation(attrs)));
  const int64_t f = in[1]->shape[1] / 2, n = in[2]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  std::vector<float> scratch(static_cast<size_t>(kernels::GatedMlpScratchSize(d.rows, f)));
  kernels::GatedMlp(in[0]->as<const float>(), in[1]->as<const float>(), in[2]->as<const float>(),
                    scratch.data(), out[0].as<float>(), d.rows, d.k, f, n, act);
  return Status::Ok();
}

// ---- linear_q8 and gated_mlp_q8 -------------------------------------------

// The int8 weight `w` [k, n] as the f32 kernels take it. Packed at load
// (weight_packing.cpp), its own address is the key by which the products
// find the int8 panels, which carry the scales: the kernels read one byte a
// weight. Otherwise (packing off, or out of memory then) a widened copy in
// `buffer`.
const float *Int8Weight(const TensorView &w, const TensorView &scale, std::vector<float> &buffer) {
  const int64_t k = w.shape[0], n = w.shape[1];
  const kernels::PackedMatrix *p = kernels::FindPacked(w.data, k, n, n, false);
  if (p != nullptr && p->elem() == kernels::PackedElem::kI8)
    return static_cast<const float *>(w.data);
  buffer.resize(static_cast<size_t>(k * n));
  kernels::DequantizeColumns(w.as<const int8_t>(), scale.as<const float>(), k, n, buffer.data());
  return buffer.data();
}

Status RunLinearQ8(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(LinearActivation(attrs)));
  const int64_t n = in[1]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  const float *bias = in.size() > 3 && in[3] != nullptr ? in[3]->as<const float>() : nullptr;
  std::vector<float> wide;
  kernels::Linear(in[0]->as<const float>(), Int8Weight(*in[1], *in[2], wide), bias,
                  out[0].as<float>(), d.rows, d.k, n, act);
  return Status::Ok();
}

Status RunGatedMlpQ8(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(GatedMlpActivation(attrs)));
  const int64_t f = in[1]->shape[1] / 2, n = in[3]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  std::vector<float> scratch(static_cast<size_t>(kernels::GatedMlpScratchSize(d.rows, f)));
  std::vector<float> wide_gate_up, wide_down;
  kernels::GatedMlp(in[0]->as<const float>(), Int8Weight(*in[1], *in[2], wide_gate_up),
                    Int8Weight(*in[3], *in[4], wide_down), scratch.data(), out[0].as<float>(),
                    d.rows, d.k, f, n, act);
  return Status::Ok();
}

} // namespace

void AddFusedMlpKernels(std::vector<KernelDef> &table) {
  table.push_back({kGelu, RunGelu});
  table.push_back({kLinear, RunLinear});
  table.push_back({kGatedMlp, RunGatedMlp});
  table.push_back({kLinearQ8, RunLinearQ8});
  table.push_back({kGatedMlpQ8, RunGatedMlpQ8});
}

} // namespace kiln::cpu
