// Device data movement that only moves bytes, so it serves every element
// type by its size (1, 2, 4 or 8 bytes): the strided copy behind Transpose,
// Slice, Expand and Tile, Trilu, and the generators (constant fill, Range,
// small int64 vectors such as a Shape result). Every launcher enqueues on
// `stream` and returns the launch's error; none synchronizes or allocates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kiln::kernels::cuda {

// The most dims a strided copy handles after unit dims are dropped and
// contiguous neighbours merged (Tile's view has two per operand dim).
inline constexpr int kMaxCopyDims = 16;

// A copy of a strided source view into a contiguous destination: element
// (i_0, ..., i_r-1) of dst comes from src + offset + sum(i_d * strides[d]).
// Offset and strides count elements; strides may be 0 (broadcast) or
// negative (reversed slice).
struct CopyDims {
  bool empty = false; // some dim is 0: nothing to copy
  int rank = 0;
  size_t elem_size = 0; // bytes per element: 1, 2, 4, 8 (16 after widening)
  int64_t offset = 0;
  int64_t shape[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

// Builds the copy of `rank` dims with unit dims dropped and dims that are
// contiguous with their inner neighbour merged. False when more than
// kMaxCopyDims dims remain. Rank 0 is one element.
bool MakeCopyDims(size_t elem_size, int64_t offset, int rank, const int64_t *shape,
                  const int64_t *strides, CopyDims *out);

// Elements of the copy (0 when it is empty).
int64_t CopyElements(const CopyDims &dims);

// dst = the view of src that `dims` describes. A fully contiguous view is one
// cudaMemcpyAsync; runs of whole words are copied 16, 8 or 4 bytes at a time.
cudaError_t StridedCopy(const void *src, const CopyDims &dims, void *dst, cudaStream_t stream);

// Slice with bounds known only on the device (an operand in device memory).
// The data operand has `rank` dims `data_shape`; the result has
// `result_shape` (decided by the shape rule from the same values). Each of
// starts, axes and steps holds `count` values, int64 or int32 (is_i32); axes
// or steps may be null (0..count-1, and 1). `params` is device scratch for
// rank + 1 int64 values. Enqueues the resolution of the view (the same
// clamping as ResolveSlice) and the copy that reads it.
struct SliceBounds {
  const void *starts = nullptr;
  bool starts_i32 = false;
  const void *axes = nullptr;
  bool axes_i32 = false;
  const void *steps = nullptr;
  bool steps_i32 = false;
  int64_t count = 0;
};
cudaError_t SliceWithDeviceBounds(size_t elem_size, const void *src, int rank,
                                  const int64_t *data_shape, const int64_t *result_shape,
                                  const SliceBounds &bounds, int64_t *params, void *dst,
                                  cudaStream_t stream);

// Split along an axis as one launch: `outer` rows of `pitch` bytes in src,
// of which part k takes the `width` bytes from byte `col` on into its own
// contiguous [outer, width] buffer. Bytes are copied 16, 8 or 4 at a time
// where every pointer, column, width and the pitch allow.
inline constexpr int kMaxSplitParts = 8;
struct SplitPart {
  void *dst = nullptr;
  int64_t col = 0;   // bytes into a source row
  int64_t width = 0; // bytes a row
};
cudaError_t SplitColumns(const void *src, int64_t pitch, int64_t outer, const SplitPart *parts,
                         int count, cudaStream_t stream);

// Keeps the upper (j >= i + k) or lower (j <= i + k) triangle of each of
// `batch` [rows, cols] matrices and zeroes the rest. k is `k_device[0]` when
// k_device is not null, else `k`. src may equal dst.
cudaError_t Trilu(size_t elem_size, const void *src, void *dst, int64_t batch, int64_t rows,
                  int64_t cols, int64_t k, const int64_t *k_device, bool upper,
                  cudaStream_t stream);

// Writes n copies of the `elem_size`-byte little-endian pattern `value`.
cudaError_t FillPattern(size_t elem_size, uint64_t value, void *dst, int64_t n,
                        cudaStream_t stream);

// out[i] = start + i * delta, rounded like the host's `start + T(i) * delta`
// (no fused multiply-add); integers wrap. T is float, double, int32_t or
// int64_t. start and delta come from start_device[0] and delta_device[0] when
// those are not null.
template <typename T>
cudaError_t Range(T start, T delta, const T *start_device, const T *delta_device, T *out, int64_t n,
                  cudaStream_t stream);

// Writes `n` int64 values given on the host into device memory through
// kernel arguments, so no host buffer has to outlive the call.
cudaError_t WriteInt64s(const int64_t *values, int64_t n, int64_t *dst, cudaStream_t stream);

} // namespace kiln::kernels::cuda
