// CUDA kernels of the reductions (sum, mean, max, min over any set of dims)
// and of Softmax/LogSoftmax over one axis. Plain launchers over device
// pointers; each enqueues on `stream` and returns the launch error. Results
// match the CPU kernels' (kernels/cpu/reduce.h, reduce_softmax.h) rules: f16/bf16
// accumulate in f32, f32 in f32, f64 in f64; integer sums wrap and integer
// means truncate; Max/Min propagate NaN; an empty reduction gives the
// identity (NaN for a float mean).
#pragma once

#include "kernels/cuda/elem_type.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

using kernels::ReduceOp;

// How many dims the reduction kernels take, kept and reduced alike, after
// unit dims are dropped and neighbours of the same kind merged.
inline constexpr int kMaxReduceGroups = 8;

// False when `shape` with `reduce` (one flag per dim) needs more than
// kMaxReduceGroups kept or reduced groups.
bool ReduceShapeSupported(const std::vector<int64_t> &shape, const std::vector<bool> &reduce);

// y = op over the dims d of `shape` (x contiguous, row-major) with
// reduce[d] set; y's layout is `shape` with those dims removed. t is any
// numeric type (not bool).
cudaError_t Reduce(ReduceOp op, ElemType t, const void *x, const std::vector<int64_t> &shape,
                   const std::vector<bool> &reduce, void *y, cudaStream_t stream);

// Softmax (or, with `log`, LogSoftmax) of x viewed as [outer, len, inner]
// over the middle axis, max-subtracted, accumulated in f32 (f64 for f64).
// t is f32, f16, bf16 or f64. y may be x.
cudaError_t Softmax(ElemType t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                    bool log, cudaStream_t stream);

// CumSum of x viewed as [outer, len, inner] along the middle axis: a thread
// per line, summed in f32 for f16/bf16 (f64 for f64; integers wrap); t is
// any numeric type (not bool). y may not be x.
cudaError_t CumSum(ElemType t, const void *x, void *y, int64_t outer, int64_t len, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t stream);

} // namespace kiln::kernels::cuda
