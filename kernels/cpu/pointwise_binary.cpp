#include "kernels/cpu/pointwise.h"
#include "kernels/wrap_arith.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <typename T> T SafeDiv(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1)
        return WrapSub<T>(0, a); // avoids MIN / -1 overflow
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

// Converts a double to T without undefined behaviour: truncates toward zero,
// saturates to T's range and maps NaN to 0.
template <typename T> T SaturateFromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v))
      return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo)
      return std::numeric_limits<T>::min();
    if (v >= hi)
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <typename T> T PowOf(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return std::pow(a, b);
  } else {
    return SaturateFromDouble<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
}

template <typename T> T MaxOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<T>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename T> T MinOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<T>::quiet_NaN();
  }
  return b < a ? b : a;
}

// The one loop every broadcasting binary kernel runs: rows from the layout,
// and within a row one of three tight loops depending on which side is
// broadcast, so the compiler vectorizes the common cases.
template <typename T, typename R, typename F>
void BinaryRows(const BroadcastLayout &layout, const T *a, const T *b, R *out, F f) {
  const int64_t n = layout.inner;
  const bool full_a = layout.inner_full[0];
  const bool full_b = layout.inner_full[1];
  ForEachRow(layout, [&](const int64_t *off, int64_t o) {
    const T *pa = a + off[0];
    const T *pb = b + off[1];
    R *po = out + o;
    if (full_a && full_b) {
      for (int64_t i = 0; i < n; ++i)
        po[i] = f(pa[i], pb[i]);
    } else if (full_a) {
      const T y = *pb;
      for (int64_t i = 0; i < n; ++i)
        po[i] = f(pa[i], y);
    } else if (full_b) {
      const T x = *pa;
      for (int64_t i = 0; i < n; ++i)
        po[i] = f(x, pb[i]);
    } else {
      const R v = f(*pa, *pb);
      for (int64_t i = 0; i < n; ++i)
        po[i] = v;
    }
  });
}

// Pow with a broadcast scalar exponent is almost always x^2, x^3 or x^0.5
// in transformer graphs (norms, GELU); those get exact-enough closed forms.
template <typename T>
bool PowScalarExponentFastPath(const BroadcastLayout &layout, const T *a, const T *b, T *out) {
  if constexpr (!std::is_floating_point_v<T>) {
    return false;
  } else {
    if (layout.inner_full[1] || !layout.inner_full[0] || layout.rows == 0)
      return false;
    // The exponent must be the same everywhere: a single-element b.
    for (int64_t s : layout.outer_strides[1])
      if (s != 0)
        return false;
    const T e = *b;
    if (e == T(2)) {
      BinaryRows(layout, a, b, out, [](T x, T) { return x * x; });
    } else if (e == T(3)) {
      BinaryRows(layout, a, b, out, [](T x, T) { return x * x * x; });
    } else if (e == T(0.5)) {
      BinaryRows(layout, a, b, out, [](T x, T) { return std::sqrt(x); });
    } else if (e == T(1)) {
      BinaryRows(layout, a, b, out, [](T x, T) { return x; });
    } else {
      return false;
    }
    return true;
  }
}

template <typename U>
void WhereTyped(const BroadcastLayout &layout, const uint8_t *cond, const U *x, const U *y,
                U *out) {
  const int64_t n = layout.inner;
  const bool fc = layout.inner_full[0], fx = layout.inner_full[1], fy = layout.inner_full[2];
  ForEachRow(layout, [&](const int64_t *off, int64_t o) {
    const uint8_t *pc = cond + off[0];
    const U *px = x + off[1];
    const U *py = y + off[2];
    U *po = out + o;
    if (fc && fx && fy) {
      for (int64_t i = 0; i < n; ++i)
        po[i] = pc[i] ? px[i] : py[i];
    } else if (fc && !fx && !fy) {
      const U vx = *px, vy = *py;
      for (int64_t i = 0; i < n; ++i)
        po[i] = pc[i] ? vx : vy;
    } else if (!fc && fx && fy) {
      const U *src = *pc ? px : py;
      std::memmove(po, src, static_cast<size_t>(n) * sizeof(U));
    } else {
      // Rare mixes (e.g. a broadcast mask against a full tensor and a scalar).
      for (int64_t i = 0; i < n; ++i)
        po[i] = pc[fc ? i : 0] ? px[fx ? i : 0] : py[fy ? i : 0];
    }
  });
}

} // namespace

template <typename T>
void Binary(BinaryOp op, const BroadcastLayout &layout, const T *a, const T *b, T *out) {
  switch (op) {
  case BinaryOp::kAdd:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return WrapAdd(x, y); });
  case BinaryOp::kSub:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return WrapSub(x, y); });
  case BinaryOp::kMul:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return WrapMul(x, y); });
  case BinaryOp::kDiv:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return SafeDiv(x, y); });
  case BinaryOp::kPow:
    if (PowScalarExponentFastPath(layout, a, b, out))
      return;
    return BinaryRows(layout, a, b, out, [](T x, T y) { return PowOf(x, y); });
  case BinaryOp::kMax:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return MaxOf(x, y); });
  case BinaryOp::kMin:
    return BinaryRows(layout, a, b, out, [](T x, T y) { return MinOf(x, y); });
  }
}

template <typename T>
void Compare(CompareOp op, const BroadcastLayout &layout, const T *a, const T *b, uint8_t *out) {
  switch (op) {
  case CompareOp::kEqual:
    return BinaryRows(layout, a, b, out, [](T x, T y) -> uint8_t { return x == y; });
  case CompareOp::kLess:
    return BinaryRows(layout, a, b, out, [](T x, T y) -> uint8_t { return x < y; });
  case CompareOp::kGreater:
    return BinaryRows(layout, a, b, out, [](T x, T y) -> uint8_t { return x > y; });
  case CompareOp::kLessOrEqual:
    return BinaryRows(layout, a, b, out, [](T x, T y) -> uint8_t { return x <= y; });
  case CompareOp::kGreaterOrEqual:
    return BinaryRows(layout, a, b, out, [](T x, T y) -> uint8_t { return x >= y; });
  }
}

void Logic(LogicOp op, const BroadcastLayout &layout, const uint8_t *a, const uint8_t *b,
           uint8_t *out) {
  using B = uint8_t;
  switch (op) {
  case LogicOp::kAnd:
    return BinaryRows(layout, a, b, out, [](B x, B y) -> B { return (x != 0) & (y != 0); });
  case LogicOp::kOr:
    return BinaryRows(layout, a, b, out, [](B x, B y) -> B { return (x != 0) | (y != 0); });
  case LogicOp::kXor:
    return BinaryRows(layout, a, b, out, [](B x, B y) -> B { return (x != 0) ^ (y != 0); });
  case LogicOp::kEqual:
    return BinaryRows(layout, a, b, out, [](B x, B y) -> B { return (x != 0) == (y != 0); });
  }
}

bool Where(size_t elem_size, const BroadcastLayout &layout, const uint8_t *cond, const void *x,
           const void *y, void *out) {
  switch (elem_size) {
  case 1:
    WhereTyped(layout, cond, static_cast<const uint8_t *>(x), static_cast<const uint8_t *>(y),
               static_cast<uint8_t *>(out));
    return true;
  case 2:
    WhereTyped(layout, cond, static_cast<const uint16_t *>(x), static_cast<const uint16_t *>(y),
               static_cast<uint16_t *>(out));
    return true;
  case 4:
    WhereTyped(layout, cond, static_cast<const uint32_t *>(x), static_cast<const uint32_t *>(y),
               static_cast<uint32_t *>(out));
    return true;
  case 8:
    WhereTyped(layout, cond, static_cast<const uint64_t *>(x), static_cast<const uint64_t *>(y),
               static_cast<uint64_t *>(out));
    return true;
  default:
    return false;
  }
}

#define KILN_INSTANTIATE_BINARY(T)                                                                 \
  template void Binary<T>(BinaryOp, const BroadcastLayout &, const T *, const T *, T *);           \
  template void Compare<T>(CompareOp, const BroadcastLayout &, const T *, const T *, uint8_t *);
KILN_INSTANTIATE_BINARY(float)
KILN_INSTANTIATE_BINARY(double)
KILN_INSTANTIATE_BINARY(int8_t)
KILN_INSTANTIATE_BINARY(uint8_t)
KILN_INSTANTIATE_BINARY(int32_t)
KILN_INSTANTIATE_BINARY(int64_t)
#undef KILN_INSTANTIATE_BINARY

} // namespace kiln::kernels
