// Cases of the matrix products (matmul, gemm, linear, gated_mlp, and their
// int8 forms linear_q8 and gated_mlp_q8) and rotary.
#include "op_case.h"

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, F64 = DType::kF64;

// Sums of K products in f32, checked at the 1e-5 relative bound:
// the accumulation error grows like sqrt(K) eps, under 1e-6 of the largest
// result even at K = 4096 (and f32 GEMMs on the device never use TF32).
// Half results get the oracle's rounding floors (HalfFloor).
constexpr Tolerance kProduct = {1e-10, 1e-5};

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

// Shapes a device GEMM library treats specially: decode steps (M = 1), K
// and N not multiples of 8 (half operands lose 16-byte alignment), long
// sums (K = 4096, an 8B model's hidden size), every batching scheme, and
// empty sums (K = 0), in every float type the op takes.
void AddDeviceMatMul(std::vector<OpCase> &c) {
  for (DType t : {F32, F16, BF16}) {
    c.push_back(MakeCase("matmul", t, {1, 77}, "decode", {},
                         {Uniform(t, {1, 77}), Uniform(t, {77, 259})}, kProduct));
    c.push_back(MakeCase("matmul", t, {19, 4096}, "long_k", {},
                         {Uniform(t, {19, 4096}), Uniform(t, {4096, 67})}, kProduct));
    c.push_back(MakeCase("matmul", t, {2, 3, 5, 7}, "same_batch", {},
                         {Uniform(t, {2, 3, 5, 7}), Uniform(t, {2, 3, 7, 9})}, kProduct));
  }
  c.push_back(MakeCase("matmul", F64, {13, 37}, "", {},
                       {Uniform(F64, {13, 37}), Uniform(F64, {37, 11})}, kProduct));
  // B batched, A shared by every batch entry.
  c.push_back(MakeCase("matmul", F32, {13, 37}, "shared_a", {},
                       {Uniform(F32, {13, 37}), Uniform(F32, {3, 37, 11})}, kProduct));
  // Batch dims agree on a trailing run ([3]) and broadcast before it.
  c.push_back(MakeCase("matmul", F32, {2, 3, 5, 7}, "partial_bcast", {},
                       {Uniform(F32, {2, 3, 5, 7}), Uniform(F32, {1, 3, 7, 4})}, kProduct));
  c.push_back(MakeCase("matmul", F32, {5, 0}, "k0", {},
                       {Uniform(F32, {5, 0}), Uniform(F32, {0, 7})}, kProduct));

  // One row of C with beta = 1 is a bias; alpha must not scale it.
  for (DType t : {F32, BF16})
    c.push_back(MakeCase(
        "gemm", t, {1, 77}, "transB_bias_row", Attrs().Int("transB", 1).Float("alpha", 0.5f),
        {Uniform(t, {1, 77}), Uniform(t, {259, 77}), Uniform(t, {259})}, kProduct));
  c.push_back(
      MakeCase("gemm", F64, {37, 13}, "transA_full_c", Attrs().Int("transA", 1).Float("beta", 0.5f),
               {Uniform(F64, {37, 13}), Uniform(F64, {37, 11}), Uniform(F64, {13, 11})}, kProduct));
  c.push_back(MakeCase("gemm", F32, {5, 0}, "k0_scaled_c", Attrs().Float("beta", 2),
                       {Uniform(F32, {5, 0}), Uniform(F32, {0, 7}), Uniform(F32, {1, 7})},
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

// moe: a batch of rows over 8 experts, top 2 renormalized (Mixtral,
// Qwen3-MoE); top 1 unnormalized with GeGLU experts over [B, S, H] rows;
// one row (decode) over 16 experts, top 4; bf16.
OpCase MoeCase(DType t, Shape x, const char *variant, int64_t experts, int64_t ffn, int64_t top_k,
               bool normalize, const char *act) {
  const int64_t h = x.back();
  return MakeCase("moe", t, x, variant,
                  Attrs().Int("top_k", top_k).Int("normalize", normalize ? 1 : 0).String(
                      "activation", act),
                  {Uniform(t, x), Uniform(t, {h, experts}, -0.5, 0.5),
                   Uniform(t, {experts, h, 2 * ffn}, -0.3, 0.3),
                   Uniform(t, {experts, ffn, h}, -0.3, 0.3)},
                  kProduct);
}

void AddMoe(std::vector<OpCase> &c) {
  c.push_back(MoeCase(F32, {13, 64}, "e8_top2_norm", 8, 32, 2, true, "silu"));
  c.push_back(MoeCase(F32, {2, 5, 48}, "e4_top1_gelu_tanh", 4, 24, 1, false, "gelu_tanh"));
  c.push_back(MoeCase(F32, {1, 64}, "e16_top4_one_row", 16, 16, 4, true, "silu"));
  c.push_back(MoeCase(BF16, {9, 32}, "e8_top2_norm", 8, 16, 2, true, "silu"));
  // The device's grouped products: experts with more rows than one tile
  // (tensor cores), half widths that are not multiples of 8 (its FMA path),
  // and a decode row whose down product is split over blocks.
  c.push_back(MoeCase(F16, {300, 64}, "e8_top2_many_tiles", 8, 48, 2, true, "silu"));
  c.push_back(MoeCase(BF16, {7, 36}, "e6_top3_odd_width", 6, 20, 3, false, "gelu"));
  c.push_back(MoeCase(BF16, {1, 64}, "e8_top2_split_down", 8, 512, 2, true, "silu"));
}

// The int8 projections: full-range int8 weights with positive per-column
// scales; one row (decode), a few, and a block past the packed kernel's
// 64-row switch, with and without a bias.
void AddInt8Products(std::vector<OpCase> &c) {
  constexpr DType I8 = DType::kI8;
  for (const char *act : {"none", "silu"})
    c.push_back(MakeCase("linear_q8", F32, {7, 37}, std::string(act) + "_bias",
                         Attrs().String("activation", act),
                         {Uniform(F32, {7, 37}), Uniform(I8, {37, 29}, -127, 127),
                          Uniform(F32, {29}, 0.001, 0.01), Uniform(F32, {29})},
                         kProduct));
  c.push_back(MakeCase("linear_q8", F32, {1, 129}, "none_one_row",
                       Attrs().String("activation", "none"),
                       {Uniform(F32, {1, 129}), Uniform(I8, {129, 257}, -127, 127),
                        Uniform(F32, {257}, 0.001, 0.01), Omitted()},
                       kProduct));
  c.push_back(MakeCase("linear_q8", F32, {70, 257}, "gelu_many_rows",
                       Attrs().String("activation", "gelu"),
                       {Uniform(F32, {70, 257}), Uniform(I8, {257, 131}, -127, 127),
                        Uniform(F32, {131}, 0.001, 0.005), Uniform(F32, {131})},
                       kProduct));
  // int8 activations: the reference quantizes the rows in double, which can
  // round a tie the other way than the kernel's f32: a looser bound.
  constexpr Tolerance kInt8Rows = {1e-8, 2e-3};
  for (int64_t rows : {int64_t{1}, int64_t{70}})
    c.push_back(MakeCase("linear_q8", F32, {rows, 257}, "int8_activations",
                         Attrs().String("activation", "none").String("activations", "int8"),
                         {Uniform(F32, {rows, 257}), Uniform(I8, {257, 131}, -127, 127),
                          Uniform(F32, {131}, 0.001, 0.005), Uniform(F32, {131})},
                         kInt8Rows));
  c.push_back(MakeCase("gated_mlp_q8", F32, {9, 37}, "silu_int8_activations",
                       Attrs().String("activation", "silu").String("activations", "int8"),
                       {Uniform(F32, {9, 37}), Uniform(I8, {37, 58}, -127, 127),
                        Uniform(F32, {58}, 0.001, 0.005), Uniform(I8, {29, 31}, -127, 127),
                        Uniform(F32, {31}, 0.001, 0.01)},
                       kInt8Rows));
  for (const Shape &x : {Shape{1, 1, 129}, Shape{9, 37}})
    c.push_back(MakeCase("gated_mlp_q8", F32, x, "silu", Attrs().String("activation", "silu"),
                         {Uniform(F32, x), Uniform(I8, {x.back(), 58}, -127, 127),
                          Uniform(F32, {58}, 0.001, 0.005), Uniform(I8, {29, 31}, -127, 127),
                          Uniform(F32, {31}, 0.001, 0.01)},
                         kProduct));
}

// The fused products' device paths: each activation with and without a
// bias in half precision (cuBLASLt epilogues or the activation kernel after
// the GEMM), decode steps with long sums, and empty sums.
void AddDeviceFusedProducts(std::vector<OpCase> &c) {
  const char *acts[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};
  for (DType t : {F16, BF16})
    for (const char *act : acts) {
      c.push_back(MakeCase(
          "linear", t, {3, 77}, std::string(act) + "_bias", Attrs().String("activation", act),
          {Uniform(t, {3, 77}), Uniform(t, {77, 259}, -0.5, 0.5), Uniform(t, {259})}, kProduct));
      c.push_back(MakeCase("linear", t, {1, 77}, act, Attrs().String("activation", act),
                           {Uniform(t, {1, 77}), Uniform(t, {77, 67}, -0.5, 0.5), Omitted()},
                           kProduct));
    }
  for (DType t : {F32, BF16}) {
    c.push_back(MakeCase(
        "linear", t, {1, 4096}, "gelu_tanh_long_k", Attrs().String("activation", "gelu_tanh"),
        {Uniform(t, {1, 4096}), Uniform(t, {4096, 259}, -0.1, 0.1), Uniform(t, {259})}, kProduct));
    c.push_back(MakeCase("gated_mlp", t, {1, 4096}, "silu_long_k",
                         Attrs().String("activation", "silu"),
                         {Uniform(t, {1, 4096}), Uniform(t, {4096, 258}, -0.1, 0.1),
                          Uniform(t, {129, 67}, -0.5, 0.5)},
                         kProduct));
  }
  for (const char *act : {"gelu", "gelu_tanh"})
    c.push_back(MakeCase("gated_mlp", F16, {5, 37}, act, Attrs().String("activation", act),
                         {Uniform(F16, {5, 37}), Uniform(F16, {37, 26}, -0.5, 0.5),
                          Uniform(F16, {13, 29}, -0.5, 0.5)},
                         kProduct));
  c.push_back(MakeCase("linear", F32, {3, 0}, "relu_bias_k0", Attrs().String("activation", "relu"),
                       {Uniform(F32, {3, 0}), Uniform(F32, {0, 5}), Uniform(F32, {5})}, kProduct));
  c.push_back(MakeCase("gated_mlp", F32, {3, 0}, "silu_k0", Attrs().String("activation", "silu"),
                       {Uniform(F32, {3, 0}), Uniform(F32, {0, 8}), Uniform(F32, {4, 5})},
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
  AddDeviceMatMul(cases);
  AddFusedProducts(cases);
  AddMoe(cases);
  AddDeviceFusedProducts(cases);
  AddInt8Products(cases);
  AddRotary(cases);
}

} // namespace kiln::oracle
