// Cases of the products' few-row path (the CUDA backend's GEMV for at most
// 16 rows, kernels/cuda/products_gemv.h): linear, gated_mlp and matmul with an
// unbatched B at 1, 3, 7 and 16 rows, and 17 (the first row count back on
// cuBLASLt), in every float type. The shapes reach each path of the kernel:
//  - K = 67, N = 129: odd sizes, rows not 16-byte aligned (per-column loads);
//  - N = 256 (F = 128): 16-byte loads, with K = 67 ending mid-step;
//  - K of a few thousand over few columns: K split across the blocks of a
//    cluster, with both load paths; N of a few thousand: many tiles.
#include "op_case.h"

#include <iterator>
#include <string>

namespace kiln::oracle {
namespace {

constexpr DType kTypes[] = {DType::kF32, DType::kF16, DType::kBF16};
constexpr int64_t kRows[] = {1, 3, 7, 16, 17};
const char *const kActs[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};
const char *const kGates[] = {"silu", "gelu", "gelu_tanh"};

// As the other products (cases_products.cpp): f32 sums at 1e-5, half
// results at the oracle's rounding floors.
constexpr Tolerance kProduct = {1e-10, 1e-5};

std::string Variant(const char *what, int64_t k, int64_t n) {
  return std::string("gemv_") + what + "_k" + std::to_string(k) + "_n" + std::to_string(n);
}

OpCase Linear(DType t, int64_t rows, int64_t k, int64_t n, const char *act, bool bias) {
  return MakeCase(
      "linear", t, {rows, k}, Variant(act, k, n) + (bias ? "_bias" : ""),
      Attrs().String("activation", act),
      {Uniform(t, {rows, k}), Uniform(t, {k, n}, -0.5, 0.5), bias ? Uniform(t, {n}) : Omitted()},
      kProduct);
}

OpCase GatedMlp(DType t, int64_t rows, int64_t k, int64_t f, int64_t n, const char *act) {
  return MakeCase(
      "gated_mlp", t, {rows, k}, Variant(act, k, n) + "_f" + std::to_string(f),
      Attrs().String("activation", act),
      {Uniform(t, {rows, k}), Uniform(t, {k, 2 * f}, -0.3, 0.3), Uniform(t, {f, n}, -0.3, 0.3)},
      kProduct);
}

// A [batch, rows, K] against B [K, N]: the batch folds into the rows.
OpCase MatMul(DType t, int64_t batch, int64_t rows, int64_t k, int64_t n) {
  return MakeCase("matmul", t, {batch, rows, k}, Variant("matmul", k, n), {},
                  {Uniform(t, {batch, rows, k}), Uniform(t, {k, n})}, kProduct);
}

} // namespace

void AddGemvCases(std::vector<OpCase> &c) {
  for (DType t : kTypes) {
    // Every epilogue, with and without a bias, at one row.
    for (const char *act : kActs) {
      c.push_back(Linear(t, 1, 67, 129, act, true));
      c.push_back(Linear(t, 1, 67, 256, act, false));
    }
    for (size_t i = 0; i < std::size(kRows); ++i) {
      const int64_t rows = kRows[i];
      const char *act = kActs[i % std::size(kActs)];
      const char *gate = kGates[i % std::size(kGates)];
      if (rows > 1) { // one row: every epilogue above
        c.push_back(Linear(t, rows, 67, 129, act, i % 2 == 0));
        c.push_back(Linear(t, rows, 67, 256, kActs[(i + 2) % std::size(kActs)], i % 2 == 1));
      }
      // Long sums over few columns: K split 8 ways, 16-byte loads.
      c.push_back(Linear(t, rows, 4096, 72, act, i % 2 == 1));
      c.push_back(GatedMlp(t, rows, 67, 65, 129, gate));
      c.push_back(GatedMlp(t, rows, 67, 128, 256, gate));
      c.push_back(MatMul(t, 1, rows, 67, 129));
    }
    // Split K with per-column loads; both gated products split.
    for (int64_t rows : {1, 16})
      c.push_back(MatMul(t, 1, rows, 4099, 67));
    c.push_back(GatedMlp(t, 3, 1100, 1030, 136, "silu"));
    // A few thousand of both, K under two splits' worth: no split.
    c.push_back(Linear(t, 1, 1000, 2500, "silu", true));
    // A batch of rows that fits (2 x 7) and one that does not (3 x 7).
    c.push_back(MatMul(t, 2, 7, 67, 129));
    c.push_back(MatMul(t, 3, 7, 67, 129));
  }
}

} // namespace kiln::oracle
