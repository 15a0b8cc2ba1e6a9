// The CUDA kernels' scalar rules (kernels/cuda/numeric.cuh), run on the host,
// against the CPU kernels they must reproduce bit for bit: Cast between every
// pair of dtypes, integer Pow, integer division, wrapping arithmetic and
// Max/Min with NaN. The rules are host-device functions, so this needs no
// GPU; the op oracle runs the same rules inside the kernels on one.
#include "kernels/cpu/pointwise_broadcast.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cuda/numeric.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace kiln::kernels::cuda {
namespace {

using kernels::ElemType;

// Doubles that probe every conversion's edges: signs of zero, halves (ties
// to even), integer range limits, float and half overflow, subnormals,
// infinities and NaNs.
std::vector<double> ProbeValues() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0,         -0.0,        0.5,          -0.5,        1.5,    2.5,          -2.5,
          1.0 / 3,     127.5,       128.0,        -128.5,      -129.0, 255.5,        256.0,
          65504.0,     65519.0,     65520.0,      70000.0,     1e-8,   6e-8,         3e-5,
          2147483647., 2147483648., -2147483649., 4294967296., 9.3e18, -9.3e18,      1e20,
          3.5e38,      -3.5e38,     1e300,        inf,         -inf,   std::nan(""), -std::nan("")};
}

std::vector<int64_t> IntProbeValues() {
  return {0,
          1,
          -1,
          7,
          -7,
          127,
          -128,
          255,
          256,
          -32769,
          65535,
          (1 << 24) + 1,
          INT32_MAX,
          INT32_MIN,
          int64_t{1} << 40,
          (int64_t{1} << 53) + 1,
          INT64_MAX,
          INT64_MIN};
}

// Storage type and CPU kind of each ElemType, for the tables below.
template <typename T> struct Kind;
template <> struct Kind<float> { static constexpr ElemType value = ElemType::kF32; };
template <> struct Kind<__half> { static constexpr ElemType value = ElemType::kF16; };
template <> struct Kind<__nv_bfloat16> { static constexpr ElemType value = ElemType::kBF16; };
template <> struct Kind<double> { static constexpr ElemType value = ElemType::kF64; };
template <> struct Kind<int8_t> { static constexpr ElemType value = ElemType::kI8; };
template <> struct Kind<uint8_t> { static constexpr ElemType value = ElemType::kU8; };
template <> struct Kind<int32_t> { static constexpr ElemType value = ElemType::kI32; };
template <> struct Kind<int64_t> { static constexpr ElemType value = ElemType::kI64; };
template <> struct Kind<BoolByte> { static constexpr ElemType value = ElemType::kBool; };

// Source elements of type From: the probe doubles (through the CPU's own
// f64 -> From cast) and the integer probes wrapped into From.
template <typename From> std::vector<From> Sources() {
  const std::vector<double> d = ProbeValues();
  std::vector<From> out(d.size());
  EXPECT_TRUE(CastElements(ElemType::kF64, d.data(), Kind<From>::value, out.data(),
                           static_cast<int64_t>(d.size())));
  for (int64_t v : IntProbeValues()) {
    if constexpr (std::is_integral_v<From>) {
      out.push_back(static_cast<From>(v));
    } else if constexpr (std::is_same_v<From, BoolByte>) {
      out.push_back(BoolByte{static_cast<uint8_t>(v & 0xff)}); // any non-zero byte is true
    }
  }
  return out;
}

template <typename From, typename To> void CheckCast() {
  const std::vector<From> src = Sources<From>();
  const int64_t n = static_cast<int64_t>(src.size());
  std::vector<To> want(src.size()), got(src.size());
  ASSERT_TRUE(CastElements(Kind<From>::value, src.data(), Kind<To>::value, want.data(), n));
  for (int64_t i = 0; i < n; ++i)
    got[i] = Convert<To>(src[i]);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(To)), 0)
        << "cast " << static_cast<int>(Kind<From>::value) << " -> "
        << static_cast<int>(Kind<To>::value) << ", element " << i;
}

template <typename From> void CheckCastsFrom() {
  CheckCast<From, float>();
  CheckCast<From, __half>();
  CheckCast<From, __nv_bfloat16>();
  CheckCast<From, double>();
  CheckCast<From, int8_t>();
  CheckCast<From, uint8_t>();
  CheckCast<From, int32_t>();
  CheckCast<From, int64_t>();
  CheckCast<From, BoolByte>();
}

TEST(CudaScalarRules, CastMatchesCpuForEveryDtypePair) {
  CheckCastsFrom<float>();
  CheckCastsFrom<__half>();
  CheckCastsFrom<__nv_bfloat16>();
  CheckCastsFrom<double>();
  CheckCastsFrom<int8_t>();
  CheckCastsFrom<uint8_t>();
  CheckCastsFrom<int32_t>();
  CheckCastsFrom<int64_t>();
  CheckCastsFrom<BoolByte>();
}

// The CPU's elementwise result of `op` over every pair of (a, b).
template <typename T>
void CpuPairs(BinaryOp op, const std::vector<T> &a, const std::vector<T> &b, std::vector<T> *x,
              std::vector<T> *y, std::vector<T> *out) {
  x->clear();
  y->clear();
  for (T u : a)
    for (T v : b) {
      x->push_back(u);
      y->push_back(v);
    }
  const int64_t n = static_cast<int64_t>(x->size());
  BroadcastLayout layout;
  ASSERT_TRUE(MakeBroadcastLayout({{n}, {n}}, {n}, &layout));
  out->assign(x->size(), T{});
  Binary<T>(op, layout, x->data(), y->data(), out->data());
}

template <typename T> std::vector<T> IntOperands() {
  std::vector<T> v;
  for (int64_t i = -12; i <= 12; ++i)
    v.push_back(static_cast<T>(i));
  for (int64_t p : IntProbeValues())
    v.push_back(static_cast<T>(p));
  return v;
}

template <typename T> void CheckIntegerOps() {
  const std::vector<T> a = IntOperands<T>();
  std::vector<T> exponents;
  for (int64_t e = -4; e <= 70; ++e)
    exponents.push_back(static_cast<T>(e));
  std::vector<T> x, y, want;
  CpuPairs<T>(BinaryOp::kPow, a, exponents, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i) {
    // Beyond 2^53 pow() itself rounds, and which neighbour libm picks on a
    // tie is not a contract; saturation and every exact power are.
    const long double exact = std::pow(static_cast<long double>(x[i]), y[i]);
    if (std::fabs(exact) > 9007199254740992.0L && want[i] != std::numeric_limits<T>::max() &&
        want[i] != std::numeric_limits<T>::min())
      continue;
    ASSERT_EQ(IntPow(x[i], y[i]), want[i]) << +x[i] << " ^ " << +y[i];
  }
  CpuPairs<T>(BinaryOp::kDiv, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(SafeDiv(x[i], y[i]), want[i]) << +x[i] << " / " << +y[i];
  CpuPairs<T>(BinaryOp::kAdd, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(WrapAdd(x[i], y[i]), want[i]) << +x[i] << " + " << +y[i];
  CpuPairs<T>(BinaryOp::kSub, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(WrapSub(x[i], y[i]), want[i]) << +x[i] << " - " << +y[i];
  CpuPairs<T>(BinaryOp::kMul, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(WrapMul(x[i], y[i]), want[i]) << +x[i] << " * " << +y[i];
}

TEST(CudaScalarRules, IntegerPowDivAndWrappingMatchCpu) {
  CheckIntegerOps<int8_t>();
  CheckIntegerOps<uint8_t>();
  CheckIntegerOps<int32_t>();
  CheckIntegerOps<int64_t>();
}

template <typename T> void CheckFloatOps() {
  std::vector<T> a;
  for (double d : ProbeValues())
    a.push_back(static_cast<T>(d));
  std::vector<T> x, y, want;
  auto same = [](T g, T w) { return (std::isnan(g) && std::isnan(w)) || g == w; };
  CpuPairs<T>(BinaryOp::kMax, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(same(MaxOf(x[i], y[i]), want[i])) << "max(" << x[i] << ", " << y[i] << ")";
  CpuPairs<T>(BinaryOp::kMin, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(same(MinOf(x[i], y[i]), want[i])) << "min(" << x[i] << ", " << y[i] << ")";
  CpuPairs<T>(BinaryOp::kDiv, a, a, &x, &y, &want);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_TRUE(same(SafeDiv(x[i], y[i]), want[i])) << x[i] << " / " << y[i];
}

TEST(CudaScalarRules, FloatMaxMinDivMatchCpu) {
  CheckFloatOps<float>();
  CheckFloatOps<double>();
}

// The exponents norms and GELU use take closed forms on both sides when the
// exponent is one broadcast value.
TEST(CudaScalarRules, PowClosedFormsMatchCpuScalarExponent) {
  std::vector<float> base;
  for (double d : ProbeValues())
    base.push_back(static_cast<float>(d));
  const int64_t n = static_cast<int64_t>(base.size());
  BroadcastLayout layout;
  ASSERT_TRUE(MakeBroadcastLayout({{n}, {1}}, {n}, &layout));
  for (float e : {2.0f, 3.0f, 0.5f, 1.0f}) {
    std::vector<float> want(base.size());
    Binary<float>(BinaryOp::kPow, layout, base.data(), &e, want.data());
    for (int64_t i = 0; i < n; ++i) {
      const float got = PowFloat(base[i], e);
      EXPECT_TRUE((std::isnan(got) && std::isnan(want[i])) || got == want[i])
          << base[i] << " ^ " << e << ": got " << got << ", want " << want[i];
    }
  }
}

} // namespace
} // namespace kiln::kernels::cuda
