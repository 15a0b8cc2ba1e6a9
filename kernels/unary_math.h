// The scalar math of every unary op of kernels/unary_ops.def, for the host
// (kernels/cpu/pointwise_unary.cpp) and CUDA devices (kernels/cuda/pointwise_unary.cu)
// from the same expressions: UnaryFloat(op, v) and UnaryInt(op, v).
#pragma once

#include "kernels/host_device.h"
#include "kernels/op_kinds.h"
#include "kernels/wrap_arith.h"

#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace unary_math {

// The functions unary_ops.def's expressions may call. std's overloads take
// float as float; nvcc compiles them for the device.
using std::atan;
using std::ceil;
using std::cos;
using std::erf;
using std::exp;
using std::expm1;
using std::fabs;
using std::floor;
using std::log;
using std::log1p;
using std::round;
using std::sin;
using std::sqrt;
using std::tan;
using std::tanh;
using std::trunc;

template <typename C> KILN_HD bool IsNegative(C v) {
  if constexpr (std::is_signed_v<C>)
    return v < C(0);
  else
    return false;
}

template <UnaryOp kOp> struct Tag {};

#define KILN_UNARY(Id, name, float_math)                                                           \
  template <typename C> KILN_HD C Float(Tag<UnaryOp::k##Id>, C v) { return float_math; }
#define KILN_UNARY_INT(Id, name, float_math, int_math)                                             \
  template <typename C> KILN_HD C Float(Tag<UnaryOp::k##Id>, C v) { return float_math; }           \
  template <typename C> KILN_HD C Int(Tag<UnaryOp::k##Id>, C v) { return int_math; }
#include "kernels/unary_ops.def"

} // namespace unary_math

// op's math at v in float or double.
template <typename C> KILN_HD C UnaryFloat(UnaryOp op, C v) {
  switch (op) {
#define KILN_UNARY(Id, name, float_math)                                                           \
  case UnaryOp::k##Id:                                                                             \
    return unary_math::Float(unary_math::Tag<UnaryOp::k##Id>{}, v);
#include "kernels/unary_ops.def"
  }
  return v;
}

// op's math at an integer v; only for ops that UnaryOnIntegers accepts.
template <typename C> KILN_HD C UnaryInt(UnaryOp op, C v) {
  switch (op) {
#define KILN_UNARY(Id, name, float_math)
#define KILN_UNARY_INT(Id, name, float_math, int_math)                                             \
  case UnaryOp::k##Id:                                                                             \
    return unary_math::Int(unary_math::Tag<UnaryOp::k##Id>{}, v);
#include "kernels/unary_ops.def"
  default:
    return v;
  }
}

// Calls f(std::integral_constant<UnaryOp, op>{}): a host kernel's loop
// then inlines the one op's math (kernels/cpu/pointwise_unary.cpp).
template <typename F> void VisitUnary(UnaryOp op, F &&f) {
  switch (op) {
#define KILN_UNARY(Id, name, float_math)                                                           \
  case UnaryOp::k##Id:                                                                             \
    return f(std::integral_constant<UnaryOp, UnaryOp::k##Id>{});
#include "kernels/unary_ops.def"
  }
}

// The math of a compile-time op, for VisitUnary's callers.
template <UnaryOp kOp, typename C> KILN_HD C UnaryFloatOf(C v) {
  return unary_math::Float(unary_math::Tag<kOp>{}, v);
}
template <UnaryOp kOp, typename C> KILN_HD C UnaryIntOf(C v) {
  return unary_math::Int(unary_math::Tag<kOp>{}, v);
}

} // namespace kiln::kernels
