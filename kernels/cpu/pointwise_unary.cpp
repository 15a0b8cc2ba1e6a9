// Unary math (kernels/unary_ops.def), logical Not, IsNaN and Clip (declared
// in elementwise.h).
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/unary_math.h"

#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <typename T, typename F> void Map(const T *x, T *out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(x[i]);
}

// The float math of kernels/unary_ops.def, one loop per op, with the
// vectorized f32 forms of exp, tanh and sigmoid (fast_math.h, within 3 ulp).
template <typename T> void UnaryFloat(UnaryOp op, const T *x, T *out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
    case UnaryOp::kExp:
      return ExpF32(x, out, n);
    case UnaryOp::kTanh:
      return TanhF32(x, out, n);
    case UnaryOp::kSigmoid:
      // exp(-v) overflows to inf for very negative v, giving exactly 0.
      Map(x, out, n, [](T v) { return -v; });
      ExpF32(out, out, n);
      return Map(out, out, n, [](T e) { return T(1) / (T(1) + e); });
    default:
      break;
    }
  }
  VisitUnary(op, [&](auto k) {
    constexpr UnaryOp kOp = decltype(k)::value;
    Map(x, out, n, [](T v) { return UnaryFloatOf<kOp>(v); });
  });
}

} // namespace

template <typename T> bool Unary(UnaryOp op, const T *x, T *out, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    UnaryFloat(op, x, out, n);
  } else {
    if (!UnaryOnIntegers(op))
      return false;
    VisitUnary(op, [&](auto k) {
      constexpr UnaryOp kOp = decltype(k)::value;
      if constexpr (UnaryOnIntegers(kOp))
        Map(x, out, n, [](T v) { return UnaryIntOf<kOp>(v); });
    });
  }
  return true;
}

void LogicalNot(const uint8_t *x, uint8_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] == 0;
}

template <typename T> void IsNaN(const T *x, uint8_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::isnan(x[i]);
}

void IsNaN16(const uint16_t *x, bool bfloat16, uint8_t *out, int64_t n) {
  // NaN: exponent all ones and a non-zero mantissa, i.e. the magnitude bits
  // exceed those of infinity.
  const uint16_t inf = bfloat16 ? 0x7f80 : 0x7c00;
  for (int64_t i = 0; i < n; ++i)
    out[i] = (x[i] & 0x7fff) > inf;
}

template <typename T> void Clip(const T *x, T lo, T hi, T *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i] < lo ? lo : x[i];
    out[i] = v > hi ? hi : v;
  }
}

#define KILN_INSTANTIATE_UNARY(T)                                                                  \
  template bool Unary<T>(UnaryOp, const T *, T *, int64_t);                                        \
  template void Clip<T>(const T *, T, T, T *, int64_t);
KILN_INSTANTIATE_UNARY(float)
KILN_INSTANTIATE_UNARY(double)
KILN_INSTANTIATE_UNARY(int8_t)
KILN_INSTANTIATE_UNARY(uint8_t)
KILN_INSTANTIATE_UNARY(int32_t)
KILN_INSTANTIATE_UNARY(int64_t)
#undef KILN_INSTANTIATE_UNARY
template void IsNaN<float>(const float *, uint8_t *, int64_t);
template void IsNaN<double>(const double *, uint8_t *, int64_t);

} // namespace kiln::kernels
