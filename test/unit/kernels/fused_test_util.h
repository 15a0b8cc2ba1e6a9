// Helpers for the fused-op tests: tolerance checks against double-precision
// references and half-precision conversion of test tensors.
#pragma once

#include "kernels/cpu/cast.h"
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
  kernels::CastElements(kernels::ScalarKind::kF32, t.data<float>(),
                        half == DType::kF16 ? kernels::ScalarKind::kF16
                                            : kernels::ScalarKind::kBF16,
                        h.bytes.data(), t.numel());
  return h;
}

// A half tensor widened back to f32.
inline Tensor ToF32(const Tensor &h) {
  Tensor t(DType::kF32, h.shape);
  kernels::CastElements(h.dtype == DType::kF16 ? kernels::ScalarKind::kF16
                                               : kernels::ScalarKind::kBF16,
                        h.bytes.data(), kernels::ScalarKind::kF32, t.data<float>(), h.numel());
  return t;
}

inline double At(const Tensor &t, int64_t i) { return t.data<float>()[i]; }

} // namespace kiln::test
