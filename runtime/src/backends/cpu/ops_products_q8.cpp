// CPU kernels of the int8 projections (docs/fused-ops.md): linear_q8 and
// gated_mlp_q8, whose weights are int8 with one f32 scale per column. With
// f32 activations (the default) the f32 products read the int8 weight
// widened; with `activations = "int8"` each activation row is quantized
// too and multiplied int8 x int8 (kernels/cpu/products_int8_gemm.h). Their shape
// rules are in core/shapes/products_mlp.cpp.
#include "core/shapes/products_mlp.h"
#include "cpu_kernels.h"
#include "fused_activation.h"
#include "kernels/cpu/pointwise_activation.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/products_int8_gemm.h"
#include "kernels/cpu/products_mlp.h"
#include "kernels/cpu/products_packed_matrix.h"
#include "op_util.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace kiln::cpu {
namespace {

constexpr const char *kLinearQ8 = "linear_q8";
constexpr const char *kGatedMlpQ8 = "gated_mlp_q8";

using kernels::Activation;
using kernels::PackedElem;
using kernels::PackedMatrix;

// ---- f32 activations ------------------------------------------------------

// The int8 weight `w` [k, n] as the f32 kernels take it. Packed at load
// (weight_packing.cpp), its own address is the key by which the products
// find the int8 panels, which carry the scales: the kernels read one byte a
// weight. Otherwise (packing off, or out of memory then) a widened copy in
// `buffer`.
const float *Int8Weight(const TensorView &w, const TensorView &scale, std::vector<float> &buffer) {
  const int64_t k = w.shape[0], n = w.shape[1];
  const PackedMatrix *p = kernels::FindPacked(w.data, k, n, n, false);
  if (p != nullptr && p->elem() == PackedElem::kI8)
    return static_cast<const float *>(w.data);
  buffer.resize(static_cast<size_t>(k * n));
  kernels::DequantizeColumns(w.as<const int8_t>(), scale.as<const float>(), k, n, buffer.data());
  return buffer.data();
}

// ---- int8 activations -----------------------------------------------------

// The weight in the int8 x int8 product's layout: the copy packed at load,
// or one packed for this call (packing off) and held by `owned`.
StatusOr<const PackedMatrix *> Int8x4Weight(std::string_view op, const TensorView &w,
                                            const TensorView &scale,
                                            std::unique_ptr<PackedMatrix> &owned) {
  const int64_t k = w.shape[0], n = w.shape[1];
  const PackedMatrix *p = kernels::FindPacked(w.data, k, n, n, false);
  if (p != nullptr && p->elem() == PackedElem::kI8x4)
    return p;
  owned = PackedMatrix::PackI8x4(w.as<const int8_t>(), scale.as<const float>(), k, n, n);
  if (!owned)
    return Status(StatusCode::kResourceExhausted, std::string(op) +
                                                      ": out of memory repacking a weight of " +
                                                      std::to_string(k * n) + " bytes");
  return owned.get();
}

// y[rows, n] = rows of x [rows, k] (leading dim ldx), quantized per row,
// times the int8 weight `b`.
void QuantizedProduct(const float *x, int64_t rows, int64_t k, int64_t ldx, const PackedMatrix &b,
                      float *y, int64_t ldy, std::vector<uint8_t> &xq,
                      std::vector<float> &x_scale) {
  xq.resize(static_cast<size_t>(rows * kernels::QuantizedDepth(k)));
  x_scale.resize(static_cast<size_t>(rows));
  kernels::QuantizeRows(x, rows, k, ldx, xq.data(), x_scale.data());
  kernels::Int8Gemm(rows, xq.data(), x_scale.data(), b, y, ldy);
}

// Rows of the gated MLP per block, as kernels::GatedMlp takes them.
constexpr int64_t kBlockRows = 256;

// ---- the kernels ----------------------------------------------------------

Status RunLinearQ8(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(LinearActivation(attrs)));
  KILN_ASSIGN_OR_RETURN(bool int8, Int8Activations(kLinearQ8, attrs));
  const int64_t n = in[1]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  const float *bias = in.size() > 3 && in[3] != nullptr ? in[3]->as<const float>() : nullptr;
  float *y = out[0].as<float>();
  if (!int8) {
    std::vector<float> wide;
    kernels::Linear(in[0]->as<const float>(), Int8Weight(*in[1], *in[2], wide), bias, y, d.rows,
                    d.k, n, act);
    return Status::Ok();
  }
  if (d.rows == 0 || n == 0)
    return Status::Ok();
  std::unique_ptr<PackedMatrix> owned;
  KILN_ASSIGN_OR_RETURN(const PackedMatrix *w, Int8x4Weight(kLinearQ8, *in[1], *in[2], owned));
  std::vector<uint8_t> xq;
  std::vector<float> x_scale;
  QuantizedProduct(in[0]->as<const float>(), d.rows, d.k, d.k, *w, y, n, xq, x_scale);
  if (bias != nullptr)
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        y[r * n + j] += bias[j];
  if (act != Activation::kNone)
    kernels::Activate(act, y, y, d.rows * n);
  return Status::Ok();
}

Status RunGatedMlpQ8(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Activation act, KernelActivation(GatedMlpActivation(attrs)));
  KILN_ASSIGN_OR_RETURN(bool int8, Int8Activations(kGatedMlpQ8, attrs));
  const int64_t f = in[1]->shape[1] / 2, n = in[3]->shape[1];
  const LinearDims d = LinearDimsOf(*in[0], n);
  const float *x = in[0]->as<const float>();
  float *y = out[0].as<float>();
  std::vector<float> scratch(static_cast<size_t>(kernels::GatedMlpScratchSize(d.rows, f)));
  if (!int8) {
    std::vector<float> wide_gate_up, wide_down;
    kernels::GatedMlp(x, Int8Weight(*in[1], *in[2], wide_gate_up),
                      Int8Weight(*in[3], *in[4], wide_down), scratch.data(), y, d.rows, d.k, f, n,
                      act);
    return Status::Ok();
  }
  if (d.rows == 0 || n == 0)
    return Status::Ok();
  std::unique_ptr<PackedMatrix> owned_gate_up, owned_down;
  KILN_ASSIGN_OR_RETURN(const PackedMatrix *wgu,
                        Int8x4Weight(kGatedMlpQ8, *in[1], *in[2], owned_gate_up));
  KILN_ASSIGN_OR_RETURN(const PackedMatrix *wd,
                        Int8x4Weight(kGatedMlpQ8, *in[3], *in[4], owned_down));
  std::vector<uint8_t> xq;
  std::vector<float> x_scale;
  for (int64_t r0 = 0; r0 < d.rows; r0 += kBlockRows) {
    const int64_t m = std::min(kBlockRows, d.rows - r0);
    // [m, 2F] of gate and up; act(gate) * up overwrites the gate half, which
    // the down projection then reads (leading dim 2F), quantized per row.
    QuantizedProduct(x + r0 * d.k, m, d.k, d.k, *wgu, scratch.data(), 2 * f, xq, x_scale);
    for (int64_t r = 0; r < m; ++r) {
      float *row = scratch.data() + r * 2 * f;
      kernels::GatedActivation(act, row, row + f, row, f);
    }
    QuantizedProduct(scratch.data(), m, f, 2 * f, *wd, y + r0 * n, n, xq, x_scale);
  }
  return Status::Ok();
}

} // namespace

void AddProductsQ8Kernels(std::vector<KernelDef> &table) {
  table.push_back({kLinearQ8, RunLinearQ8});
  table.push_back({kGatedMlpQ8, RunGatedMlpQ8});
}

} // namespace kiln::cpu
