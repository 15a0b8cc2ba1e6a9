// Shape rules of MatMul (numpy semantics, batched with broadcasting) and
// Gemm.
#include "core/shapes/products.h"

#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {

StatusOr<MatMulDims> ResolveMatMul(const TensorView &a, const TensorView &b) {
  const Shape &sa = a.shape, &sb = b.shape;
  if (sa.empty() || sb.empty())
    return OpError("matmul", "operands must have rank >= 1, got " + ShapeToString(sa) + " and " +
                                 ShapeToString(sb));
  MatMulDims d;
  // A 1-D operand is promoted to a matrix and its unit dim dropped after.
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  d.m = a_vec ? 1 : sa[sa.size() - 2];
  d.k = sa.back();
  const int64_t kb = b_vec ? sb[0] : sb[sb.size() - 2];
  d.n = b_vec ? 1 : sb.back();
  if (d.k != kb)
    return OpError("matmul", "inner dimensions differ: A is " + ShapeToString(sa) + ", B is " +
                                 ShapeToString(sb));
  if (!a_vec)
    d.batch_a.assign(sa.begin(), sa.end() - 2);
  if (!b_vec)
    d.batch_b.assign(sb.begin(), sb.end() - 2);
  KILN_ASSIGN_OR_RETURN(d.batch_out, BroadcastPair("matmul", d.batch_a, d.batch_b));
  d.out = d.batch_out;
  if (!a_vec)
    d.out.push_back(d.m);
  if (!b_vec)
    d.out.push_back(d.n);
  int64_t rows_a = d.m;
  for (int64_t v : d.batch_a)
    rows_a *= v;
  KILN_RETURN_IF_ERROR(CheckBlasLimit("matmul", {rows_a, d.k, d.n}));
  return d;
}

StatusOr<GemmDims> ResolveGemm(const OpAttrs &attrs, const Inputs &in) {
  const Shape &sa = in[0]->shape, &sb = in[1]->shape;
  if (sa.size() != 2 || sb.size() != 2)
    return OpError("gemm",
                   "A and B must be 2-D, got " + ShapeToString(sa) + " and " + ShapeToString(sb));
  GemmDims g;
  g.trans_a = attrs.Int("transA", 0) != 0;
  g.trans_b = attrs.Int("transB", 0) != 0;
  g.m = g.trans_a ? sa[1] : sa[0];
  g.k = g.trans_a ? sa[0] : sa[1];
  const int64_t kb = g.trans_b ? sb[1] : sb[0];
  g.n = g.trans_b ? sb[0] : sb[1];
  if (g.k != kb)
    return OpError("gemm", "inner dimensions differ: op(A) has K=" + std::to_string(g.k) +
                               ", op(B) has K=" + std::to_string(kb) +
                               " (transA=" + std::to_string(g.trans_a) +
                               ", transB=" + std::to_string(g.trans_b) + ")");
  KILN_RETURN_IF_ERROR(CheckBlasLimit("gemm", {g.m, g.k, g.n}));
  if (in.size() > 2 && in[2] != nullptr) {
    Shape bc;
    const Shape mn = {g.m, g.n};
    if (!BroadcastShapes(in[2]->shape, mn, &bc) || bc != mn)
      return OpError("gemm", "C of shape " + ShapeToString(in[2]->shape) +
                                 " does not broadcast to " + ShapeToString(mn));
  }
  return g;
}

namespace {

Status InferMatMul(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("matmul", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("matmul", "A", *in[0], {DType::kF32, DType::kF64}));
  KILN_RETURN_IF_ERROR(CheckSameDType("matmul", *in[0], *in[1]));
  KILN_ASSIGN_OR_RETURN(MatMulDims d, ResolveMatMul(*in[0], *in[1]));
  out[0] = {in[0]->dtype, d.out, nullptr};
  return Status::Ok();
}

Status InferGemm(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("gemm", in, 2, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("gemm", "A", *in[0], {DType::kF32, DType::kF64}));
  KILN_RETURN_IF_ERROR(CheckSameDType("gemm", *in[0], *in[1]));
  if (in.size() > 2 && in[2] != nullptr)
    KILN_RETURN_IF_ERROR(CheckSameDType("gemm", *in[0], *in[2]));
  KILN_ASSIGN_OR_RETURN(GemmDims g, ResolveGemm(attrs, in));
  out[0] = {in[0]->dtype, {g.m, g.n}, nullptr};
  return Status::Ok();
}

} // namespace

void AddProductsShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"matmul", InferMatMul});
  rules.push_back({"gemm", InferGemm});
}

} // namespace kiln
