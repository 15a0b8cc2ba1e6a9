// CPU kernels of the fused attention ops (docs/fused-ops.md): rotary (RoPE
// with cos/sin tables that broadcast over x) and attention (scaled
// dot-product with GQA heads, an optional broadcast mask and a causal
// limit); their shape rules are in core/shapes/attention.cpp.
#include "core/shapes/attention.h"
#include "core/shapes/fused_checks.h"
#include "cpu_kernels.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_rotary.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

constexpr const char *kRotary = "rotary";
constexpr const char *kAttention = "attention";

// ---- rotary --------------------------------------------------------------

// A table's strides over x's leading dims: contiguous, 0 where it broadcasts.
kernels::RotaryTable TableOf(const TensorView &t) {
  kernels::RotaryTable table{t.as<const float>(), ContiguousStrides(t.shape)};
  table.strides.pop_back();
  for (size_t d = 0; d < table.strides.size(); ++d)
    if (t.shape[d] == 1)
      table.strides[d] = 0;
  return table;
}

// The tables are read in place through their strides, never expanded.
Status RunRotary(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(RotaryDims r, ResolveRotary(attrs, *in[0]));
  const kernels::RotaryShape s = {r.lead, r.dim, r.rotary_dim, r.interleaved};
  kernels::Rotary(in[0]->as<const float>(), TableOf(*in[1]), TableOf(*in[2]), out[0].as<float>(),
                  s);
  return Status::Ok();
}

// ---- attention -----------------------------------------------------------

// The mask as strides over [b, h, i, j]: right-aligned, 0 where broadcast.
kernels::AttentionMask MaskOf(const TensorView *m) {
  kernels::AttentionMask mask;
  if (m == nullptr)
    return mask;
  mask.kind = m->dtype == DType::kBool ? kernels::MaskKind::kBool : kernels::MaskKind::kAdditive;
  mask.data = m->data;
  const std::vector<int64_t> strides = ContiguousStrides(m->shape);
  const size_t lead = 4 - m->shape.size();
  for (size_t i = 0; i < m->shape.size(); ++i)
    mask.strides[lead + i] = m->shape[i] == 1 ? 0 : strides[i];
  return mask;
}

// An omitted mask (nullptr operand) gives MaskKind::kNone.
Status RunAttention(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(AttentionDims a, ResolveAttention(in));
  const kernels::AttentionDims d = {a.batch,  a.q_heads,  a.kv_heads, a.q_len,
                                    a.kv_len, a.head_dim, a.v_dim};
  KILN_ASSIGN_OR_RETURN(float scale, RequiredFloat(kAttention, attrs, "scale"));
  KILN_ASSIGN_OR_RETURN(bool causal, RequiredFlag(kAttention, attrs, "causal"));
  KILN_ASSIGN_OR_RETURN(float softcap, SoftCapOf(kAttention, attrs));
  const TensorView *mask = in.size() > 3 ? in[3] : nullptr;
  kernels::Attention(in[0]->as<const float>(), in[1]->as<const float>(), in[2]->as<const float>(),
                     MaskOf(mask), out[0].as<float>(), d, scale, causal, softcap);
  return Status::Ok();
}

} // namespace

void AddAttentionKernels(std::vector<KernelDef> &table) {
  table.push_back({kRotary, RunRotary});
  table.push_back({kAttention, RunAttention});
}

} // namespace kiln::cpu
