// CPU kernels of the fused normalizations (docs/fused-ops.md): rms_norm, and
// the residual add fused with RMS norm or layer norm (add_rms_norm,
// add_layer_norm), whose two results are the sum and its normalization;
// their shape rules are in core/shapes/norm_fused.cpp.
#include "core/shapes/fused_checks.h"
#include "cpu_kernels.h"
#include "kernels/cpu/norm_rms.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

constexpr const char *kRmsNorm = "rms_norm";
constexpr const char *kAddRmsNorm = "add_rms_norm";
constexpr const char *kAddLayerNorm = "add_layer_norm";

// The normalized row length D of x [..., D] and the rows before it.
struct Rows {
  int64_t rows = 0, cols = 0;
};

// x [..., D] as [rows, D]; rows is 0 when D is 0 so no row is visited.
Rows RowsOf(const TensorView &x) {
  Rows r;
  r.cols = x.shape.back();
  r.rows = r.cols == 0 ? 0 : x.numel() / r.cols;
  return r;
}

// Operands are f32 here (half_via_f32 widened any half ones).
Status RunRmsNorm(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kRmsNorm, attrs, "epsilon"));
  const Rows r = RowsOf(*in[0]);
  kernels::RmsNorm(in[0]->as<const float>(), in[1]->as<const float>(), out[0].as<float>(), r.rows,
                   r.cols, epsilon);
  return Status::Ok();
}

// Results in plan order: out[0] the residual sum, out[1] its norm.
Status RunAddRmsNorm(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kAddRmsNorm, attrs, "epsilon"));
  const Rows r = RowsOf(*in[0]);
  kernels::AddRmsNorm(in[0]->as<const float>(), in[1]->as<const float>(), in[2]->as<const float>(),
                      out[0].as<float>(), out[1].as<float>(), r.rows, r.cols, epsilon);
  return Status::Ok();
}

// An omitted bias (nullptr operand) normalizes without a shift.
Status RunAddLayerNorm(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(float epsilon, RequiredFloat(kAddLayerNorm, attrs, "epsilon"));
  const Rows r = RowsOf(*in[0]);
  const float *bias = in.size() > 3 && in[3] != nullptr ? in[3]->as<const float>() : nullptr;
  kernels::AddLayerNorm(in[0]->as<const float>(), in[1]->as<const float>(),
                        in[2]->as<const float>(), bias, out[0].as<float>(), out[1].as<float>(),
                        r.rows, r.cols, epsilon);
  return Status::Ok();
}

} // namespace

void AddNormFusedKernels(std::vector<KernelDef> &table) {
  table.push_back({kRmsNorm, RunRmsNorm});
  table.push_back({kAddRmsNorm, RunAddRmsNorm});
  table.push_back({kAddLayerNorm, RunAddLayerNorm});
}

} // namespace kiln::cpu
