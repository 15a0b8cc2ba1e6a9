// Helpers for the fused-op tests: tolerance checks against double-precision
// references and half-precision conversion of test tensors.
#pragma once

#include "kernels/cpu/pointwise_cast.h"
#include "test_util.h"

#include <cmath>
#include <string>
#include <vector>

namespace kiln::test {

// Each element within 1e-6 + 1e-5 * mag[i] of want[i], where mag bounds the
// size of the terms that made want[i] (|want| for pointwise results; sums of
// |terms| where float accumulation error scales with them). NaN must match.
inline void ExpectClose(const Tensor &got, const std::vector<double> &want,
                        const std::vector<double> &mag, const std::string &label) {
  ASSERT_EQ(got.dtype, DType::kF32) << label;
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << label;
  const float *g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << label << " element " << i << " should be NaN, got " << g[i];
      continue;
    }
    const double tol = 1e-6 + 1e-5 * mag[i];
    ASSERT_NEAR(g[i], want[i], tol) << label << " element " << i;
  }
}

// ExpectClose with mag = |want|, for results computed pointwise.
inline void ExpectClose(const Tensor &got, const std::vector<double> &want,
                        const std::string &label) {
  std::vector<double> mag(want.size());
  for (size_t i = 0; i < want.size(); ++i)
    mag[i] = std::fabs(want[i]);
  ExpectClose(got, want, mag, label);
}

// The f32 tensor rounded to f16 or bf16.
inline Tensor ToHalf(const Tensor &t, DType half) {
  Tensor h(half, t.shape);
  kernels::CastElements(kernels::ElemType::kF32, t.data<float>(),
                        half == DType::kF16 ? kernels::ElemType::kF16
                                            : kernels::ElemType::kBF16,
                        h.bytes.data(), t.numel());
  return h;
}

// A half tensor widened back to f32.
inline Tensor ToF32(const Tensor &h) {
  Tensor t(DType::kF32, h.shape);
  kernels::CastElements(h.dtype == DType::kF16 ? kernels::ElemType::kF16
                                               : kernels::ElemType::kBF16,
                        h.bytes.data(), kernels::ElemType::kF32, t.data<float>(), h.numel());
  return t;
}

inline double At(const Tensor &t, int64_t i) { return t.data<float>()[i]; }

// The fused ops' activations in double: none, relu, gelu (erf), gelu_tanh,
// silu.
inline double NaiveAct(const std::string &act, double v) {
  if (act == "relu")
    return v < 0 ? 0 : v;
  if (act == "gelu")
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  if (act == "gelu_tanh")
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  if (act == "silu")
    return v / (1 + std::exp(-v));
  return v;
}

// gated_mlp in double, (act(x Wg) * (x Wu)) Wd, for x [rows, k], with the
// weights read through wgu(i, j) ([k, 2f]: gate columns then up) and
// wd(j, c) ([f, n]). Fills want [rows, n] and mag, the sums of |terms|
// that bound the f32 kernels' rounding.
template <typename GateUp, typename Down>
void NaiveGatedMlp(const Tensor &x, int64_t rows, int64_t k, int64_t f, int64_t n,
                   const std::string &act, GateUp wgu, Down wd, std::vector<double> &want,
                   std::vector<double> &mag) {
  want.assign(static_cast<size_t>(rows * n), 0.0);
  mag.assign(want.size(), 0.0);
  std::vector<double> h(f), hmag(f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < f; ++j) {
      double g = 0, u = 0, gm = 0, um = 0;
      for (int64_t i = 0; i < k; ++i) {
        g += At(x, r * k + i) * wgu(i, j);
        u += At(x, r * k + i) * wgu(i, f + j);
        gm += std::fabs(At(x, r * k + i) * wgu(i, j));
        um += std::fabs(At(x, r * k + i) * wgu(i, f + j));
      }
      h[j] = NaiveAct(act, g) * u;
      hmag[j] = std::fabs(h[j]) + gm * um; // rounding of gate and up
    }
    for (int64_t c = 0; c < n; ++c) {
      double acc = 0, m = 0;
      for (int64_t j = 0; j < f; ++j) {
        acc += h[j] * wd(j, c);
        m += hmag[j] * std::fabs(wd(j, c));
      }
      want[r * n + c] = acc;
      mag[r * n + c] = m;
    }
  }
}

} // namespace kiln::test
