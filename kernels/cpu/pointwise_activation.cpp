#include "kernels/cpu/pointwise_activation.h"

#include "kernels/cpu/fast_math.h"

#include <algorithm>
#include <cmath>

namespace kiln::kernels {
namespace {

// Activations that need exp/tanh work on stack chunks, so the vectorized
// fast_math calls run over whole arrays without any heap scratch.
constexpr int64_t kChunk = 256;

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;

// erfc(z) for z >= 0 is t * exp(-z^2 + P(t)) with t = 1 / (1 + z/2), where
// P is smooth on t in (0, 1]. These coefficients (highest power first) were
// fitted for this kernel with mpmath.chebyfit to log(erfc(z)) + z^2 - log(t)
// over z in [0, 10]; the fit error is 5e-8, and erfc underflows beyond.
constexpr float kErfcPoly[] = {0.14804606f,   -0.69753659f,  1.1953276f,   -0.74646991f,
                               -0.039866317f, -0.019508004f, 0.041395966f, 0.38528362f,
                               0.99878246f,   -1.2654549f};

// y = x * Phi(x) = gelu(x) with the exact (erf) form for n <= kChunk. Phi
// comes from erfc(|x|/sqrt 2), so it keeps its relative accuracy in the
// negative tail (1 + erf(x) would cancel), and exp is the vectorized one.
void GeluErfChunk(const float *x, float *y, int64_t n) {
  float t[kChunk], e[kChunk];
  for (int64_t i = 0; i < n; ++i) {
    const float z = std::fabs(x[i]) * kInvSqrt2;
    const float ti = 1.0f / (1.0f + 0.5f * z);
    float p = kErfcPoly[0];
    for (size_t c = 1; c < sizeof(kErfcPoly) / sizeof(kErfcPoly[0]); ++c)
      p = p * ti + kErfcPoly[c];
    t[i] = ti;
    e[i] = p - z * z;
  }
  ExpF32(e, e, n);
  for (int64_t i = 0; i < n; ++i) {
    // Phi(x) = 1 - erfc/2 for x >= 0, erfc/2 below, blended through a 0/1
    // factor: gcc keeps a float select as a branch and would not vectorize.
    const float neg = 0.5f * t[i] * e[i];
    const float positive = x[i] >= 0.0f ? 1.0f : 0.0f;
    y[i] = x[i] * (neg + positive * (1.0f - 2.0f * neg));
  }
}

// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for n <= kChunk.
void GeluTanhChunk(const float *x, float *y, int64_t n) {
  float t[kChunk];
  for (int64_t i = 0; i < n; ++i)
    t[i] = kSqrt2OverPi * (x[i] + kGeluCubic * x[i] * x[i] * x[i]);
  TanhF32(t, t, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = 0.5f * x[i] * (1.0f + t[i]);
}

// y = x * sigmoid(x) = x / (1 + exp(-x)) for n <= kChunk; exp(-x) = inf for
// very negative x gives -0, as the unfused x * Sigmoid(x) does.
void SiluChunk(const float *x, float *y, int64_t n) {
  float e[kChunk];
  for (int64_t i = 0; i < n; ++i)
    e[i] = -x[i];
  ExpF32(e, e, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] / (1.0f + e[i]);
}

// Applies a chunk function over the whole array.
template <typename F> void Chunked(const float *x, float *y, int64_t n, F chunk) {
  for (int64_t i = 0; i < n; i += kChunk)
    chunk(x + i, y + i, std::min(kChunk, n - i));
}

} // namespace

void Activate(Activation act, const float *x, float *y, int64_t n) {
  switch (act) {
  case Activation::kNone:
    if (x != y)
      std::copy(x, x + n, y);
    return;
  case Activation::kRelu:
    // A compare, not max(), so NaN passes through.
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] < 0.0f ? 0.0f : x[i];
    return;
  case Activation::kGelu:
    Chunked(x, y, n, GeluErfChunk);
    return;
  case Activation::kGeluTanh:
    Chunked(x, y, n, GeluTanhChunk);
    return;
  case Activation::kSilu:
    Chunked(x, y, n, SiluChunk);
    return;
  }
}

void GatedActivation(Activation act, const float *gate, const float *up, float *out, int64_t n) {
  float a[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    Activate(act, gate + i, a, m);
    for (int64_t j = 0; j < m; ++j)
      out[i + j] = a[j] * up[i + j];
  }
}

} // namespace kiln::kernels
