// CUDA kernels of the elementwise ops: unary math, Not, IsNaN, Clip, Cast
// (pointwise_unary.cu) and the broadcasting binary ops, comparisons, logic
// and Where (pointwise_binary.cu). Plain launchers over device pointers;
// each enqueues on `stream` and returns the launch error (cudaSuccess when
// there is nothing to do). f16 and bf16 compute in f32 and round once per
// result; integer arithmetic wraps, and integer division by zero gives 0,
// exactly as the CPU kernels (kernels/cpu/pointwise.h).
#pragma once

#include "kernels/cuda/elem_type.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// ---- Broadcasting -----------------------------------------------------------

// Up to three inputs broadcast (numpy rules, right-aligned) onto one output,
// with unit dims dropped and neighbouring dims that broadcast alike merged:
// the output is `rank` dims, INNERMOST FIRST, and each input's element
// stride along them (0 where it is broadcast).
struct Broadcast {
  static constexpr int kMaxRank = 8;
  static constexpr int kMaxInputs = 3;
  int rank = 0;
  int num_inputs = 0;
  int64_t numel = 0;
  // Every input has the output's shape: element i of each is element i.
  bool same_shape = true;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxInputs][kMaxRank] = {};
};

// False when an input does not broadcast to `out`, there are more than
// kMaxInputs inputs, or the merged rank exceeds kMaxRank.
bool MakeBroadcast(const std::vector<std::vector<int64_t>> &inputs, const std::vector<int64_t> &out,
                   Broadcast *b);

// ---- Unary --------------------------------------------------------------------

using kernels::UnaryOp; // kernels/op_kinds.h

// Float types take every op; integer types take kNeg, kAbs and kRelu.
bool UnaryDefined(UnaryOp op, ElemType t);
// y = op(x) over n elements of type t (y may be x).
cudaError_t Unary(UnaryOp op, ElemType t, const void *x, void *y, int64_t n, cudaStream_t stream);

// y = !x over n bools.
cudaError_t LogicalNot(const uint8_t *x, uint8_t *y, int64_t n, cudaStream_t stream);
// y = isnan(x) over n floats (f32, f16, bf16, f64).
cudaError_t IsNaN(ElemType t, const void *x, uint8_t *y, int64_t n, cudaStream_t stream);

// y = min(max(x, *lo), *hi) over n elements of a numeric type; lo and hi
// point to one element of that type in device memory, or are null for an
// absent bound (the type's extreme, +-inf for floats). NaN passes through.
cudaError_t Clip(ElemType t, const void *x, const void *lo, const void *hi, void *y, int64_t n,
                 cudaStream_t stream);

// ONNX Cast of n elements between any two types: float to integer
// truncates, saturates and maps NaN to 0; anything to bool is != 0; halves
// convert through f32 (f64 -> f16 rounds twice, as on the CPU).
cudaError_t Cast(ElemType from, const void *x, ElemType to, void *y, int64_t n,
                 cudaStream_t stream);

// ---- Binary over a Broadcast of (a, b) ---------------------------------------

using kernels::BinaryOp; // kernels/op_kinds.h, as CompareOp and LogicOp
using kernels::CompareOp;
using kernels::LogicOp;

// out = a op b, all of numeric type t. Max/Min propagate NaN. Integer Pow
// is pow over doubles, truncated and saturated to t (computed exactly).
cudaError_t Binary(BinaryOp op, ElemType t, const Broadcast &b, const void *a, const void *bv,
                   void *out, cudaStream_t stream);
// out = a op b as bools; NaN compares false (and unequal).
cudaError_t Compare(CompareOp op, ElemType t, const Broadcast &b, const void *a, const void *bv,
                    uint8_t *out, cudaStream_t stream);
cudaError_t Logic(LogicOp op, const Broadcast &b, const uint8_t *a, const uint8_t *bv, uint8_t *out,
                  cudaStream_t stream);
// out = cond ? x : y over a Broadcast of (cond, x, y), elements of
// elem_size bytes (1, 2, 4 or 8; cudaErrorInvalidValue otherwise).
cudaError_t Where(size_t elem_size, const Broadcast &b, const uint8_t *cond, const void *x,
                  const void *y, void *out, cudaStream_t stream);

} // namespace kiln::kernels::cuda
