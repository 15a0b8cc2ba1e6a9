// Cases of the matrix products (matmul, gemm, linear, gated_mlp) and rotary.
#include "op_case.h"

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16;

// Sums of K products: f32 accumulation error grows with K (up to 129 here).
constexpr Tolerance kProduct = {1e-10, 5e-5};

void AddMatMul(std::vector<OpCase> &c) {
  for (DType t : {F32, F16, BF16})
    c.push_back(MakeCase("matmul", t, {37, 129}, "", {},
                         {Uniform(t, {37, 129}), Uniform(t, {129, 13})}, kProduct));
  c.push_back(MakeCase("matmul", F32, {7, 1, 13, 37}, "bcast_batch", {},
                       {Uniform(F32, {7, 1, 13, 37}), Uniform(F32, {3, 37, 11})}, kProduct));
  c.push_back(MakeCase("matmul", F32, {37}, "vector_matrix", {},
                       {Uniform(F32, {37}), Uniform(F32, {37, 13})}, kProduct));
  c.push_back(MakeCase("matmul", F32, {5, 13, 37}, "matrix_vector", {},
                       {Uniform(F32, {5, 13, 37}), Uniform(F32, {37})}, kProduct));
  // A decode step: one row against a wide weight.
  c.push_back(MakeCase("matmul", F32, {1, 129}, "one_row", {},
                       {Uniform(F32, {1, 129}), Uniform(F32, {129, 257})}, kProduct));
  c.push_back(
      MakeCase("matmul", F32, {37}, "dot", {}, {Uniform(F32, {37}), Uniform(F32, {37})}, kProduct));
  // Big enough for the threaded and blocked paths.
  c.push_back(MakeCase("matmul", F32, {129, 257}, "large", {},
                       {Uniform(F32, {129, 257}), Uniform(F32, {257, 131})}, kProduct));
  // Empty rows (a batch with no tokens).
  c.push_back(MakeCase("matmul", F32, {0, 37}, "empty", {},
                       {Uniform(F32, {0, 37}), Uniform(F32, {37, 13})}, kProduct));
  c.push_back(MakeCase("gemm", F32, {37, 13}, "plain", {},
                       {Uniform(F32, {37, 13}), Uniform(F32, {13, 29})}, kProduct));
  c.push_back(
      MakeCase("gemm", F32, {13, 37}, "transA_transB_bias",
               Attrs().Int("transA", 1).Int("transB", 1).Float("alpha", 0.5f).Float("beta", 2),
               {Uniform(F32, {13, 37}), Uniform(F32, {29, 13}), Uniform(F32, {29})}, kProduct));
  c.push_back(MakeCase("gemm", F16, {37, 13}, "transB_col_bias", Attrs().Int("transB", 1),
                       {Uniform(F16, {37, 13}), Uniform(F16, {7, 13}), Uniform(F16, {37, 1})},
                       kProduct));
}

void AddFusedProducts(std::vector<OpCase> &c) {
  for (const char *act : {"none", "relu", "gelu", "gelu_tanh", "silu"})
    c.push_back(MakeCase(
        "linear", F32, {7, 13, 37}, std::string(act) + "_bias", Attrs().String("activation", act),
        {Uniform(F32, {7, 13, 37}), Uniform(F32, {37, 29}, -0.5, 0.5), Uniform(F32, {29})},
        kProduct));
  c.push_back(
      MakeCase("linear", F32, {1, 129}, "none_one_row", Attrs().String("activation", "none"),
               {Uniform(F32, {1, 129}), Uniform(F32, {129, 257}, -0.5, 0.5), Omitted()}, kProduct));
  c.push_back(
      MakeCase("linear", F32, {129, 257}, "gelu_large", Attrs().String("activation", "gelu"),
               {Uniform(F32, {129, 257}), Uniform(F32, {257, 131}, -0.2, 0.2), Uniform(F32, {131})},
               kProduct));
  for (DType t : {F16, BF16})
    c.push_back(MakeCase("linear", t, {13, 37}, "silu", Attrs().String("activation", "silu"),
                         {Uniform(t, {13, 37}), Uniform(t, {37, 29}, -0.5, 0.5), Uniform(t, {29})},
                         kProduct));
  for (const char *act : {"silu", "gelu", "gelu_tanh"})
    c.push_back(MakeCase("gated_mlp", F32, {7, 37}, act, Attrs().String("activation", act),
                         {Uniform(F32, {7, 37}), Uniform(F32, {37, 26}, -0.5, 0.5),
                          Uniform(F32, {13, 29}, -0.5, 0.5)},
                         kProduct));
  c.push_back(MakeCase("gated_mlp", F32, {1, 1, 129}, "silu_one_row",
                       Attrs().String("activation", "silu"),
                       {Uniform(F32, {1, 1, 129}), Uniform(F32, {129, 74}, -0.3, 0.3),
                        Uniform(F32, {37, 129}, -0.3, 0.3)},
                       kProduct));
  c.push_back(MakeCase("gated_mlp", BF16, {5, 37}, "silu", Attrs().String("activation", "silu"),
                       {Uniform(BF16, {5, 37}), Uniform(BF16, {37, 26}, -0.5, 0.5),
                        Uniform(BF16, {13, 29}, -0.5, 0.5)},
                       kProduct));
}

void AddRotary(std::vector<OpCase> &c) {
  // Tables as a model computes them; any values in [-1, 1] exercise the op.
  c.push_back(MakeCase("rotary", F32, {2, 5, 13, 38}, "half_full",
                       Attrs().Int("rotary_dim", 38).Int("interleaved", 0),
                       {Uniform(F32, {2, 5, 13, 38}), Uniform(F32, {1, 1, 13, 38}, -1, 1),
                        Uniform(F32, {1, 1, 13, 38}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase("rotary", F32, {2, 5, 13, 38}, "interleaved_partial",
                       Attrs().Int("rotary_dim", 24).Int("interleaved", 1),
                       {Uniform(F32, {2, 5, 13, 38}), Uniform(F32, {2, 1, 13, 24}, -1, 1),
                        Uniform(F32, {2, 1, 13, 24}, -1, 1)},
                       kPointwise));
  c.push_back(MakeCase(
      "rotary", F32, {7, 3, 22}, "half_partial_rank3",
      Attrs().Int("rotary_dim", 10).Int("interleaved", 0),
      {Uniform(F32, {7, 3, 22}), Uniform(F32, {7, 1, 10}, -1, 1), Uniform(F32, {7, 1, 10}, -1, 1)},
      kPointwise));
  c.push_back(MakeCase("rotary", F16, {1, 3, 7, 16}, "half_full",
                       Attrs().Int("rotary_dim", 16).Int("interleaved", 0),
                       {Uniform(F16, {1, 3, 7, 16}), Uniform(F16, {1, 1, 7, 16}, -1, 1),
                        Uniform(F16, {1, 1, 7, 16}, -1, 1)},
                       kPointwise));
}

} // namespace

void AddProductCases(std::vector<OpCase> &cases) {
  AddMatMul(cases);
  AddFusedProducts(cases);
  AddRotary(cases);
}

} // namespace kiln::oracle
