// CUDA kernels of the matrix products: matmul (numpy semantics), gemm (ONNX
// Gemm), linear and gated_mlp (docs/fused-ops.md), all on cuBLASLt through
// gemm_lt.h, and moe on kiln's grouped products (kernels/cuda/products_moe.h);
// their shape rules are core/shapes/products.cpp and products_mlp.cpp.
//
// Bias and activation go in cuBLASLt's epilogue where it computes what the
// CPU does: bias, ReLU, and the tanh GELU for f16/bf16 results. The erf
// GELU and SiLU have no epilogue, and f32 results keep to our precise
// kernel for every activation but ReLU (cuBLASLt does not document its
// GELU's tanh precision, and f32 plans must stay within 1e-5 of the CPU);
// those run kernels/cuda/pointwise_activation.h on the f32 accumulator after the GEMM.
//
// gated_mlp keeps its [rows, 2F] gate/up product in f32 (OpScratch), so the
// activation and the gate * up product see unrounded accumulators, as on
// the CPU; only act(gate) * up is rounded to the operand type, once, as the
// down projection's input.
//
// Products of at most kGemvMaxRows rows (decode steps) in f32, f16 and bf16
// run on kiln's own GEMV (kernels/cuda/products_gemv.h) instead: matmul with an
// unbatched B, linear with its bias and activation in the epilogue, and
// gated_mlp as two GEMVs (gate/up with act(gate) * up in the epilogue,
// rounded once to the operand type, then down), when KILN_CUDA_GEMV=1 is in
// the environment. It is off by default: on the H200 cuBLASLt, with its plan
// cached, measured faster at most decode shapes (docs/gpu.md).
#include "backends/kernel_kinds.h"
#include "core/shapes/products_mlp.h"
#include "core/shapes/products.h"
#include "core/shapes/operand_checks.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "gemm_lt.h"
#include "kernels/cuda/pointwise_activation.h"
#include "kernels/cuda/products_gemv.h"
#include "kernels/cuda/products_matrix_broadcast.h"
#include "kernels/cuda/products_moe.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::cuda {
namespace {

using kernels::cuda::Activation;
using kernels::cuda::FloatElem;
using kernels::cuda::GemvArgs;

constexpr const char *kMatMul = "matmul";
constexpr const char *kGemm = "gemm";
constexpr const char *kLinear = "linear";
constexpr const char *kGatedMlp = "gated_mlp";
constexpr const char *kMoe = "moe";

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

FloatElem ElemOf(DType t) {
  switch (t) {
  case DType::kF64:
    return FloatElem::kF64;
  case DType::kF16:
    return FloatElem::kF16;
  case DType::kBF16:
    return FloatElem::kBF16;
  default:
    return FloatElem::kF32;
  }
}

// The present operands all have the first one's dtype, which is f32, f16,
// bf16 or (where `f64` allows) f64. The shape rules see half operands as
// f32, so a mix of f16 and bf16 reaches the kernel and is refused here.
Status CheckOperandTypes(const char *op, const Inputs &in, std::vector<const char *> names,
                         bool f64) {
  const DType t = in[0]->dtype;
  if (t != DType::kF32 && !IsHalf(t) && !(f64 && t == DType::kF64))
    return Unimplemented(
        std::string(op) + ": no CUDA kernel for dtype " + DTypeName(t) +
        (f64 ? " (expected f32, f64, f16 or bf16)" : " (expected f32, f16 or bf16)"));
  for (size_t i = 1; i < in.size() && i < names.size(); ++i)
    if (in[i] && in[i]->dtype != t)
      return OpError(op, std::string("operand '") + names[i] + "' is " + DTypeName(in[i]->dtype) +
                             ", expected " + DTypeName(t) + " like '" + names[0] + "'");
  return Status::Ok();
}

Status Zero(ExecContext &ctx, TensorView &y) {
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y.data, 0, y.bytes(), Stream(ctx)));
  return Status::Ok();
}

// The address `elements` into t's data.
void *At(const TensorView &t, int64_t elements) {
  return static_cast<uint8_t *>(t.data) + elements * static_cast<int64_t>(DTypeSize(t.dtype));
}

// ---- GEMV (few rows) ---------------------------------------------------------

// Read once per process: KILN_CUDA_GEMV=1 turns the GEMV path on.
bool GemvEnabled() {
  static const bool enabled = EnvSwitch("KILN_CUDA_GEMV", false);
  return enabled;
}

// Whether a product of `rows` rows with operands of type t takes the GEMV.
bool UseGemv(DType t, int64_t rows) {
  return rows >= 1 && rows <= kernels::cuda::kGemvMaxRows && (t == DType::kF32 || IsHalf(t)) &&
         GemvEnabled();
}

// A row-major product y [rows, n] = x [rows, k] w [k, ldw], contiguous.
GemvArgs GemvOf(DType t, int64_t rows, int64_t k, int64_t n, const void *x, const void *w,
                int64_t ldw, void *y) {
  GemvArgs a;
  a.t = ElemOf(t);
  a.m = rows;
  a.n = n;
  a.k = k;
  a.x = x;
  a.ldx = k;
  a.w = w;
  a.ldw = ldw;
  a.y = y;
  a.ldy = n;
  return a;
}

Status RunGemv(ExecContext &ctx, const GemvArgs &a) {
  KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::Gemv(a, Stream(ctx)));
  return Status::Ok();
}

// ---- matmul ------------------------------------------------------------------

// The batch as strided-batch GEMMs. B without batch: A's batch folds into
// M (one GEMM over every row). A without batch: B's batch strided, A
// repeated (stride 0). Otherwise the longest trailing run of batch dims on
// which A and B agree is one strided batch, and the leading dims broadcast
// by a loop of such GEMMs.
Status RunMatMul(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckOperandTypes(kMatMul, in, {"A", "B"}, true));
  const TensorView &a = *in[0], &b = *in[1];
  KILN_ASSIGN_OR_RETURN(MatMulDims d, ResolveMatMul(a, b));
  TensorView &y = out[0];
  if (y.numel() == 0)
    return Status::Ok();
  if (d.k == 0)
    return Zero(ctx, y);
  LtGemmShape s;
  s.ab = s.d = a.dtype;
  s.m = d.m;
  s.n = d.n;
  s.k = d.k;
  s.lda = d.k;
  s.ldb = s.ldd = d.n;
  const int64_t size_a = d.m * d.k, size_b = d.k * d.n, size_y = d.m * d.n;
  const int64_t count_a = NumElements(d.batch_a), count_b = NumElements(d.batch_b);
  if (count_b == 1) {
    s.m = d.m * count_a;
    if (UseGemv(a.dtype, s.m))
      return RunGemv(ctx, GemvOf(a.dtype, s.m, d.k, d.n, a.data, b.data, d.n, y.data));
    return LtGemm(ctx, s, {a.data, b.data, y.data});
  }
  if (count_a == 1) {
    LtGemmShape batched = s;
    batched.batch = count_b;
    batched.stride_a = 0;
    batched.stride_b = size_b;
    batched.stride_d = size_y;
    Status st = LtGemm(ctx, batched, {a.data, b.data, y.data});
    if (st.code() != StatusCode::kUnimplemented)
      return st;
    // No algorithm takes the repeated A: one product per batch entry.
    for (int64_t i = 0; i < count_b; ++i)
      KILN_RETURN_IF_ERROR(LtGemm(ctx, s, {a.data, At(b, i * size_b), At(y, i * size_y)}));
    return Status::Ok();
  }
  // Both batched: batch dims left-padded with 1 to the result's rank.
  const Shape &bo = d.batch_out;
  const size_t rank = bo.size();
  Shape ba(rank - d.batch_a.size(), 1), bb(rank - d.batch_b.size(), 1);
  ba.insert(ba.end(), d.batch_a.begin(), d.batch_a.end());
  bb.insert(bb.end(), d.batch_b.begin(), d.batch_b.end());
  size_t split = rank;
  while (split > 0 && ba[split - 1] == bb[split - 1])
    --split;
  const Shape outer(bo.begin(), bo.begin() + static_cast<ptrdiff_t>(split));
  s.batch = NumElements(Shape(bo.begin() + static_cast<ptrdiff_t>(split), bo.end()));
  s.stride_a = size_a;
  s.stride_b = size_b;
  s.stride_d = size_y;
  const std::vector<int64_t> strides_a = ContiguousStrides(ba), strides_b = ContiguousStrides(bb);
  const int64_t outer_count = NumElements(outer);
  for (int64_t o = 0; o < outer_count; ++o) {
    // Matrix indices of A and B for outer batch index o (a size-1 dim of
    // an operand broadcasts: index 0).
    int64_t rest = o, ma = 0, mb = 0;
    for (size_t i = split; i-- > 0;) {
      const int64_t idx = rest % outer[i];
      rest /= outer[i];
      ma += ba[i] == 1 ? 0 : idx * strides_a[i];
      mb += bb[i] == 1 ? 0 : idx * strides_b[i];
    }
    KILN_RETURN_IF_ERROR(
        LtGemm(ctx, s, {At(a, ma * size_a), At(b, mb * size_b), At(y, o * s.batch * size_y)}));
  }
  return Status::Ok();
}

// ---- gemm ----------------------------------------------------------------------

// Y = alpha op(A) op(B) + beta C. A C that is one row [N] with beta = 1 is
// cuBLASLt's bias epilogue; any other C is broadcast into Y first and the
// GEMM accumulates onto it with beta, as on the CPU.
Status RunGemm(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckOperandTypes(kGemm, in, {"A", "B", "C"}, true));
  KILN_ASSIGN_OR_RETURN(GemmDims g, ResolveGemm(attrs, in));
  const DType t = in[0]->dtype;
  const double alpha = attrs.Float("alpha", 1.0f);
  const TensorView *c = in.size() > 2 ? in[2] : nullptr;
  const double beta = c ? attrs.Float("beta", 1.0f) : 0.0;
  TensorView &y = out[0];
  if (g.m == 0 || g.n == 0)
    return Status::Ok();
  // C as [c_rows, c_cols] broadcasting to [M, N] (the rule checked it does).
  int64_t c_rows = 1, c_cols = 1;
  if (c && c->shape.size() >= 1)
    c_cols = c->shape.back();
  if (c && c->shape.size() == 2)
    c_rows = c->shape[0];
  const int64_t row_stride = c_rows == 1 ? 0 : c_cols, col_stride = c_cols == 1 ? 0 : 1;
  const cudaStream_t stream = Stream(ctx);
  if (g.k == 0) { // the product is zero: Y = beta C
    if (beta == 0)
      return Zero(ctx, y);
    KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::BroadcastMatrix(
        ElemOf(t), c->data, row_stride, col_stride, beta, y.data, g.m, g.n, stream));
    return Status::Ok();
  }
  LtGemmShape s;
  s.ab = s.d = t;
  s.m = g.m;
  s.n = g.n;
  s.k = g.k;
  s.trans_a = g.trans_a;
  s.trans_b = g.trans_b;
  s.lda = in[0]->shape[1];
  s.ldb = in[1]->shape[1];
  s.ldd = g.n;
  LtGemmArgs args{in[0]->data, in[1]->data, y.data};
  args.alpha = alpha;
  if (beta != 0) {
    if (beta == 1 && c_rows == 1 && c_cols == g.n && t != DType::kF64 && LtBiasAligned(c->data)) {
      s.epilogue = LtEpilogue::kBias;
      args.bias = c->data;
    } else {
      KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::BroadcastMatrix(
          ElemOf(t), c->data, row_stride, col_stride, 1.0, y.data, g.m, g.n, stream));
      args.beta = beta;
    }
  }
  return LtGemm(ctx, s, args);
}

// ---- linear ----------------------------------------------------------------

// The cuBLASLt epilogue computing act(x @ w + bias) as the CPU does, or
// false where our activation kernel must run after the GEMM.
bool EpilogueFor(FusedActivation act, DType t, const void *bias, LtEpilogue *e) {
  if (bias && !LtBiasAligned(bias))
    return false;
  switch (act) {
  case FusedActivation::kNone:
    *e = bias ? LtEpilogue::kBias : LtEpilogue::kNone;
    return true;
  case FusedActivation::kRelu:
    *e = bias ? LtEpilogue::kReluBias : LtEpilogue::kRelu;
    return true;
  case FusedActivation::kGeluTanh:
    // Its rounding hides under f16/bf16's; f32 takes our precise tanh.
    *e = bias ? LtEpilogue::kGeluTanhBias : LtEpilogue::kGeluTanh;
    return IsHalf(t);
  default:
    return false;
  }
}

// y = act(x @ w + bias): x [..., K] as [rows, K], w [K, N], bias [N]?.
Status RunLinear(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckOperandTypes(kLinear, in, {"x", "w", "bias"}, false));
  KILN_ASSIGN_OR_RETURN(FusedActivation act, LinearActivation(attrs));
  const TensorView &x = *in[0], &w = *in[1];
  const void *bias = in.size() > 2 && in[2] ? in[2]->data : nullptr;
  const DType t = x.dtype;
  const int64_t n = w.shape[1];
  const LinearDims d = LinearDimsOf(x, n);
  TensorView &y = out[0];
  if (d.rows == 0 || n == 0)
    return Status::Ok();
  if (d.k == 0) { // act(bias), or act(0)
    KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::BiasActivation(
        ToKernelActivation(act), nullptr, bias, y.data, ElemOf(t), d.rows, n, Stream(ctx)));
    return Status::Ok();
  }
  if (UseGemv(t, d.rows)) {
    GemvArgs g = GemvOf(t, d.rows, d.k, n, x.data, w.data, n, y.data);
    g.bias = bias;
    g.act = ToKernelActivation(act);
    return RunGemv(ctx, g);
  }
  LtGemmShape s;
  s.ab = s.d = t;
  s.m = d.rows;
  s.n = n;
  s.k = d.k;
  s.lda = d.k;
  s.ldb = s.ldd = n;
  LtGemmArgs args{x.data, w.data, y.data};
  if (EpilogueFor(act, t, bias, &s.epilogue)) {
    args.bias = bias;
    return LtGemm(ctx, s, args);
  }
  // The plain product in f32 (y itself when f32), then bias and activation.
  void *acc = y.data;
  if (IsHalf(t)) {
    KILN_ASSIGN_OR_RETURN(acc, OpScratch(ctx, static_cast<uint64_t>(d.rows * n) * sizeof(float)));
    s.d = DType::kF32;
    args.d = acc;
  }
  s.epilogue = LtEpilogue::kNone;
  KILN_RETURN_IF_ERROR(LtGemm(ctx, s, args));
  KILN_CUDA_RETURN_IF_ERROR(
      kernels::cuda::BiasActivation(ToKernelActivation(act), static_cast<const float *>(acc), bias,
                                    y.data, ElemOf(t), d.rows, n, Stream(ctx)));
  return Status::Ok();
}

// ---- gated_mlp -------------------------------------------------------------

// y = (act(x @ w_gate_up[:, :F]) * (x @ w_gate_up[:, F:])) @ w_down: one GEMM
// into an f32 [rows, 2F] scratch, the gate kernel into [rows, F] of the
// operand type (after it in the same scratch), then the down GEMM.
Status RunGatedMlp(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckOperandTypes(kGatedMlp, in, {"x", "w_gate_up", "w_down"}, false));
  KILN_ASSIGN_OR_RETURN(FusedActivation act, GatedMlpActivation(attrs));
  const TensorView &x = *in[0], &w_gate_up = *in[1], &w_down = *in[2];
  const DType t = x.dtype;
  const int64_t f = w_gate_up.shape[1] / 2, n = w_down.shape[1];
  const LinearDims d = LinearDimsOf(x, n);
  TensorView &y = out[0];
  if (d.rows == 0 || n == 0)
    return Status::Ok();
  if (d.k == 0 || f == 0) // act(0) * 0 = 0 for every allowed activation
    return Zero(ctx, y);
  if (UseGemv(t, d.rows)) {
    // g = act(x w_gate_up[:, :F]) * (x w_gate_up[:, F:]) in the operand type, then g w_down.
    KILN_ASSIGN_OR_RETURN(void *g,
                          OpScratch(ctx, static_cast<uint64_t>(d.rows * f) * DTypeSize(t)));
    GemvArgs up = GemvOf(t, d.rows, d.k, f, x.data, w_gate_up.data, 2 * f, g);
    up.gated = true;
    up.act = ToKernelActivation(act);
    KILN_RETURN_IF_ERROR(RunGemv(ctx, up));
    return RunGemv(ctx, GemvOf(t, d.rows, f, n, g, w_down.data, n, y.data));
  }
  // 256-byte aligned so the down GEMM's A admits every cuBLASLt algorithm.
  const uint64_t h_bytes = (static_cast<uint64_t>(d.rows * 2 * f) * sizeof(float) + 255) & ~255ull;
  const uint64_t g_bytes = static_cast<uint64_t>(d.rows * f) * DTypeSize(t);
  KILN_ASSIGN_OR_RETURN(void *scratch, OpScratch(ctx, h_bytes + g_bytes));
  float *h = static_cast<float *>(scratch);
  void *g = static_cast<uint8_t *>(scratch) + h_bytes;

  LtGemmShape up;
  up.ab = t;
  up.d = DType::kF32;
  up.m = d.rows;
  up.n = 2 * f;
  up.k = d.k;
  up.lda = d.k;
  up.ldb = up.ldd = 2 * f;
  KILN_RETURN_IF_ERROR(LtGemm(ctx, up, {x.data, w_gate_up.data, h}));
  KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::GatedActivation(ToKernelActivation(act), h, g, ElemOf(t),
                                                           d.rows, f, Stream(ctx)));
  LtGemmShape down;
  down.ab = down.d = t;
  down.m = d.rows;
  down.n = n;
  down.k = f;
  down.lda = f;
  down.ldb = down.ldd = n;
  return LtGemm(ctx, down, {g, w_down.data, y.data});
}

// ---- moe -------------------------------------------------------------------

// kernels/cuda/products_moe.h: routing, grouped expert products and the
// weighted combine, every intermediate in OpScratch.
Status RunMoe(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(
      CheckOperandTypes(kMoe, in, {"x", "router_w", "w_gate_up", "w_down"}, false));
  KILN_ASSIGN_OR_RETURN(MoeShape m, ResolveMoe(attrs, in));
  KILN_ASSIGN_OR_RETURN(FusedActivation act, GatedMlpActivation(attrs));
  if (m.rows == 0)
    return Status::Ok();
  if (m.ffn == 0)
    return Zero(ctx, out[0]);
  kernels::cuda::MoeArgs a;
  a.t = ElemOf(in[0]->dtype);
  a.rows = m.rows;
  a.hidden = m.hidden;
  a.experts = m.experts;
  a.ffn = m.ffn;
  a.top_k = m.top_k;
  a.normalize = m.normalize;
  a.act = ToKernelActivation(act);
  a.x = in[0]->data;
  a.router_w = in[1]->data;
  a.w_gate_up = in[2]->data;
  a.w_down = in[3]->data;
  a.y = out[0].data;
  // A host-side attribute query: a graph capture may include this op.
  int device = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  KILN_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&a.sm_count, cudaDevAttrMultiProcessorCount, device));
  const uint64_t bytes = kernels::cuda::MoeScratchBytes(a);
  if (bytes == 0)
    return OpError(kMoe, "shape outside the CUDA kernel's limits (experts <= 4096)");
  KILN_ASSIGN_OR_RETURN(void *scratch, OpScratch(ctx, bytes));
  KILN_CUDA_RETURN_IF_ERROR(kernels::cuda::Moe(a, scratch, Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddProductsKernels(std::vector<KernelDef> &table) {
  table.push_back({kMatMul, RunMatMul});
  table.push_back({kGemm, RunGemm});
  table.push_back({kLinear, RunLinear});
  table.push_back({kGatedMlp, RunGatedMlp});
  table.push_back({kMoe, RunMoe});
}

} // namespace kiln::cuda
