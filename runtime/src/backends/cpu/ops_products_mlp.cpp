// CPU kernels of the fused MLP ops (docs/fused-ops.md): linear (matmul
// + bias + activation), gated_mlp (SwiGLU/GeGLU up, gate and down
// projections) and moe (top-k routed gated experts); their shape rules are in core/shapes/products_mlp.cpp.
#include "core/shapes/products_mlp.h"
#include "cpu_kernels.h"
#include "fused_activation.h"
#include "kernels/cpu/products_mlp.h"
#include "kernels/cpu/products_moe.h"
#include "kernels/cpu/products_packed_matrix.h"
#include "op_util.h"

#include <vector>

namespace kiln::cpu {
namespace {

constexpr const char *kLinear = "linear";
constexpr const char *kGatedMlp = "gated_mlp";

using kernels::Activation;

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

// ---- moe -----------------------------------------------------------------

Status RunMoe(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(MoeShape m, ResolveMoe(attrs, in));
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(GatedMlpActivation(attrs)));
  kernels::MoeDims d;
  d.rows = m.rows;
  d.hidden = m.hidden;
  d.experts = m.experts;
  d.ffn = m.ffn;
  d.top_k = m.top_k;
  d.normalize = m.normalize;
  // Half expert weights reach here unwidened, labelled f32, when every expert
  // matrix has a packed half copy (half_via_f32.h): their registry entry says so.
  if (const kernels::PackedMatrix *p =
          kernels::FindPacked(in[2]->data, m.hidden, 2 * m.ffn, 2 * m.ffn, false);
      p != nullptr && p->source_elem() != kernels::PackedElem::kF32)
    d.weight_elem_bytes = 2;
  kernels::Moe(in[0]->as<const float>(), in[1]->as<const float>(), in[2]->as<const float>(),
               in[3]->as<const float>(), out[0].as<float>(), d, act);
  return Status::Ok();
}

} // namespace

void AddProductsMlpKernels(std::vector<KernelDef> &table) {
  table.push_back({"moe", RunMoe});
  table.push_back({kLinear, RunLinear});
  table.push_back({kGatedMlp, RunGatedMlp});
}

} // namespace kiln::cpu
