#include "kernels/cuda/gather.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16;

int Blocks(int64_t n) {
  return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

#define KILN_GRID_STRIDE(i, n)                                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);           \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// The first kernel thread to find a bad index fills the record.
__device__ void Report(IndexError *e, IndexOp op, int64_t dim, int64_t position, int64_t value,
                       int64_t dim_size) {
  if (!e || atomicCAS(reinterpret_cast<int *>(&e->op), 0, static_cast<int>(op)) != 0)
    return;
  e->dim = static_cast<int32_t>(dim);
  e->position = position;
  e->value = value;
  e->dim_size = dim_size;
}

__device__ bool InRange(int64_t v, int64_t dim) { return v >= -dim && v < dim; }

// The widest word (16, 8, 4, 2 or 1 bytes) that divides a row and the
// alignment of every buffer, so rows are copied in as few loads as possible.
int64_t WordBytes(int64_t row_bytes, const void *a, const void *b) {
  const uintptr_t align = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  for (int64_t w : {16, 8, 4, 2})
    if (row_bytes % w == 0 && align % static_cast<uintptr_t>(w) == 0)
      return w;
  return 1;
}

// Calls f(U{}) with U the unsigned word of `bytes` bytes.
template <typename F> cudaError_t ByWord(int64_t bytes, F &&f) {
  switch (bytes) {
  case 16:
    return f(uint4{});
  case 8:
    return f(uint64_t{});
  case 4:
    return f(uint32_t{});
  case 2:
    return f(uint16_t{});
  default:
    return f(uint8_t{});
  }
}

struct IndexDims {
  int k;
  int64_t d[kMaxIndexDims];
};

// ---- Gather -------------------------------------------------------------------

template <typename U, typename Index>
__global__ void GatherKernel(const U *__restrict__ data, int64_t axis_dim, int64_t row_words,
                             const Index *__restrict__ idx, int64_t num_idx, int axis,
                             U *__restrict__ out, int64_t total, IndexError *error) {
  KILN_GRID_STRIDE(t, total) {
    const int64_t w = t % row_words, r = t / row_words;
    const int64_t j = r % num_idx, o = r / num_idx;
    int64_t v = static_cast<int64_t>(idx[j]);
    if (!InRange(v, axis_dim)) {
      if (o == 0 && w == 0)
        Report(error, IndexOp::kGather, axis, j, v, axis_dim);
      out[t] = U{};
      continue;
    }
    if (v < 0)
      v += axis_dim;
    out[t] = data[(o * axis_dim + v) * row_words + w];
  }
}

// Checks indices without copying (the result is empty, the indices are not).
template <typename Index>
__global__ void CheckGatherKernel(const Index *idx, int64_t num_idx, int64_t axis_dim, int axis,
                                  IndexError *error) {
  KILN_GRID_STRIDE(j, num_idx) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (!InRange(v, axis_dim))
      Report(error, IndexOp::kGather, axis, j, v, axis_dim);
  }
}

// ---- GatherND -----------------------------------------------------------------

// The slice number (row-major over dims) of tuple r, or -1 after reporting
// its first bad index when `report`.
__device__ int64_t TupleOffset(const int64_t *idx, int64_t r, const IndexDims &dims, IndexOp op,
                               int first_dim, bool report, IndexError *error) {
  int64_t offset = 0;
  for (int d = 0; d < dims.k; ++d) {
    const int64_t pos = r * dims.k + d;
    int64_t v = idx[pos];
    if (!InRange(v, dims.d[d])) {
      if (report)
        Report(error, op, first_dim + d, pos, v, dims.d[d]);
      return -1;
    }
    if (v < 0)
      v += dims.d[d];
    offset = offset * dims.d[d] + v;
  }
  return offset;
}

template <typename U>
__global__ void GatherNDKernel(const U *__restrict__ data, IndexDims dims, int64_t slices,
                               int64_t row_words, const int64_t *__restrict__ idx, int64_t n,
                               int first_dim, U *__restrict__ out, int64_t total,
                               IndexError *error) {
  KILN_GRID_STRIDE(t, total) {
    const int64_t w = t % row_words, r = t / row_words, b = r / n;
    const int64_t offset = TupleOffset(idx, r, dims, IndexOp::kGatherND, first_dim, w == 0, error);
    out[t] = offset < 0 ? U{} : data[(b * slices + offset) * row_words + w];
  }
}

__global__ void CheckTuplesKernel(const int64_t *idx, int64_t tuples, IndexDims dims, IndexOp op,
                                  int first_dim, IndexError *error) {
  KILN_GRID_STRIDE(r, tuples) { TupleOffset(idx, r, dims, op, first_dim, true, error); }
}

// ---- ScatterND ----------------------------------------------------------------

template <typename T> __device__ float Widen(T v) { return static_cast<float>(v); }
__device__ float Widen(__half v) { return __half2float(v); }
__device__ float Widen(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ T Combine(T old, T upd, ScatterReduction r) {
  if constexpr (std::is_integral_v<T>) {
    // Wrapping arithmetic through the unsigned type (int for narrow types).
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    if (r == ScatterReduction::kAdd)
      return static_cast<T>(static_cast<U>(old) + static_cast<U>(upd));
    if (r == ScatterReduction::kMul)
      return static_cast<T>(static_cast<U>(old) * static_cast<U>(upd));
  } else {
    if (r == ScatterReduction::kAdd)
      return old + upd;
    if (r == ScatterReduction::kMul)
      return old * upd;
    if (isnan(old) || isnan(upd))
      return isnan(old) ? old : upd;
  }
  if (r == ScatterReduction::kMax)
    return upd > old ? upd : old;
  if (r == ScatterReduction::kMin)
    return upd < old ? upd : old;
  return upd;
}

// One thread per column of the slices applies every tuple in order, so
// duplicate tuples combine (or replace) in index order, as on the host.
template <typename T, typename Upd>
__global__ void ScatterNDKernel(T *out, IndexDims dims, int64_t inner, const int64_t *idx,
                                int64_t n, const Upd *updates, ScatterReduction reduction,
                                IndexError *error) {
  KILN_GRID_STRIDE(i, inner) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t offset = TupleOffset(idx, j, dims, IndexOp::kScatterND, 0, i == 0, error);
      if (offset < 0)
        continue;
      T &dst = out[offset * inner + i];
      const Upd u = updates[j * inner + i];
      if constexpr (std::is_same_v<T, Upd>)
        dst = Combine(dst, u, reduction);
      else
        dst = Combine(dst, static_cast<T>(Widen(u)), reduction);
    }
  }
}

// ScatterND without a reduction: words of any type, the last tuple wins.
template <typename U>
__global__ void ScatterReplaceKernel(U *out, IndexDims dims, int64_t row_words, const int64_t *idx,
                                     int64_t n, const U *updates, IndexError *error) {
  KILN_GRID_STRIDE(i, row_words) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t offset = TupleOffset(idx, j, dims, IndexOp::kScatterND, 0, i == 0, error);
      if (offset >= 0)
        out[offset * row_words + i] = updates[j * row_words + i];
    }
  }
}

template <typename T, typename Upd>
cudaError_t LaunchScatter(void *out, const IndexDims &dims, int64_t inner, const int64_t *idx,
                          int64_t n, const void *updates, ScatterReduction reduction,
                          IndexError *error, cudaStream_t stream) {
  ScatterNDKernel<T, Upd>
      <<<Blocks(inner), kThreads, 0, stream>>>(static_cast<T *>(out), dims, inner, idx, n,
                                               static_cast<const Upd *>(updates), reduction, error);
  return cudaGetLastError();
}

template <typename H> __global__ void HalfToFloatKernel(const H *src, float *dst, int64_t n) {
  KILN_GRID_STRIDE(i, n) { dst[i] = Widen(src[i]); }
}

__global__ void FloatToHalfKernel(const float *src, __half *dst, int64_t n) {
  KILN_GRID_STRIDE(i, n) { dst[i] = __float2half_rn(src[i]); }
}
__global__ void FloatToBFloat16Kernel(const float *src, __nv_bfloat16 *dst, int64_t n) {
  KILN_GRID_STRIDE(i, n) { dst[i] = __float2bfloat16_rn(src[i]); }
}

bool MakeIndexDims(const int64_t *dims, int k, IndexDims *out) {
  if (k < 1 || k > kMaxIndexDims)
    return false;
  out->k = k;
  for (int d = 0; d < k; ++d)
    out->d[d] = dims[d];
  return true;
}

} // namespace

cudaError_t Gather(const void *data, int64_t outer, int64_t axis_dim, int64_t row_bytes,
                   const void *idx, bool idx_i32, int64_t num_idx, int axis, void *out,
                   IndexError *error, cudaStream_t stream) {
  if (num_idx == 0)
    return cudaSuccess;
  const int64_t total_bytes = outer * num_idx * row_bytes;
  if (total_bytes == 0) {
    if (idx_i32)
      CheckGatherKernel<<<Blocks(num_idx), kThreads, 0, stream>>>(static_cast<const int32_t *>(idx),
                                                                  num_idx, axis_dim, axis, error);
    else
      CheckGatherKernel<<<Blocks(num_idx), kThreads, 0, stream>>>(static_cast<const int64_t *>(idx),
                                                                  num_idx, axis_dim, axis, error);
    return cudaGetLastError();
  }
  const int64_t w = WordBytes(row_bytes, data, out);
  return ByWord(w, [&](auto word) {
    using U = decltype(word);
    const int64_t row_words = row_bytes / w, total = total_bytes / w;
    const U *d = static_cast<const U *>(data);
    U *o = static_cast<U *>(out);
    if (idx_i32)
      GatherKernel<<<Blocks(total), kThreads, 0, stream>>>(d, axis_dim, row_words,
                                                           static_cast<const int32_t *>(idx),
                                                           num_idx, axis, o, total, error);
    else
      GatherKernel<<<Blocks(total), kThreads, 0, stream>>>(d, axis_dim, row_words,
                                                           static_cast<const int64_t *>(idx),
                                                           num_idx, axis, o, total, error);
    return cudaGetLastError();
  });
}

cudaError_t GatherND(const void *data, int64_t batch, const int64_t *dims, int k, int64_t row_bytes,
                     const int64_t *idx, int64_t n, int first_dim, void *out, IndexError *error,
                     cudaStream_t stream) {
  IndexDims id;
  if (!MakeIndexDims(dims, k, &id))
    return cudaErrorInvalidValue;
  const int64_t tuples = batch * n;
  if (tuples == 0)
    return cudaSuccess;
  if (row_bytes == 0) {
    CheckTuplesKernel<<<Blocks(tuples), kThreads, 0, stream>>>(idx, tuples, id, IndexOp::kGatherND,
                                                               first_dim, error);
    return cudaGetLastError();
  }
  int64_t slices = 1;
  for (int d = 0; d < k; ++d)
    slices *= dims[d];
  const int64_t w = WordBytes(row_bytes, data, out);
  return ByWord(w, [&](auto word) {
    using U = decltype(word);
    const int64_t row_words = row_bytes / w, total = tuples * row_words;
    GatherNDKernel<<<Blocks(total), kThreads, 0, stream>>>(static_cast<const U *>(data), id, slices,
                                                           row_words, idx, n, first_dim,
                                                           static_cast<U *>(out), total, error);
    return cudaGetLastError();
  });
}

cudaError_t ScatterND(void *out, const int64_t *dims, int k, int64_t inner, const int64_t *idx,
                      int64_t n, const void *updates, ScatterReduction reduction, ScatterType type,
                      size_t elem_size, IndexError *error, cudaStream_t stream) {
  IndexDims id;
  if (!MakeIndexDims(dims, k, &id))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  if (inner == 0) {
    CheckTuplesKernel<<<Blocks(n), kThreads, 0, stream>>>(idx, n, id, IndexOp::kScatterND, 0,
                                                          error);
    return cudaGetLastError();
  }
  if (reduction == ScatterReduction::kNone) {
    // Bytes only: columns of the widest word that divides a row.
    const int64_t row_bytes = inner * static_cast<int64_t>(elem_size);
    const int64_t w = WordBytes(row_bytes, out, updates);
    return ByWord(w, [&](auto word) {
      using U = decltype(word);
      const int64_t row_words = row_bytes / w;
      ScatterReplaceKernel<<<Blocks(row_words), kThreads, 0, stream>>>(
          static_cast<U *>(out), id, row_words, idx, n, static_cast<const U *>(updates), error);
      return cudaGetLastError();
    });
  }
  switch (type) {
  case ScatterType::kF32:
    return LaunchScatter<float, float>(out, id, inner, idx, n, updates, reduction, error, stream);
  case ScatterType::kF64:
    return LaunchScatter<double, double>(out, id, inner, idx, n, updates, reduction, error, stream);
  case ScatterType::kI8:
    return LaunchScatter<int8_t, int8_t>(out, id, inner, idx, n, updates, reduction, error, stream);
  case ScatterType::kU8:
    return LaunchScatter<uint8_t, uint8_t>(out, id, inner, idx, n, updates, reduction, error,
                                           stream);
  case ScatterType::kI32:
    return LaunchScatter<int32_t, int32_t>(out, id, inner, idx, n, updates, reduction, error,
                                           stream);
  case ScatterType::kI64:
    return LaunchScatter<int64_t, int64_t>(out, id, inner, idx, n, updates, reduction, error,
                                           stream);
  case ScatterType::kF16Into32:
    return LaunchScatter<float, __half>(out, id, inner, idx, n, updates, reduction, error, stream);
  case ScatterType::kBF16Into32:
    return LaunchScatter<float, __nv_bfloat16>(out, id, inner, idx, n, updates, reduction, error,
                                               stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t HalfToFloat(const void *src, bool bf16, float *dst, int64_t n, cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  if (bf16)
    HalfToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16 *>(src),
                                                          dst, n);
  else
    HalfToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<const __half *>(src), dst, n);
  return cudaGetLastError();
}

cudaError_t FloatToHalf(const float *src, bool bf16, void *dst, int64_t n, cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  if (bf16)
    FloatToBFloat16Kernel<<<Blocks(n), kThreads, 0, stream>>>(src,
                                                              static_cast<__nv_bfloat16 *>(dst), n);
  else
    FloatToHalfKernel<<<Blocks(n), kThreads, 0, stream>>>(src, static_cast<__half *>(dst), n);
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
