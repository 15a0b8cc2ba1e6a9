// Vectorized float exp and tanh (glibc's expf/tanhf are scalar calls, and
// gcc will not vectorize a branch-free rewrite of them under the default
// -ftrapping-math). Both stay within ~2 ulp of the correctly rounded result;
// tests compare them against double precision.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// y[i] = exp(x[i]); NaN stays NaN, overflow gives inf, underflow goes
// through the subnormals to 0. x and y may be the same array.
void ExpF32(const float *x, float *y, int64_t n);

// y[i] = tanh(x[i]); x and y may be the same array.
void TanhF32(const float *x, float *y, int64_t n);

// Single-value forms of the same functions.
float FastExp(float x);
float FastTanh(float x);

} // namespace kiln::kernels
