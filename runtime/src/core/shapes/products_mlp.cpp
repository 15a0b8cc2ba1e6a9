// Shape rules of the fused MLP ops (docs/fused-ops.md): gelu, linear
// (matmul + bias + activation) and gated_mlp (SwiGLU/GeGLU up, gate and down
// projections).
#include "core/shapes/products_mlp.h"

#include "core/shapes/fused_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr const char *kGelu = "gelu";
constexpr const char *kLinear = "linear";
constexpr const char *kGatedMlp = "gated_mlp";

struct NamedActivation {
  const char *name;
  FusedActivation act;
};
constexpr NamedActivation kLinearActivations[] = {{"none", FusedActivation::kNone},
                                                  {"relu", FusedActivation::kRelu},
                                                  {"gelu", FusedActivation::kGelu},
                                                  {"gelu_tanh", FusedActivation::kGeluTanh},
                                                  {"silu", FusedActivation::kSilu}};
// A gated MLP without a nonlinearity on the gate is not in the contract.
constexpr NamedActivation kGatedActivations[] = {{"silu", FusedActivation::kSilu},
                                                 {"gelu", FusedActivation::kGelu},
                                                 {"gelu_tanh", FusedActivation::kGeluTanh}};

// The `activation` attribute resolved against the op's allowed list; an
// unknown name's error lists the accepted ones.
template <size_t N>
StatusOr<FusedActivation> ParseActivation(std::string_view op, const OpAttrs &attrs,
                                          const NamedActivation (&allowed)[N]) {
  KILN_ASSIGN_OR_RETURN(std::string name, RequiredString(op, attrs, "activation"));
  std::string names;
  for (const NamedActivation &a : allowed) {
    if (name == a.name)
      return a.act;
    names += names.empty() ? "" : ", ";
    names += a.name;
  }
  return OpError(op, "unknown activation '" + name + "' (expected one of " + names + ")");
}

} // namespace

StatusOr<FusedActivation> GeluActivation(const OpAttrs &attrs) {
  KILN_ASSIGN_OR_RETURN(std::string approx, RequiredString(kGelu, attrs, "approximate"));
  if (approx == "none")
    return FusedActivation::kGelu;
  if (approx == "tanh")
    return FusedActivation::kGeluTanh;
  return OpError(kGelu, "unknown approximate '" + approx + "' (expected none or tanh)");
}

StatusOr<FusedActivation> LinearActivation(const OpAttrs &attrs) {
  return ParseActivation(kLinear, attrs, kLinearActivations);
}

StatusOr<FusedActivation> GatedMlpActivation(const OpAttrs &attrs) {
  return ParseActivation(kGatedMlp, attrs, kGatedActivations);
}

StatusOr<bool> Int8Activations(std::string_view op, const OpAttrs &attrs) {
  const std::string v = attrs.String("activations", "f32");
  if (v == "f32" || v == "int8")
    return v == "int8";
  return OpError(op, "unknown activations '" + v + "' (expected f32 or int8)");
}

namespace {

// int8 x int8 sums are int32: |sum| <= 255 * 127 * depth must fit.
constexpr int64_t kMaxInt8Depth = 65536;

// With int8 activations, each product's depth (its weight's rows) must keep
// the int32 sums exact.
Status CheckInt8Depth(std::string_view op, const OpAttrs &attrs,
                      std::initializer_list<int64_t> depths) {
  KILN_ASSIGN_OR_RETURN(bool int8, Int8Activations(op, attrs));
  for (int64_t d : depths)
    if (int8 && d > kMaxInt8Depth)
      return OpError(op, "int8 activations need a product depth of at most " +
                             std::to_string(kMaxInt8Depth) + ", got " + std::to_string(d));
  return Status::Ok();
}

} // namespace

LinearDims LinearDimsOf(const TensorView &x, int64_t n) {
  LinearDims d;
  d.k = x.shape.back();
  d.rows = 1;
  for (size_t i = 0; i + 1 < x.shape.size(); ++i)
    d.rows *= x.shape[i];
  d.out = x.shape;
  d.out.back() = n;
  return d;
}

namespace {

// ---- linear and gated_mlp ------------------------------------------------

// Checks that weight `name` is 2-D with `rows` (named `rows_text`) rows.
Status CheckWeightRows(std::string_view op, const char *name, const TensorView &w, int64_t rows,
                       const char *rows_text) {
  if (w.shape.size() != 2)
    return OpError(op, std::string("operand '") + name + "' must be 2-D, got shape " +
                           ShapeToString(w.shape));
  if (w.shape[0] != rows)
    return OpError(op, std::string("operand '") + name + "' of shape " + ShapeToString(w.shape) +
                           " must have " + rows_text + " = " + std::to_string(rows) + " rows");
  return Status::Ok();
}

// Checks a 2-D float weight whose first dim must be `rows`.
Status CheckWeight(std::string_view op, const char *name, const TensorView &w, int64_t rows,
                   const char *rows_text) {
  KILN_RETURN_IF_ERROR(CheckFloatOperand(op, name, w));
  return CheckWeightRows(op, name, w, rows, rows_text);
}

// x [..., K], w [K, N], bias [N]? -> [..., N].
Status InferLinear(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kLinear, in, 2, 3, out, 1, 1));
  const TensorView &x = *in[0], &w = *in[1];
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kLinear, "x", x));
  KILN_RETURN_IF_ERROR(CheckMinRank(kLinear, "x", x, 1));
  KILN_RETURN_IF_ERROR(CheckWeight(kLinear, "w", w, x.shape.back(), "K (x's last dim)"));
  const int64_t n = w.shape[1];
  if (in.size() > 2 && in[2] != nullptr) {
    KILN_RETURN_IF_ERROR(CheckFloatOperand(kLinear, "bias", *in[2]));
    KILN_RETURN_IF_ERROR(CheckExactShape(kLinear, "bias", *in[2], {n}, "[N]"));
  }
  KILN_RETURN_IF_ERROR(LinearActivation(attrs).status());
  const LinearDims d = LinearDimsOf(x, n);
  KILN_RETURN_IF_ERROR(CheckBlasLimit(kLinear, {d.rows, d.k, n}));
  out[0] = {x.dtype, d.out, nullptr};
  return Status::Ok();
}

// x [..., K], w_gate_up [K, 2F], w_down [F, N] -> [..., N].
Status InferGatedMlp(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kGatedMlp, in, 3, 3, out, 1, 1));
  const TensorView &x = *in[0], &wgu = *in[1], &wd = *in[2];
  KILN_RETURN_IF_ERROR(CheckFloatOperand(kGatedMlp, "x", x));
  KILN_RETURN_IF_ERROR(CheckMinRank(kGatedMlp, "x", x, 1));
  KILN_RETURN_IF_ERROR(
      CheckWeight(kGatedMlp, "w_gate_up", wgu, x.shape.back(), "K (x's last dim)"));
  if (wgu.shape[1] % 2 != 0)
    return OpError(kGatedMlp, "operand 'w_gate_up' of shape " + ShapeToString(wgu.shape) +
                                  " must have an even number of columns [K, 2F]");
  const int64_t f = wgu.shape[1] / 2;
  KILN_RETURN_IF_ERROR(CheckWeight(kGatedMlp, "w_down", wd, f, "F (half of w_gate_up's columns)"));
  KILN_RETURN_IF_ERROR(GatedMlpActivation(attrs).status());
  const LinearDims d = LinearDimsOf(x, wd.shape[1]);
  KILN_RETURN_IF_ERROR(CheckBlasLimit(kGatedMlp, {d.rows, d.k, 2 * f, wd.shape[1]}));
  out[0] = {x.dtype, d.out, nullptr};
  return Status::Ok();
}

// ---- linear_q8 and gated_mlp_q8: int8 weights, f32 scales ----------------

constexpr const char *kLinearQ8 = "linear_q8";
constexpr const char *kGatedMlpQ8 = "gated_mlp_q8";

// An int8 weight [rows, N] with its f32 scale [N]; N is returned.
StatusOr<int64_t> CheckQuantizedWeight(std::string_view op, const char *name, const TensorView &w,
                                       const TensorView &scale, int64_t rows,
                                       const char *rows_text) {
  KILN_RETURN_IF_ERROR(CheckDType(op, name, w, {DType::kI8}));
  KILN_RETURN_IF_ERROR(CheckWeightRows(op, name, w, rows, rows_text));
  const std::string scale_name = std::string(name) + "'s scale";
  KILN_RETURN_IF_ERROR(CheckDType(op, scale_name.c_str(), scale, {DType::kF32}));
  KILN_RETURN_IF_ERROR(CheckExactShape(op, scale_name.c_str(), scale, {w.shape[1]}, "[N]"));
  return w.shape[1];
}

// x [..., K] f32, w [K, N] i8, scale [N] f32, bias [N] f32? -> [..., N] f32.
Status InferLinearQ8(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kLinearQ8, in, 3, 4, out, 1, 1));
  const TensorView &x = *in[0];
  KILN_RETURN_IF_ERROR(CheckDType(kLinearQ8, "x", x, {DType::kF32}));
  KILN_RETURN_IF_ERROR(CheckMinRank(kLinearQ8, "x", x, 1));
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckQuantizedWeight(kLinearQ8, "w", *in[1], *in[2],
                                                        x.shape.back(), "K (x's last dim)"));
  if (in.size() > 3 && in[3] != nullptr) {
    KILN_RETURN_IF_ERROR(CheckDType(kLinearQ8, "bias", *in[3], {DType::kF32}));
    KILN_RETURN_IF_ERROR(CheckExactShape(kLinearQ8, "bias", *in[3], {n}, "[N]"));
  }
  KILN_RETURN_IF_ERROR(LinearActivation(attrs).status());
  KILN_RETURN_IF_ERROR(CheckInt8Depth(kLinearQ8, attrs, {x.shape.back()}));
  const LinearDims d = LinearDimsOf(x, n);
  KILN_RETURN_IF_ERROR(CheckBlasLimit(kLinearQ8, {d.rows, d.k, n}));
  out[0] = {DType::kF32, d.out, nullptr};
  return Status::Ok();
}

// x [..., K], w_gate_up [K, 2F] i8 + [2F] f32, w_down [F, N] i8 + [N] f32.
Status InferGatedMlpQ8(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kGatedMlpQ8, in, 5, 5, out, 1, 1));
  const TensorView &x = *in[0];
  KILN_RETURN_IF_ERROR(CheckDType(kGatedMlpQ8, "x", x, {DType::kF32}));
  KILN_RETURN_IF_ERROR(CheckMinRank(kGatedMlpQ8, "x", x, 1));
  KILN_ASSIGN_OR_RETURN(int64_t f2, CheckQuantizedWeight(kGatedMlpQ8, "w_gate_up", *in[1], *in[2],
                                                         x.shape.back(), "K (x's last dim)"));
  if (f2 % 2 != 0)
    return OpError(kGatedMlpQ8, "operand 'w_gate_up' of shape " + ShapeToString(in[1]->shape) +
                                    " must have an even number of columns [K, 2F]");
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckQuantizedWeight(kGatedMlpQ8, "w_down", *in[3], *in[4],
                                                        f2 / 2, "F (half of w_gate_up's columns)"));
  KILN_RETURN_IF_ERROR(GatedMlpActivation(attrs).status());
  KILN_RETURN_IF_ERROR(CheckInt8Depth(kGatedMlpQ8, attrs, {x.shape.back(), f2 / 2}));
  const LinearDims d = LinearDimsOf(x, n);
  KILN_RETURN_IF_ERROR(CheckBlasLimit(kGatedMlpQ8, {d.rows, d.k, f2, n}));
  out[0] = {DType::kF32, d.out, nullptr};
  return Status::Ok();
}

// ---- moe -----------------------------------------------------------------

Status InferMoe(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("moe", in, 4, 4, out, 1, 1));
  // x as gated_mlp's: half activations reach shape rules as f32, while
  // half weights keep their dtype here; a device kernel checks that the
  // weights match x (ResolveMoe, which the kernels share, reads shapes only).
  KILN_RETURN_IF_ERROR(CheckFloatOperand("moe", "x", *in[0]));
  KILN_ASSIGN_OR_RETURN(MoeShape m, ResolveMoe(attrs, in));
  KILN_RETURN_IF_ERROR(CheckBlasLimit("moe", {m.rows, m.hidden, m.experts, 2 * m.ffn}));
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

} // namespace

StatusOr<MoeShape> ResolveMoe(const OpAttrs &attrs, const std::vector<const TensorView *> &in) {
  constexpr const char *op = "moe";
  const TensorView &x = *in[0], &wr = *in[1], &wgu = *in[2], &wd = *in[3];
  KILN_RETURN_IF_ERROR(CheckMinRank(op, "x", x, 1));
  MoeShape m;
  m.hidden = x.shape.back();
  m.rows = m.hidden == 0 ? 0 : x.numel() / m.hidden;
  KILN_RETURN_IF_ERROR(CheckWeight(op, "router_w", wr, m.hidden, "H (x's last dim)"));
  m.experts = wr.shape[1];
  if (wgu.shape.size() != 3 || wgu.shape[0] != m.experts || wgu.shape[1] != m.hidden ||
      wgu.shape[2] % 2 != 0)
    return OpError(op, "operand 'w_gate_up' of shape " + ShapeToString(wgu.shape) +
                           " must be [E, H, 2F] with E = " + std::to_string(m.experts) +
                           " and H = " + std::to_string(m.hidden));
  m.ffn = wgu.shape[2] / 2;
  if (wd.shape != Shape{m.experts, m.ffn, m.hidden})
    return OpError(op, "operand 'w_down' of shape " + ShapeToString(wd.shape) + " must be [E, F, H] = " +
                           ShapeToString({m.experts, m.ffn, m.hidden}));
  KILN_ASSIGN_OR_RETURN(m.top_k, RequiredInt(op, attrs, "top_k"));
  if (m.top_k < 1 || m.top_k > m.experts)
    return OpError(op, "attribute 'top_k' must be in [1, " + std::to_string(m.experts) + "], got " +
                           std::to_string(m.top_k));
  KILN_ASSIGN_OR_RETURN(m.normalize, RequiredFlag(op, attrs, "normalize"));
  KILN_RETURN_IF_ERROR(GatedMlpActivation(attrs).status());
  return m;
}

void AddProductsMlpShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"moe", InferMoe});
  rules.push_back({kLinearQ8, InferLinearQ8});
  rules.push_back({kGatedMlpQ8, InferGatedMlpQ8});
  rules.push_back({kLinear, InferLinear});
  rules.push_back({kGatedMlp, InferGatedMlp});
}

} // namespace kiln
