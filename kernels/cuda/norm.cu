#include "kernels/cuda/fused_io.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/norm.h"

#include <climits>
#include <cstdint>

namespace kiln::kernels::cuda {
namespace {

enum class NormKind { kLayer, kRms };

struct NormArgs {
  const void *a = nullptr, *b = nullptr; // b only for the fused residual add
  bool in_registers = false;             // NormShape::rows_in_registers
  NormParam scale, bias;
  void *sum = nullptr, *y = nullptr;
  float *mean = nullptr, *inv_std = nullptr;
  int64_t rows = 0, cols = 0;
  float epsilon = 0;
};

__device__ __forceinline__ float Sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double Sqrt(double v) { return sqrt(v); }

// Element c of a row of the parameter.
template <typename A> __device__ __forceinline__ A ParamAt(const NormParam &p, int64_t c) {
  int64_t off = c;
  if (p.rank > 0) {
    off = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      off += (c % p.dims[k]) * p.strides[k];
      c /= p.dims[k];
    }
  }
  return LoadAs<A>(p.data, p.type, off);
}

// One block per row (blocks stride over rows past the grid). The row value
// is x, or a + b for the fused residual add, recomputed in A on every pass
// so the norm sees the unrounded sum.
template <typename T, typename A, NormKind kKind, bool kAdd>
__global__ void NormRows(const NormArgs args) {
  __shared__ A partial[32];
  const int64_t cols = args.cols;
  const A inv_cols = A(1) / static_cast<A>(cols);
  for (int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    const T *a = static_cast<const T *>(args.a) + row * cols;
    const T *b = kAdd ? static_cast<const T *>(args.b) + row * cols : nullptr;
    T *sum = kAdd ? static_cast<T *>(args.sum) + row * cols : nullptr;
    T *y = static_cast<T *>(args.y) + row * cols;
    auto value = [&](int64_t c) {
      A v = Widen<A>(a[c]);
      if constexpr (kAdd)
        v += Widen<A>(b[c]);
      return v;
    };
    A s1 = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A v = value(c);
      if constexpr (kAdd)
        sum[c] = Narrow<T>(v);
      s1 += kKind == NormKind::kRms ? v * v : v;
    }
    s1 = BlockSum(s1, partial);
    A mean = 0, inv = 0;
    if constexpr (kKind == NormKind::kLayer) {
      mean = s1 * inv_cols;
      A s2 = 0;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const A d = value(c) - mean;
        s2 += d * d;
      }
      s2 = BlockSum(s2, partial);
      inv = A(1) / Sqrt(s2 * inv_cols + static_cast<A>(args.epsilon));
    } else {
      inv = A(1) / Sqrt(s1 * inv_cols + static_cast<A>(args.epsilon));
    }
    const bool has_bias = args.bias.data != nullptr;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const A v = value(c);
      A out;
      if constexpr (kKind == NormKind::kLayer) {
        out = (v - mean) * inv * ParamAt<A>(args.scale, c);
        if (has_bias)
          out += ParamAt<A>(args.bias, c);
      } else {
        out = v * inv * ParamAt<A>(args.scale, c);
      }
      y[c] = Narrow<T>(out);
    }
    if (threadIdx.x == 0) {
      if (args.mean != nullptr)
        args.mean[row] = static_cast<float>(mean);
      if (args.inv_std != nullptr)
        args.inv_std[row] = static_cast<float>(inv);
    }
  }
}

// RMS norm (with the residual add when kAdd) of rows held in registers: each
// thread loads up to kVecs 16-byte vectors of a row (and of b) once, so the
// row is read once and written once (y, and the sum), where NormRows reads
// it on every pass. For decode steps, whose one-row norms are bound by
// latency, not bandwidth. Every pointer 16-byte aligned, cols a multiple of
// the vector.
template <typename T, bool kAdd, int kVecs> __global__ void RmsRowsVec(const NormArgs args) {
  WaitForPriorKernels();
  constexpr int kN = 16 / sizeof(T);
  __shared__ float partial[32];
  const int64_t vecs = args.cols / kN;
  const float inv_cols = 1.0f / static_cast<float>(args.cols);
  for (int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    const int64_t base = row * args.cols;
    float v[kVecs][kN], sc[kVecs][kN];
    float s1 = 0;
    for (int i = 0; i < kVecs; ++i) {
      const int64_t at = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
      if (at >= vecs)
        break;
      WidenVector(static_cast<const T *>(args.a) + base + at * kN, v[i]);
      if constexpr (kAdd) {
        float b[kN];
        WidenVector(static_cast<const T *>(args.b) + base + at * kN, b);
        for (int e = 0; e < kN; ++e)
          v[i][e] += b[e];
        NarrowVector(v[i], static_cast<T *>(args.sum) + base + at * kN);
      }
      for (int e = 0; e < kN; ++e) {
        s1 += v[i][e] * v[i][e];
        sc[i][e] = ParamAt<float>(args.scale, at * kN + e); // loaded before the block's sum
      }
    }
    s1 = BlockSum(s1, partial);
    const float inv = 1.0f / sqrtf(s1 * inv_cols + args.epsilon);
    for (int i = 0; i < kVecs; ++i) {
      const int64_t at = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
      if (at >= vecs)
        break;
      float y[kN];
      for (int e = 0; e < kN; ++e)
        y[e] = v[i][e] * inv * sc[i][e];
      NarrowVector(y, static_cast<T *>(args.y) + base + at * kN);
    }
  }
}

constexpr int kVecMaxThreads = 1024;
constexpr int kVecMaxPerThread = 4;

// Launches RmsRowsVec when the row fits the registers and every operand is
// aligned for 16-byte vectors (the launch's error in *launched); false when
// it does not apply.
template <typename T, bool kAdd>
bool LaunchRmsVec(const NormArgs &args, unsigned grid, cudaStream_t stream, cudaError_t *launched) {
  constexpr int kN = 16 / sizeof(T);
  if (args.cols % kN != 0 || !Aligned16(args.a) || !Aligned16(args.y) ||
      (kAdd && (!Aligned16(args.b) || !Aligned16(args.sum))))
    return false;
  const int64_t vecs = args.cols / kN;
  if (vecs > static_cast<int64_t>(kVecMaxThreads) * kVecMaxPerThread)
    return false;
  // One vector a thread where 1024 threads allow: a row's loads then all
  // leave at once (a second vector a thread waits behind the first's
  // store of the sum, which may alias it).
  int64_t threads = vecs;
  threads = (threads + 31) / 32 * 32;
  threads = threads < 32 ? 32 : threads > kVecMaxThreads ? kVecMaxThreads : threads;
  const int64_t per = (vecs + threads - 1) / threads;
  const dim3 t(static_cast<unsigned>(threads));
  cudaError_t err;
  if (per <= 1)
    err = Launch(RmsRowsVec<T, kAdd, 1>, grid, t, 0, stream, args);
  else if (per == 2)
    err = Launch(RmsRowsVec<T, kAdd, 2>, grid, t, 0, stream, args);
  else
    err = Launch(RmsRowsVec<T, kAdd, 4>, grid, t, 0, stream, args);
  *launched = err;
  return true;
}

// Enough threads for about 8 elements each, 32 to 512.
int ThreadsFor(int64_t cols) {
  int64_t t = (cols + 7) / 8;
  t = (t + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t > 512 ? 512 : t);
}

template <NormKind kKind, bool kAdd>
cudaError_t LaunchNorm(FusedFloat type, const NormArgs &args, cudaStream_t stream) {
  if (args.rows == 0 || args.cols == 0)
    return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(args.rows < INT_MAX ? args.rows : INT_MAX);
  const int threads = ThreadsFor(args.cols);
  if constexpr (kKind == NormKind::kRms) {
    bool vec = false;
    cudaError_t launched = cudaSuccess;
    if (args.in_registers && type == FusedFloat::kF32)
      vec = LaunchRmsVec<float, kAdd>(args, grid, stream, &launched);
    else if (args.in_registers && type == FusedFloat::kF16)
      vec = LaunchRmsVec<__half, kAdd>(args, grid, stream, &launched);
    else if (args.in_registers && type == FusedFloat::kBF16)
      vec = LaunchRmsVec<__nv_bfloat16, kAdd>(args, grid, stream, &launched);
    if (vec)
      return launched != cudaSuccess ? launched : cudaGetLastError();
  }
  switch (type) {
  case FusedFloat::kF32:
    NormRows<float, float, kKind, kAdd><<<grid, threads, 0, stream>>>(args);
    break;
  case FusedFloat::kF16:
    NormRows<__half, float, kKind, kAdd><<<grid, threads, 0, stream>>>(args);
    break;
  case FusedFloat::kBF16:
    NormRows<__nv_bfloat16, float, kKind, kAdd><<<grid, threads, 0, stream>>>(args);
    break;
  case FusedFloat::kF64:
    NormRows<double, double, kKind, kAdd><<<grid, threads, 0, stream>>>(args);
    break;
  }
  return cudaGetLastError();
}

} // namespace

cudaError_t LayerNorm(FusedFloat type, const void *x, const NormParam &scale, const NormParam &bias,
                      void *y, float *mean, float *inv_std, NormShape shape, float epsilon,
                      cudaStream_t stream) {
  NormArgs args;
  args.a = x;
  args.scale = scale;
  args.bias = bias;
  args.y = y;
  args.mean = mean;
  args.inv_std = inv_std;
  args.rows = shape.rows;
  args.cols = shape.cols;
  args.epsilon = epsilon;
  return LaunchNorm<NormKind::kLayer, false>(type, args, stream);
}

cudaError_t RmsNorm(FusedFloat type, const void *x, const NormParam &scale, void *y,
                    NormShape shape, float epsilon, cudaStream_t stream) {
  NormArgs args;
  args.a = x;
  args.scale = scale;
  args.y = y;
  args.rows = shape.rows;
  args.cols = shape.cols;
  args.epsilon = epsilon;
  args.in_registers = shape.rows_in_registers;
  return LaunchNorm<NormKind::kRms, false>(type, args, stream);
}

cudaError_t AddRmsNorm(FusedFloat type, const void *a, const void *b, const NormParam &scale,
                       void *sum, void *y, NormShape shape, float epsilon, cudaStream_t stream) {
  NormArgs args;
  args.a = a;
  args.b = b;
  args.scale = scale;
  args.sum = sum;
  args.y = y;
  args.rows = shape.rows;
  args.cols = shape.cols;
  args.epsilon = epsilon;
  args.in_registers = shape.rows_in_registers;
  return LaunchNorm<NormKind::kRms, true>(type, args, stream);
}

cudaError_t AddLayerNorm(FusedFloat type, const void *a, const void *b, const NormParam &scale,
                         const NormParam &bias, void *sum, void *y, NormShape shape, float epsilon,
                         cudaStream_t stream) {
  NormArgs args;
  args.a = a;
  args.b = b;
  args.scale = scale;
  args.bias = bias;
  args.sum = sum;
  args.y = y;
  args.rows = shape.rows;
  args.cols = shape.cols;
  args.epsilon = epsilon;
  return LaunchNorm<NormKind::kLayer, true>(type, args, stream);
}

} // namespace kiln::kernels::cuda
