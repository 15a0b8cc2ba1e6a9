// CPU kernels of MatMul (numpy semantics, batched with broadcasting) and
// Gemm, both on OpenBLAS through kernels/cpu/products_gemm.h; their shape rules are in
// core/shapes/products.cpp.
#include "core/shapes/products.h"
#include "cpu_kernels.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/products_gemm.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

Status RunMatMul(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(MatMulDims d, ResolveMatMul(*in[0], *in[1]));
  return DispatchFloat("matmul", in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::MatMul<T>(in[0]->as<const T>(), d.batch_a, in[1]->as<const T>(), d.batch_b,
                       d.batch_out, d.m, d.k, d.n, out[0].as<T>());
    return Status::Ok();
  });
}

// ---- Gemm: Y = alpha * op(A) op(B) + beta * C ---------------------------

Status RunGemm(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(GemmDims g, ResolveGemm(attrs, in));
  const float alpha = attrs.Float("alpha", 1.0f);
  float beta = attrs.Float("beta", 1.0f);
  const TensorView *c = in.size() > 2 ? in[2] : nullptr;
  if (c == nullptr)
    beta = 0;
  if (beta != 0) {
    // Broadcast C into Y first; the GEMM then accumulates onto it.
    const Shape mn = {g.m, g.n};
    const size_t lead = 2 - c->shape.size();
    std::vector<int64_t> strides(2, 0);
    const std::vector<int64_t> cs = ContiguousStrides(c->shape);
    for (size_t d = lead; d < 2; ++d)
      strides[d] = c->shape[d - lead] == 1 ? 0 : cs[d - lead];
    kernels::StridedCopy(DTypeSize(c->dtype), c->data, mn, strides, out[0].data);
  }
  const int64_t lda = in[0]->shape[1], ldb = in[1]->shape[1];
  return DispatchFloat("gemm", in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Gemm<T>(g.trans_a, g.trans_b, g.m, g.n, g.k, static_cast<T>(alpha),
                     in[0]->as<const T>(), lda, in[1]->as<const T>(), ldb, static_cast<T>(beta),
                     out[0].as<T>(), g.n);
    return Status::Ok();
  });
}

} // namespace

void AddProductsKernels(std::vector<KernelDef> &table) {
  table.push_back({"matmul", RunMatMul});
  table.push_back({"gemm", RunGemm});
}

} // namespace kiln::cpu
