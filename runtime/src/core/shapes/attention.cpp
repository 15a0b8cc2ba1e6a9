// Shape rules of the fused attention ops (docs/fused-ops.md): rotary (RoPE
// with cos/sin tables that broadcast over x) and attention (scaled
// dot-product with GQA heads, an optional broadcast mask and a causal limit).
#include "core/shapes/attention.h"

#include "core/shapes/fused_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr const char *kRotary = "rotary";
constexpr const char *kAttention = "attention";

// q, k and v are always [B, H, S, D]; `dims` names the expected layout.
Status CheckRank4(const char *name, const TensorView &t, const char *dims) {
  if (t.shape.size() == 4)
    return Status::Ok();
  return OpError(kAttention, std::string("operand '") + name + "' must be 4-D " + dims +
                                 ", got shape " + ShapeToString(t.shape));
}

} // namespace

StatusOr<RotaryDims> ResolveRotary(const OpAttrs &attrs, const TensorView &x) {
  RotaryDims s;
  KILN_ASSIGN_OR_RETURN(s.rotary_dim, RequiredInt(kRotary, attrs, "rotary_dim"));
  KILN_ASSIGN_OR_RETURN(s.interleaved, RequiredFlag(kRotary, attrs, "interleaved"));
  s.dim = x.shape.back();
  s.lead.assign(x.shape.begin(), x.shape.end() - 1);
  if (s.rotary_dim < 0 || s.rotary_dim % 2 != 0 || s.rotary_dim > s.dim)
    return OpError(kRotary, "rotary_dim " + std::to_string(s.rotary_dim) +
                                " must be even and in [0, D] (x's last dim D = " +
                                std::to_string(s.dim) + ")");
  return s;
}

StatusOr<AttentionDims> ResolveAttention(const Inputs &in) {
  const TensorView &q = *in[0], &k = *in[1], &v = *in[2];
  KILN_RETURN_IF_ERROR(CheckRank4("q", q, "[B, Hq, Sq, D]"));
  KILN_RETURN_IF_ERROR(CheckRank4("k", k, "[B, Hkv, Skv, D]"));
  KILN_RETURN_IF_ERROR(CheckRank4("v", v, "[B, Hkv, Skv, Dv]"));
  const std::string shapes = " (q " + ShapeToString(q.shape) + ", k " + ShapeToString(k.shape) +
                             ", v " + ShapeToString(v.shape) + ")";
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0])
    return OpError(kAttention, "q, k and v must have the same batch B" + shapes);
  if (v.shape[1] != k.shape[1] || v.shape[2] != k.shape[2])
    return OpError(kAttention, "k and v must have the same heads Hkv and length Skv" + shapes);
  if (k.shape[3] != q.shape[3])
    return OpError(kAttention, "q and k must have the same head dim D" + shapes);
  if (k.shape[1] < 1 || q.shape[1] % k.shape[1] != 0)
    return OpError(kAttention,
                   "query heads Hq must be a multiple of key/value heads Hkv >= 1" + shapes);
  AttentionDims d;
  d.batch = q.shape[0];
  d.q_heads = q.shape[1];
  d.kv_heads = k.shape[1];
  d.q_len = q.shape[2];
  d.kv_len = k.shape[2];
  d.head_dim = q.shape[3];
  d.v_dim = v.shape[3];
  KILN_RETURN_IF_ERROR(CheckBlasLimit(
      kAttention, {d.q_heads / d.kv_heads * d.q_len, d.kv_len, d.head_dim, d.v_dim}));
  return d;
}

namespace {

// ---- rotary --------------------------------------------------------------

// Checks cos or sin: x's rank, each leading dim 1 or x's, last dim R.
Status CheckTable(const char *name, const TensorView &t, const TensorView &x, int64_t r) {
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kRotary, name, t));
  const size_t rank = x.shape.size();
  bool ok = t.shape.size() == rank && t.shape.back() == r;
  for (size_t d = 0; ok && d + 1 < rank; ++d)
    ok = t.shape[d] == 1 || t.shape[d] == x.shape[d];
  if (!ok)
    return OpError(
        kRotary, std::string("operand '") + name + "' of shape " + ShapeToString(t.shape) +
                     " must have x's rank, each leading dim 1 " + "or x's (x is " +
                     ShapeToString(x.shape) + "), and last dim rotary_dim = " + std::to_string(r));
  return Status::Ok();
}

// x [..., D], cos and sin [..., R] broadcasting onto x -> x's shape.
Status InferRotary(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kRotary, in, 3, 3, out, 1, 1));
  const TensorView &x = *in[0];
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kRotary, "x", x));
  KILN_RETURN_IF_ERROR(CheckMinRank(kRotary, "x", x, 1));
  KILN_ASSIGN_OR_RETURN(RotaryDims s, ResolveRotary(attrs, x));
  KILN_RETURN_IF_ERROR(CheckTable("cos", *in[1], x, s.rotary_dim));
  KILN_RETURN_IF_ERROR(CheckTable("sin", *in[2], x, s.rotary_dim));
  out[0] = {x.dtype, x.shape, nullptr};
  return Status::Ok();
}

// ---- attention -----------------------------------------------------------

// Checks the mask's dtype and that it broadcasts to [B, Hq, Sq, Skv].
Status CheckMask(const TensorView &m, const AttentionDims &d) {
  if (m.dtype != DType::kF32 && m.dtype != DType::kBool)
    return OpError(kAttention, std::string("operand 'mask' must be f32 (additive) or bool, got ") +
                                   DTypeName(m.dtype));
  const Shape scores = {d.batch, d.q_heads, d.q_len, d.kv_len};
  bool ok = m.shape.size() <= 4;
  for (size_t i = 0; ok && i < m.shape.size(); ++i) {
    const int64_t want = scores[4 - m.shape.size() + i];
    ok = m.shape[i] == 1 || m.shape[i] == want;
  }
  if (!ok)
    return OpError(kAttention, "operand 'mask' of shape " + ShapeToString(m.shape) +
                                   " does not broadcast to the scores [B, Hq, Sq, Skv] = " +
                                   ShapeToString(scores));
  return Status::Ok();
}

// q, k, v [B, H, S, D], mask? -> [B, Hq, Sq, Dv].
Status InferAttention(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kAttention, in, 3, 4, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kAttention, "q", *in[0]));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kAttention, "k", *in[1]));
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kAttention, "v", *in[2]));
  KILN_ASSIGN_OR_RETURN(AttentionDims d, ResolveAttention(in));
  if (in.size() > 3 && in[3] != nullptr)
    KILN_RETURN_IF_ERROR(CheckMask(*in[3], d));
  KILN_RETURN_IF_ERROR(RequiredFloat(kAttention, attrs, "scale").status());
  KILN_RETURN_IF_ERROR(RequiredFlag(kAttention, attrs, "causal").status());
  KILN_RETURN_IF_ERROR(SoftCapOf(kAttention, attrs).status());
  out[0] = {in[0]->dtype, {d.batch, d.q_heads, d.q_len, d.v_dim}, nullptr};
  return Status::Ok();
}

} // namespace

void AddAttentionShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({kRotary, InferRotary});
  rules.push_back({kAttention, InferAttention});
}

} // namespace kiln
