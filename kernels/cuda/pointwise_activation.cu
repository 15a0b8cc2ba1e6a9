// BiasActivation and GatedActivation (activation.h): one grid-stride
// element-wise kernel each, templated on the element type and activation.
#include "kernels/cuda/pointwise_activation.h"

#include "kernels/cuda/pointwise_activation_math.cuh"
#include "kernels/cuda/elem_access.cuh"

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, Activation A>
__global__ void BiasActivationKernel(const float *acc, const T *bias, T *out, int64_t rows,
                                     int64_t cols) {
  const int64_t total = rows * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    float x = acc ? acc[i] : 0.0f;
    if (bias)
      x += LoadF32(bias, i % cols);
    StoreF32(out, i, ApplyActivation<A>(x));
  }
}

template <typename T, Activation A>
__global__ void GatedActivationKernel(const float *h, T *out, int64_t rows, int64_t f) {
  const int64_t total = rows * f;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / f, c = i - r * f;
    const float *row = h + r * 2 * f;
    StoreF32(out, i, ApplyActivation<A>(row[c]) * row[f + c]);
  }
}

template <typename T, Activation A>
cudaError_t LaunchBias(const float *acc, const void *bias, void *out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  BiasActivationKernel<T, A><<<GridStrideBlocks(rows * cols, kThreads), kThreads, 0, stream>>>(
      acc, static_cast<const T *>(bias), static_cast<T *>(out), rows, cols);
  return cudaGetLastError();
}

template <typename T, Activation A>
cudaError_t LaunchGated(const float *h, void *out, int64_t rows, int64_t f, cudaStream_t stream) {
  GatedActivationKernel<T, A><<<GridStrideBlocks(rows * f, kThreads), kThreads, 0, stream>>>(
      h, static_cast<T *>(out), rows, f);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBiasActivation(Activation act, const float *acc, const void *bias, void *out,
                                 int64_t rows, int64_t cols, cudaStream_t stream) {
  switch (act) {
  case Activation::kNone:
    return LaunchBias<T, Activation::kNone>(acc, bias, out, rows, cols, stream);
  case Activation::kRelu:
    return LaunchBias<T, Activation::kRelu>(acc, bias, out, rows, cols, stream);
  case Activation::kGelu:
    return LaunchBias<T, Activation::kGelu>(acc, bias, out, rows, cols, stream);
  case Activation::kGeluTanh:
    return LaunchBias<T, Activation::kGeluTanh>(acc, bias, out, rows, cols, stream);
  case Activation::kSilu:
    return LaunchBias<T, Activation::kSilu>(acc, bias, out, rows, cols, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t LaunchGatedActivation(Activation act, const float *h, void *out, int64_t rows,
                                  int64_t f, cudaStream_t stream) {
  switch (act) {
  case Activation::kGelu:
    return LaunchGated<T, Activation::kGelu>(h, out, rows, f, stream);
  case Activation::kGeluTanh:
    return LaunchGated<T, Activation::kGeluTanh>(h, out, rows, f, stream);
  case Activation::kSilu:
    return LaunchGated<T, Activation::kSilu>(h, out, rows, f, stream);
  default: // a gate without a nonlinearity is not a gated MLP
    return cudaErrorInvalidValue;
  }
}

} // namespace

cudaError_t BiasActivation(Activation act, const float *acc, const void *bias, void *out,
                           FloatElem t, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return cudaSuccess;
  switch (t) {
  case FloatElem::kF32:
    return LaunchBiasActivation<float>(act, acc, bias, out, rows, cols, stream);
  case FloatElem::kF16:
    return LaunchBiasActivation<__half>(act, acc, bias, out, rows, cols, stream);
  case FloatElem::kBF16:
    return LaunchBiasActivation<__nv_bfloat16>(act, acc, bias, out, rows, cols, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t GatedActivation(Activation act, const float *h, void *out, FloatElem t, int64_t rows,
                            int64_t f, cudaStream_t stream) {
  if (rows <= 0 || f <= 0)
    return cudaSuccess;
  switch (t) {
  case FloatElem::kF32:
    return LaunchGatedActivation<float>(act, h, out, rows, f, stream);
  case FloatElem::kF16:
    return LaunchGatedActivation<__half>(act, h, out, rows, f, stream);
  case FloatElem::kBF16:
    return LaunchGatedActivation<__nv_bfloat16>(act, h, out, rows, f, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
