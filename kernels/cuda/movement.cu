#include "kernels/cuda/launch.h"
#include "kernels/cuda/movement.h"

#include <algorithm>
#include <climits>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 many times over; grid-stride loops do the rest.
constexpr int64_t kMaxBlocks = 1 << 16;

int Blocks(int64_t n) {
  return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

// Unsigned storage of each element size, so copies never touch float values
// (a NaN payload survives).
template <size_t N> struct Word;
template <> struct Word<1> { using type = uint8_t; };
template <> struct Word<2> { using type = uint16_t; };
template <> struct Word<4> { using type = uint32_t; };
template <> struct Word<8> { using type = uint64_t; };
template <> struct Word<16> { using type = uint4; };

// ---- Strided copy ---------------------------------------------------------

// I is the type of the flat destination index: 32 bits when the copy is
// small enough, since 64-bit division costs several times more.
template <typename U, typename I>
__global__ void StridedCopyKernel(const U *__restrict__ src, CopyDims d, U *__restrict__ dst, I n) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I rest = i;
    int64_t off = d.offset;
    for (int k = d.rank - 1; k >= 0; --k) {
      const I dim = static_cast<I>(d.shape[k]);
      const I q = rest / dim;
      off += static_cast<int64_t>(rest - q * dim) * d.strides[k];
      rest = q;
    }
    dst[i] = src[off];
  }
}

template <typename U>
cudaError_t LaunchStridedCopy(const void *src, const CopyDims &d, void *dst, int64_t n,
                              cudaStream_t stream) {
  const U *s = static_cast<const U *>(src);
  U *o = static_cast<U *>(dst);
  if (n <= INT32_MAX)
    StridedCopyKernel<U, uint32_t>
        <<<Blocks(n), kThreads, 0, stream>>>(s, d, o, static_cast<uint32_t>(n));
  else
    StridedCopyKernel<U, uint64_t>
        <<<Blocks(n), kThreads, 0, stream>>>(s, d, o, static_cast<uint64_t>(n));
  return cudaGetLastError();
}

bool Aligned(const void *p, size_t w) { return reinterpret_cast<uintptr_t>(p) % w == 0; }

// Copies a unit-stride innermost run `w` bytes at a time when every row
// starts on a w-byte boundary in both buffers.
void Widen(const void *src, void *dst, CopyDims &d) {
  if (d.rank == 0 || d.strides[d.rank - 1] != 1)
    return;
  const int64_t e = static_cast<int64_t>(d.elem_size);
  for (int64_t w : {16, 8, 4}) {
    if (w <= e || !Aligned(src, w) || !Aligned(dst, w))
      continue;
    bool ok = (d.shape[d.rank - 1] * e) % w == 0 && (d.offset * e) % w == 0;
    for (int k = 0; ok && k < d.rank - 1; ++k)
      ok = (d.strides[k] * e) % w == 0;
    if (!ok)
      continue;
    d.shape[d.rank - 1] = d.shape[d.rank - 1] * e / w;
    for (int k = 0; k < d.rank - 1; ++k)
      d.strides[k] = d.strides[k] * e / w;
    d.offset = d.offset * e / w;
    d.elem_size = static_cast<size_t>(w);
    return;
  }
}

// ---- Tiled transpose --------------------------------------------------------

// A copy whose innermost destination dim is strided in the source while an
// outer dim `p` is contiguous there (a transpose that moves the last dim)
// reads the source along p and writes the destination along the last dim,
// through a shared-memory tile, so both sides are coalesced. The remaining
// dims are a batch of such [rows, cols] blocks.
constexpr int kTile = 32, kTileRows = 8;

struct TiledDims {
  int64_t offset = 0;
  int64_t rows = 0, row_stride = 0; // dim p: its length and destination stride
  int64_t cols = 0, col_stride = 0; // the last dim: its length and source stride
  int others = 0;                   // the batch dims, outermost first
  int64_t other_shape[kMaxCopyDims] = {};
  int64_t other_src[kMaxCopyDims] = {};
  int64_t other_dst[kMaxCopyDims] = {};
  int64_t batch = 1;
};

template <typename U>
__global__ void TiledCopyKernel(const U *__restrict__ src, TiledDims t, U *__restrict__ dst) {
  __shared__ U tile[kTile][kTile + 1]; // tile[j - j0][i - i0]; +1 staggers the banks
  const int64_t tiles_i = (t.rows + kTile - 1) / kTile, tiles_j = (t.cols + kTile - 1) / kTile;
  const int64_t total = t.batch * tiles_i * tiles_j;
  // The loop bounds depend on the block only, so every thread reaches each
  // barrier.
  for (int64_t blk = blockIdx.x; blk < total; blk += gridDim.x) {
    const int64_t tj = blk % tiles_j, ti = (blk / tiles_j) % tiles_i;
    int64_t b = blk / tiles_j / tiles_i;
    int64_t src_base = t.offset, dst_base = 0;
    for (int k = t.others - 1; k >= 0; --k) {
      const int64_t q = b / t.other_shape[k], r = b - q * t.other_shape[k];
      src_base += r * t.other_src[k];
      dst_base += r * t.other_dst[k];
      b = q;
    }
    const int64_t i0 = ti * kTile, j0 = tj * kTile;
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      const int64_t i = i0 + threadIdx.x, j = j0 + r;
      if (i < t.rows && j < t.cols)
        tile[r][threadIdx.x] = src[src_base + i + j * t.col_stride];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      const int64_t i = i0 + r, j = j0 + threadIdx.x;
      if (i < t.rows && j < t.cols)
        dst[dst_base + i * t.row_stride + j] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

// The tiled form of `d` when it applies: the last dim has a source stride
// other than 0 and 1, and an outer dim of at least a few elements has
// source stride 1.
bool MakeTiled(const CopyDims &d, TiledDims *t) {
  const int last = d.rank - 1;
  if (d.rank < 2 || d.strides[last] == 0 || d.strides[last] == 1 || d.shape[last] < 4)
    return false;
  int p = -1;
  for (int k = 0; k < last; ++k)
    if (d.strides[k] == 1 && d.shape[k] >= 4)
      p = k;
  if (p < 0)
    return false;
  int64_t dst_strides[kMaxCopyDims];
  int64_t s = 1;
  for (int k = last; k >= 0; --k) {
    dst_strides[k] = s;
    s *= d.shape[k];
  }
  t->offset = d.offset;
  t->rows = d.shape[p];
  t->row_stride = dst_strides[p];
  t->cols = d.shape[last];
  t->col_stride = d.strides[last];
  t->others = 0;
  t->batch = 1;
  for (int k = 0; k < last; ++k) {
    if (k == p)
      continue;
    t->other_shape[t->others] = d.shape[k];
    t->other_src[t->others] = d.strides[k];
    t->other_dst[t->others] = dst_strides[k];
    t->batch *= d.shape[k];
    ++t->others;
  }
  return true;
}

template <typename U>
cudaError_t LaunchTiled(const void *src, const TiledDims &t, void *dst, cudaStream_t stream) {
  const int64_t tiles = t.batch * ((t.rows + kTile - 1) / kTile) * ((t.cols + kTile - 1) / kTile);
  const int blocks = static_cast<int>(std::min<int64_t>(tiles, kMaxBlocks));
  TiledCopyKernel<U><<<blocks, dim3(kTile, kTileRows), 0, stream>>>(static_cast<const U *>(src), t,
                                                                    static_cast<U *>(dst));
  return cudaGetLastError();
}

// ---- Slice with device bounds ---------------------------------------------

struct SliceResolveArgs {
  int rank;
  int64_t data_shape[kMaxCopyDims];
  int64_t result_shape[kMaxCopyDims];
  SliceBounds b;
};

__device__ int64_t ReadIndex(const void *p, bool is_i32, int64_t i) {
  return is_i32 ? static_cast<const int32_t *>(p)[i] : static_cast<const int64_t *>(p)[i];
}

__device__ int64_t Clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// One thread: params = {offset, strides[0..rank)} of the view, as
// ResolveSlice computes them on the host. The lengths are the result's dims.
__global__ void ResolveSliceKernel(SliceResolveArgs a, int64_t *params) {
  int64_t strides[kMaxCopyDims];
  int64_t s = 1;
  for (int k = a.rank - 1; k >= 0; --k) {
    strides[k] = s;
    s *= a.data_shape[k];
  }
  int64_t offset = 0;
  for (int64_t i = 0; i < a.b.count; ++i) {
    int64_t axis = a.b.axes ? ReadIndex(a.b.axes, a.b.axes_i32, i) : i;
    if (axis < 0)
      axis += a.rank;
    const int64_t dim = a.data_shape[axis], len = a.result_shape[axis];
    const int64_t step = a.b.steps ? ReadIndex(a.b.steps, a.b.steps_i32, i) : 1;
    int64_t start = ReadIndex(a.b.starts, a.b.starts_i32, i);
    if (start < 0)
      start += dim;
    if (len > 0 && dim > 0) {
      start = step > 0 ? Clamp(start, 0, dim) : Clamp(start, 0, dim - 1);
      offset += start * strides[axis];
    }
    strides[axis] *= len > 1 ? step : 1;
  }
  params[0] = offset;
  for (int k = 0; k < a.rank; ++k)
    params[1 + k] = strides[k];
}

struct ViewShape {
  int rank;
  int64_t shape[kMaxCopyDims];
};

template <typename U>
__global__ void ViewCopyKernel(const U *__restrict__ src, ViewShape v,
                               const int64_t *__restrict__ params, U *__restrict__ dst, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rest = i, off = params[0];
    for (int k = v.rank - 1; k >= 0; --k) {
      const int64_t q = rest / v.shape[k];
      off += (rest - q * v.shape[k]) * params[1 + k];
      rest = q;
    }
    dst[i] = src[off];
  }
}

template <typename U>
cudaError_t LaunchViewCopy(const void *src, const ViewShape &v, const int64_t *params, void *dst,
                           int64_t n, cudaStream_t stream) {
  ViewCopyKernel<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U *>(src), v, params,
                                                        static_cast<U *>(dst), n);
  return cudaGetLastError();
}

// ---- Trilu ------------------------------------------------------------------

template <typename U>
__global__ void TriluKernel(const U *src, U *dst, int64_t rows, int64_t cols, int64_t k,
                            const int64_t *k_device, bool upper, int64_t n) {
  if (k_device)
    k = *k_device;
  // Clamping keeps r + k from overflowing without changing the result.
  k = Clamp(k, -rows - 1, cols + 1);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t j = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? j >= r + k : j <= r + k;
    dst[i] = keep ? src[i] : U(0);
  }
}

template <typename U>
cudaError_t LaunchTrilu(const void *src, void *dst, int64_t rows, int64_t cols, int64_t k,
                        const int64_t *k_device, bool upper, int64_t n, cudaStream_t stream) {
  // src and dst may alias (no __restrict__): each element is read, then
  // written, by one thread.
  TriluKernel<U><<<Blocks(n), kThreads, 0, stream>>>(
      static_cast<const U *>(src), static_cast<U *>(dst), rows, cols, k, k_device, upper, n);
  return cudaGetLastError();
}

// ---- Generators -------------------------------------------------------------

template <typename U> __global__ void FillKernel(U value, U *dst, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = value;
}

template <typename U>
cudaError_t LaunchFill(uint64_t value, void *dst, int64_t n, cudaStream_t stream) {
  FillKernel<U>
      <<<Blocks(n), kThreads, 0, stream>>>(static_cast<U>(value), static_cast<U *>(dst), n);
  return cudaGetLastError();
}

// start + i * delta with each operation rounded on its own, as the host
// computes it (nvcc would otherwise contract it into one fma).
__device__ float RangeValue(float start, float delta, int64_t i) {
  return __fadd_rn(start, __fmul_rn(static_cast<float>(i), delta));
}
__device__ double RangeValue(double start, double delta, int64_t i) {
  return __dadd_rn(start, __dmul_rn(static_cast<double>(i), delta));
}
template <typename T> __device__ T RangeValue(T start, T delta, int64_t i) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(start) + static_cast<U>(i) * static_cast<U>(delta));
}

template <typename T>
__global__ void RangeKernel(T start, T delta, const T *start_device, const T *delta_device, T *out,
                            int64_t n) {
  if (start_device)
    start = *start_device;
  if (delta_device)
    delta = *delta_device;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = RangeValue(start, delta, i);
}

constexpr int kValuesPerLaunch = 16;
struct Int64Values {
  int64_t v[kValuesPerLaunch];
};

__global__ void WriteInt64sKernel(Int64Values values, int n, int64_t *dst) {
  if (static_cast<int>(threadIdx.x) < n)
    dst[threadIdx.x] = values.v[threadIdx.x];
}

// ---- SplitColumns ---------------------------------------------------------

struct SplitArgs {
  const char *src = nullptr;
  int64_t pitch = 0, outer = 0;
  int count = 0;
  SplitPart parts[kMaxSplitParts];
  int64_t first[kMaxSplitParts + 1] = {}; // words of a row before part k
};

// Word w of the [outer, sum of widths] row-major view over the parts.
template <typename U> __global__ void SplitKernel(const SplitArgs a, int64_t words) {
  WaitForPriorKernels();
  const int64_t row_words = a.first[a.count];
  for (int64_t w = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; w < words;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = w / row_words, c = w - row * row_words;
    int k = 0;
    while (c >= a.first[k + 1])
      ++k;
    const int64_t off = c - a.first[k], width = a.first[k + 1] - a.first[k];
    const U *src = reinterpret_cast<const U *>(a.src + row * a.pitch + a.parts[k].col);
    static_cast<U *>(a.parts[k].dst)[row * width + off] = src[off];
  }
}

template <typename U> cudaError_t LaunchSplit(SplitArgs a, cudaStream_t stream) {
  for (int k = 0; k < a.count; ++k)
    a.first[k + 1] = a.first[k] + a.parts[k].width / static_cast<int64_t>(sizeof(U));
  const int64_t words = a.outer * a.first[a.count];
  if (words == 0)
    return cudaSuccess;
  const int64_t blocks = (words + 255) / 256;
  return Launch(SplitKernel<U>, dim3(static_cast<unsigned>(blocks < 4096 ? blocks : 4096)),
                dim3(256), 0, stream, a, words);
}

} // namespace

// ---- Entry points -------------------------------------------------------------

bool MakeCopyDims(size_t elem_size, int64_t offset, int rank, const int64_t *shape,
                  const int64_t *strides, CopyDims *out) {
  CopyDims d;
  d.elem_size = elem_size;
  d.offset = offset;
  for (int k = 0; k < rank; ++k)
    if (shape[k] == 0) {
      d.empty = true;
      *out = d;
      return true;
    }
  // Innermost first: drop unit dims, merge a dim into its inner neighbour
  // when the pair is one contiguous run of the source.
  int64_t mshape[2 * kMaxCopyDims], mstrides[2 * kMaxCopyDims];
  int m = 0;
  for (int k = rank - 1; k >= 0; --k) {
    if (shape[k] == 1)
      continue;
    if (m > 0 && strides[k] == mstrides[m - 1] * mshape[m - 1]) {
      mshape[m - 1] *= shape[k];
      continue;
    }
    if (m == kMaxCopyDims)
      return false;
    mshape[m] = shape[k];
    mstrides[m] = strides[k];
    ++m;
  }
  d.rank = m;
  for (int k = 0; k < m; ++k) {
    d.shape[k] = mshape[m - 1 - k];
    d.strides[k] = mstrides[m - 1 - k];
  }
  *out = d;
  return true;
}

int64_t CopyElements(const CopyDims &dims) {
  if (dims.empty)
    return 0;
  int64_t n = 1;
  for (int k = 0; k < dims.rank; ++k)
    n *= dims.shape[k];
  return n;
}

cudaError_t StridedCopy(const void *src, const CopyDims &dims, void *dst, cudaStream_t stream) {
  const int64_t n = CopyElements(dims);
  if (n == 0)
    return cudaSuccess;
  const char *base = static_cast<const char *>(src) + dims.offset * int64_t(dims.elem_size);
  if (dims.rank == 0 || (dims.rank == 1 && dims.strides[0] == 1))
    return cudaMemcpyAsync(dst, base, static_cast<size_t>(n) * dims.elem_size,
                           cudaMemcpyDeviceToDevice, stream);
  TiledDims t;
  if (MakeTiled(dims, &t)) {
    switch (dims.elem_size) {
    case 1:
      return LaunchTiled<Word<1>::type>(src, t, dst, stream);
    case 2:
      return LaunchTiled<Word<2>::type>(src, t, dst, stream);
    case 4:
      return LaunchTiled<Word<4>::type>(src, t, dst, stream);
    case 8:
      return LaunchTiled<Word<8>::type>(src, t, dst, stream);
    default:
      break; // the element-wise copy below
    }
  }
  CopyDims d = dims;
  Widen(src, dst, d);
  const int64_t words = CopyElements(d);
  switch (d.elem_size) {
  case 1:
    return LaunchStridedCopy<Word<1>::type>(src, d, dst, words, stream);
  case 2:
    return LaunchStridedCopy<Word<2>::type>(src, d, dst, words, stream);
  case 4:
    return LaunchStridedCopy<Word<4>::type>(src, d, dst, words, stream);
  case 8:
    return LaunchStridedCopy<Word<8>::type>(src, d, dst, words, stream);
  case 16:
    return LaunchStridedCopy<Word<16>::type>(src, d, dst, words, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t SliceWithDeviceBounds(size_t elem_size, const void *src, int rank,
                                  const int64_t *data_shape, const int64_t *result_shape,
                                  const SliceBounds &bounds, int64_t *params, void *dst,
                                  cudaStream_t stream) {
  if (rank > kMaxCopyDims)
    return cudaErrorInvalidValue;
  SliceResolveArgs a{};
  a.rank = rank;
  a.b = bounds;
  ViewShape v{};
  v.rank = rank;
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) {
    a.data_shape[k] = data_shape[k];
    a.result_shape[k] = v.shape[k] = result_shape[k];
    n *= result_shape[k];
  }
  if (n == 0)
    return cudaSuccess;
  ResolveSliceKernel<<<1, 1, 0, stream>>>(a, params);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return err;
  switch (elem_size) {
  case 1:
    return LaunchViewCopy<uint8_t>(src, v, params, dst, n, stream);
  case 2:
    return LaunchViewCopy<uint16_t>(src, v, params, dst, n, stream);
  case 4:
    return LaunchViewCopy<uint32_t>(src, v, params, dst, n, stream);
  case 8:
    return LaunchViewCopy<uint64_t>(src, v, params, dst, n, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t Trilu(size_t elem_size, const void *src, void *dst, int64_t batch, int64_t rows,
                  int64_t cols, int64_t k, const int64_t *k_device, bool upper,
                  cudaStream_t stream) {
  const int64_t n = batch * rows * cols;
  if (n == 0)
    return cudaSuccess;
  switch (elem_size) {
  case 1:
    return LaunchTrilu<uint8_t>(src, dst, rows, cols, k, k_device, upper, n, stream);
  case 2:
    return LaunchTrilu<uint16_t>(src, dst, rows, cols, k, k_device, upper, n, stream);
  case 4:
    return LaunchTrilu<uint32_t>(src, dst, rows, cols, k, k_device, upper, n, stream);
  case 8:
    return LaunchTrilu<uint64_t>(src, dst, rows, cols, k, k_device, upper, n, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t FillPattern(size_t elem_size, uint64_t value, void *dst, int64_t n,
                        cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  // A pattern of one repeated byte (zero, all ones) is a memset.
  const uint8_t byte = static_cast<uint8_t>(value);
  bool uniform = true;
  for (size_t b = 1; b < elem_size; ++b)
    uniform = uniform && static_cast<uint8_t>(value >> (8 * b)) == byte;
  if (uniform)
    return cudaMemsetAsync(dst, byte, static_cast<size_t>(n) * elem_size, stream);
  switch (elem_size) {
  case 2:
    return LaunchFill<uint16_t>(value, dst, n, stream);
  case 4:
    return LaunchFill<uint32_t>(value, dst, n, stream);
  case 8:
    return LaunchFill<uint64_t>(value, dst, n, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

template <typename T>
cudaError_t Range(T start, T delta, const T *start_device, const T *delta_device, T *out, int64_t n,
                  cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  RangeKernel<T>
      <<<Blocks(n), kThreads, 0, stream>>>(start, delta, start_device, delta_device, out, n);
  return cudaGetLastError();
}

template cudaError_t Range<float>(float, float, const float *, const float *, float *, int64_t,
                                  cudaStream_t);
template cudaError_t Range<double>(double, double, const double *, const double *, double *,
                                   int64_t, cudaStream_t);
template cudaError_t Range<int32_t>(int32_t, int32_t, const int32_t *, const int32_t *, int32_t *,
                                    int64_t, cudaStream_t);
template cudaError_t Range<int64_t>(int64_t, int64_t, const int64_t *, const int64_t *, int64_t *,
                                    int64_t, cudaStream_t);

cudaError_t WriteInt64s(const int64_t *values, int64_t n, int64_t *dst, cudaStream_t stream) {
  for (int64_t first = 0; first < n; first += kValuesPerLaunch) {
    const int count = static_cast<int>(std::min<int64_t>(kValuesPerLaunch, n - first));
    Int64Values v{};
    std::copy(values + first, values + first + count, v.v);
    WriteInt64sKernel<<<1, kValuesPerLaunch, 0, stream>>>(v, count, dst + first);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

cudaError_t SplitColumns(const void *src, int64_t pitch, int64_t outer, const SplitPart *parts,
                         int count, cudaStream_t stream) {
  if (count < 0 || count > kMaxSplitParts || outer < 0 || pitch < 0)
    return cudaErrorInvalidValue;
  SplitArgs a;
  a.src = static_cast<const char *>(src);
  a.pitch = pitch;
  a.outer = outer;
  a.count = count;
  // The widest word every address and length is a multiple of.
  uint64_t bits = reinterpret_cast<uintptr_t>(src) | static_cast<uint64_t>(pitch);
  for (int k = 0; k < count; ++k) {
    a.parts[k] = parts[k];
    bits |= reinterpret_cast<uintptr_t>(parts[k].dst) | static_cast<uint64_t>(parts[k].col) |
            static_cast<uint64_t>(parts[k].width);
  }
  if (bits % 16 == 0)
    return LaunchSplit<uint4>(a, stream);
  if (bits % 8 == 0)
    return LaunchSplit<uint64_t>(a, stream);
  if (bits % 4 == 0)
    return LaunchSplit<uint32_t>(a, stream);
  return LaunchSplit<uint8_t>(a, stream);
}

} // namespace kiln::kernels::cuda
