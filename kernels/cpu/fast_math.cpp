#include "kernels/cpu/fast_math.h"

#include <cstring>

namespace kiln::kernels {
namespace {

// Four floats at once through GCC/Clang vector extensions: portable across
// x86 and Arm, and explicit, so the comparisons become masks and selects
// instead of branches.
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

F4 Splat(float v) { return F4{v, v, v, v}; }

// exp: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2 so n*hi is
// exact), e^r by its degree-7 Taylor polynomial (truncation < 1e-8
// relative), then scaled by 2^n in two halves so that results in the
// subnormal range need no special case.
inline __attribute__((always_inline)) F4 Exp4(F4 x) {
  const I4 nan = x != x;
  const I4 overflow = x > Splat(88.72283f);
  F4 xc = x < Splat(-104.0f) ? Splat(-104.0f) : x;
  xc = xc > Splat(88.72283f) ? Splat(88.72283f) : xc;
  xc = nan ? Splat(0.0f) : xc;
  // Round to nearest by adding and removing 1.5 * 2^23.
  const F4 n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  const F4 r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  F4 p = Splat(1.0f / 5040);
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I4 ni = __builtin_convertvector(n, I4); // in [-150, 128]
  const I4 n1 = ni / 2, n2 = ni - n1;           // each in [-75, 64]
  const F4 result = p * (F4)((n1 + 127) << 23) * (F4)((n2 + 127) << 23);
  const F4 with_inf = overflow ? Splat(__builtin_inff()) : result;
  return nan ? x : with_inf;
}

// tanh: an odd Taylor polynomial for |x| < 0.5, where 1 - 2/(e^2|x| + 1)
// would lose relative accuracy, and that exp form elsewhere (saturating to
// +-1). NaN takes the exp form, which keeps it NaN.
inline __attribute__((always_inline)) F4 Tanh4(F4 x) {
  const F4 ax = x < Splat(0.0f) ? -x : x;
  const F4 x2 = x * x;
  F4 p = Splat(6404582.0f / 10854718875.0f);
  p = p * x2 - 929569.0f / 638512875.0f;
  p = p * x2 + 21844.0f / 6081075.0f;
  p = p * x2 - 1382.0f / 155925.0f;
  p = p * x2 + 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  p = p * x2 + 1.0f;
  const F4 small = x * p;
  const F4 e = Exp4(2.0f * (ax > Splat(10.0f) ? Splat(10.0f) : ax));
  const F4 large = 1.0f - 2.0f / (e + 1.0f);
  const F4 signed_large = x < Splat(0.0f) ? -large : large;
  return ax < Splat(0.5f) ? small : signed_large;
}

template <F4 (*Fn)(F4)> void Apply(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    F4 v;
    std::memcpy(&v, x + i, sizeof(v));
    v = Fn(v);
    std::memcpy(y + i, &v, sizeof(v));
  }
  if (i < n) {
    // The tail goes through a zero-padded vector.
    F4 v = Splat(0.0f);
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(&v, x + i, bytes);
    v = Fn(v);
    std::memcpy(y + i, &v, bytes);
  }
}

} // namespace

void ExpF32(const float *x, float *y, int64_t n) { Apply<Exp4>(x, y, n); }
void TanhF32(const float *x, float *y, int64_t n) { Apply<Tanh4>(x, y, n); }
float FastExp(float x) { return Exp4(Splat(x))[0]; }
float FastTanh(float x) { return Tanh4(Splat(x))[0]; }

} // namespace kiln::kernels
