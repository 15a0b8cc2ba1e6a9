// Elementwise kernels: binary arithmetic, comparisons and logic over a
// BroadcastLayout, ternary Where, unary math and Clip.
//
// Types: T is one of float, double, int8_t, uint8_t, int32_t, int64_t unless
// a function says otherwise. Booleans are one byte (uint8_t); any non-zero
// input byte is true and outputs are always 0 or 1. Integer arithmetic wraps
// and integer division by zero yields 0, so no input can trigger undefined
// behaviour.
#pragma once

#include "kernels/cpu/pointwise_broadcast.h"
#include "kernels/op_kinds.h"

#include <cstddef>
#include <cstdint>

namespace kiln::kernels {

// BinaryOp, CompareOp, LogicOp and UnaryOp: kernels/op_kinds.h.

// out = a <op> b; layout has two inputs (a, b). Max and Min propagate NaN.
template <typename T>
void Binary(BinaryOp op, const BroadcastLayout &layout, const T *a, const T *b, T *out);

// out = a <op> b as booleans; NaN compares false (and unequal).
template <typename T>
void Compare(CompareOp op, const BroadcastLayout &layout, const T *a, const T *b, uint8_t *out);

void Logic(LogicOp op, const BroadcastLayout &layout, const uint8_t *a, const uint8_t *b,
           uint8_t *out);

// out = cond ? x : y over elements of `elem_size` bytes (1, 2, 4 or 8);
// layout has three inputs (cond, x, y). False for another element size.
bool Where(size_t elem_size, const BroadcastLayout &layout, const uint8_t *cond, const void *x,
           const void *y, void *out);

// Float ops take float or double. kNeg, kAbs and kRelu also take the integer
// types. Returns false when `op` is not defined for T.
template <typename T> bool Unary(UnaryOp op, const T *x, T *out, int64_t n);

void LogicalNot(const uint8_t *x, uint8_t *out, int64_t n);

// out[i] = isnan(x[i]) for float or double.
template <typename T> void IsNaN(const T *x, uint8_t *out, int64_t n);
// The same on IEEE half (bfloat16 false) or bfloat16 bit patterns.
void IsNaN16(const uint16_t *x, bool bfloat16, uint8_t *out, int64_t n);

// out = min(max(x, lo), hi); NaN inputs pass through.
template <typename T> void Clip(const T *x, T lo, T hi, T *out, int64_t n);

} // namespace kiln::kernels
