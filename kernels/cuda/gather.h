// Device kernels that address a tensor with index values: Gather, GatherND
// and ScatterND. Indices count from the end of their dim when negative.
//
// Index values live in device memory, and checking them on the host would
// cost a round trip per op, so the kernels check them where they read them:
// an index outside [-dim, dim) is reported in an IndexError record (the
// first reporter wins) and its slice is not read: Gather and GatherND write
// zeros there, ScatterND skips the tuple. The host reads the record after a
// synchronize (backends/cuda/index_errors.h). Launchers enqueue on `stream`
// and return the launch's error; none synchronizes or allocates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kiln::kernels::cuda {

// The index ops, as an IndexError names them.
enum class IndexOp : int32_t { kNone = 0, kGather = 1, kGatherND = 2, kScatterND = 3 };

// In device memory, zeroed while clear.
struct IndexError {
  int32_t op = 0;       // IndexOp; 0 while no error is recorded
  int32_t dim = 0;      // the data dim the index addresses
  int64_t position = 0; // flat position in the indices operand
  int64_t value = 0;    // the index value
  int64_t dim_size = 0; // the size of that dim
};

// The most index components (GatherND / ScatterND's last indices dim).
inline constexpr int kMaxIndexDims = 16;

// out[o, j, :] = data[o, idx[j], :] for o < outer, j < num_idx, rows of
// `row_bytes`. idx is int32 (idx_i32) or int64. `axis` only names the dim in
// an error.
cudaError_t Gather(const void *data, int64_t outer, int64_t axis_dim, int64_t row_bytes,
                   const void *idx, bool idx_i32, int64_t num_idx, int axis, void *out,
                   IndexError *error, cudaStream_t stream);

// data is viewed as [batch, dims[0], ..., dims[k-1], row], idx (int64) as
// [batch, n, k] and out as [batch, n, row] with rows of `row_bytes`:
// out[b, j] = data[b, idx[b, j, 0], ..., idx[b, j, k-1]]. `first_dim` (the
// batch dims) offsets the dim an error names.
cudaError_t GatherND(const void *data, int64_t batch, const int64_t *dims, int k, int64_t row_bytes,
                     const int64_t *idx, int64_t n, int first_dim, void *out, IndexError *error,
                     cudaStream_t stream);

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };
// Element types of a ScatterND with a reduction; f16 and bf16 updates are
// combined into float data (the caller widens and narrows the data around).
enum class ScatterType { kF32, kF64, kI8, kU8, kI32, kI64, kF16Into32, kBF16Into32 };

// out, which already holds the data, viewed as [dims[0], ..., dims[k-1],
// inner]; idx (int64) as [n, k]; updates as [n, inner]. Each update slice is
// applied in index order, as on the host: replaced (kNone, any type by
// `elem_size`) or combined with the element there (integer add and mul wrap,
// float max and min propagate NaN). Tuples with a bad index are skipped.
cudaError_t ScatterND(void *out, const int64_t *dims, int k, int64_t inner, const int64_t *idx,
                      int64_t n, const void *updates, ScatterReduction reduction, ScatterType type,
                      size_t elem_size, IndexError *error, cudaStream_t stream);

// Widens n f16 (or bf16) values to float and narrows them back, rounding to
// nearest even, for a ScatterND with a reduction on half data.
cudaError_t HalfToFloat(const void *src, bool bf16, float *dst, int64_t n, cudaStream_t stream);
cudaError_t FloatToHalf(const float *src, bool bf16, void *dst, int64_t n, cudaStream_t stream);

} // namespace kiln::kernels::cuda
