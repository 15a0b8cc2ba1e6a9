// Unary math, logical Not and Clip (declared in elementwise.h).
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast_math.h"

#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <typename T, typename F> void Map(const T *x, T *out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(x[i]);
}

template <typename T> bool UnaryInteger(UnaryOp op, const T *x, T *out, int64_t n) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
  case UnaryOp::kNeg:
    // Through unsigned so that -MIN wraps instead of overflowing.
    Map(x, out, n, [](T v) { return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(v))); });
    return true;
  case UnaryOp::kAbs:
    if constexpr (std::is_signed_v<T>) {
      Map(x, out, n,
          [](T v) { return v < 0 ? static_cast<T>(static_cast<U>(U{0} - static_cast<U>(v))) : v; });
    } else {
      Map(x, out, n, [](T v) { return v; });
    }
    return true;
  case UnaryOp::kRelu:
    Map(x, out, n, [](T v) { return v < 0 ? T{0} : v; });
    return true;
  default:
    return false;
  }
}

template <typename T> bool UnaryFloat(UnaryOp op, const T *x, T *out, int64_t n) {
  switch (op) {
  case UnaryOp::kSqrt:
    Map(x, out, n, [](T v) { return std::sqrt(v); });
    return true;
  case UnaryOp::kReciprocal:
    Map(x, out, n, [](T v) { return T(1) / v; });
    return true;
  case UnaryOp::kNeg:
    Map(x, out, n, [](T v) { return -v; });
    return true;
  case UnaryOp::kExp:
    if constexpr (std::is_same_v<T, float>) {
      ExpF32(x, out, n);
    } else {
      Map(x, out, n, [](T v) { return std::exp(v); });
    }
    return true;
  case UnaryOp::kLog:
    Map(x, out, n, [](T v) { return std::log(v); });
    return true;
  case UnaryOp::kErf:
    Map(x, out, n, [](T v) { return std::erf(v); });
    return true;
  case UnaryOp::kTanh:
    if constexpr (std::is_same_v<T, float>) {
      TanhF32(x, out, n);
    } else {
      Map(x, out, n, [](T v) { return std::tanh(v); });
    }
    return true;
  case UnaryOp::kSigmoid:
    // exp(-v) overflows to inf for very negative v, giving exactly 0.
    if constexpr (std::is_same_v<T, float>) {
      Map(x, out, n, [](T v) { return -v; });
      ExpF32(out, out, n);
      Map(out, out, n, [](T e) { return T(1) / (T(1) + e); });
    } else {
      Map(x, out, n, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
    }
    return true;
  case UnaryOp::kRelu:
    // Written as a compare so NaN passes through like ONNX Runtime.
    Map(x, out, n, [](T v) { return v < T(0) ? T(0) : v; });
    return true;
  case UnaryOp::kAbs:
    Map(x, out, n, [](T v) { return std::fabs(v); });
    return true;
  case UnaryOp::kFloor:
    Map(x, out, n, [](T v) { return std::floor(v); });
    return true;
  case UnaryOp::kCeil:
    Map(x, out, n, [](T v) { return std::ceil(v); });
    return true;
  case UnaryOp::kSin:
    Map(x, out, n, [](T v) { return std::sin(v); });
    return true;
  case UnaryOp::kCos:
    Map(x, out, n, [](T v) { return std::cos(v); });
    return true;
  }
  return false;
}

} // namespace

template <typename T> bool Unary(UnaryOp op, const T *x, T *out, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    return UnaryFloat(op, x, out, n);
  } else {
    return UnaryInteger(op, x, out, n);
  }
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
