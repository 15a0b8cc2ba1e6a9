// What every CUDA kernel wrapper uses: the stream and cuBLASLt handle of its
// execution context, per-op scratch memory, and CUDA errors as Status.
// Compiled by the host compiler; kernels themselves live in kernels/cuda/.
#pragma once

#include "core/kernel.h"
#include "kiln/status.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

namespace kiln::cuda {

inline cudaStream_t Stream(const ExecContext &ctx) {
  return static_cast<cudaStream_t>(ctx.stream);
}
inline cublasLtHandle_t Blas(const ExecContext &ctx) {
  return static_cast<cublasLtHandle_t>(ctx.blas);
}

// ctx.workspace is cuBLASLt's (kCublasWorkspaceBytes, fixed). OpScratch is
// device memory for one op's intermediates, separate from it: valid until
// the next OpScratch call on the same backend, grown (after a synchronize)
// when a larger size is asked for. Ops run one at a time on the backend's
// stream, so one buffer serves them all.
inline constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;
StatusOr<void *> OpScratch(ExecContext &ctx, uint64_t bytes);

// An environment switch of the CUDA backend (docs/gpu.md lists them): "1"
// is on, "0" off, unset or anything else `default_on`. Callers read it once
// per process and keep it in a static.
bool EnvSwitch(const char *name, bool default_on);

Status CudaError(cudaError_t err, const char *what, const char *file, int line);
Status CublasError(cublasStatus_t st, const char *what, const char *file, int line);

} // namespace kiln::cuda

// Returns an Internal Status naming the call, the CUDA error and the place.
#define KILN_CUDA_RETURN_IF_ERROR(expr)                                                        \
  do {                                                                                         \
    cudaError_t kiln_cuda_err_ = (expr);                                                       \
    if (kiln_cuda_err_ != cudaSuccess)                                                         \
      return ::kiln::cuda::CudaError(kiln_cuda_err_, #expr, __FILE__, __LINE__);               \
  } while (0)

#define KILN_CUBLAS_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                         \
    cublasStatus_t kiln_cublas_st_ = (expr);                                                   \
    if (kiln_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                              \
      return ::kiln::cuda::CublasError(kiln_cublas_st_, #expr, __FILE__, __LINE__);            \
  } while (0)

// After a kernel launch: a bad launch configuration shows here.
#define KILN_CUDA_RETURN_IF_LAUNCH_FAILED() KILN_CUDA_RETURN_IF_ERROR(cudaGetLastError())
