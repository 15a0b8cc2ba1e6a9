// CUDA and cuBLASLt errors as Status, and the op scratch of cuda_util.h.
#include "backends/cuda/cuda_util.h"

#include "backends/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln::cuda {
namespace {

// "file.cpp:12" without the build's directories.
std::string Place(const char *file, int line) {
  std::string f = file;
  const size_t slash = f.find_last_of('/');
  return (slash == std::string::npos ? f : f.substr(slash + 1)) + ":" + std::to_string(line);
}

} // namespace

bool EnvSwitch(const char *name, bool default_on) {
  const char *v = std::getenv(name);
  if (v != nullptr && std::strcmp(v, "1") == 0)
    return true;
  if (v != nullptr && std::strcmp(v, "0") == 0)
    return false;
  return default_on;
}

Status CudaError(cudaError_t err, const char *what, const char *file, int line) {
  // A launch or allocation error is not sticky; reading it clears it, so
  // the next check reports its own call. Sticky errors (a kernel's illegal
  // address) stay and fail every later call, each saying so.
  cudaGetLastError();
  return Internal(std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ") in " + what + " at " + Place(file, line));
}

Status CublasError(cublasStatus_t st, const char *what, const char *file, int line) {
  return Internal(std::string("cuBLASLt error ") + cublasLtGetStatusName(st) + " (" +
                  cublasLtGetStatusString(st) + ") in " + what + " at " + Place(file, line));
}

StatusOr<void *> OpScratch(ExecContext &ctx, uint64_t bytes) {
  auto *owner = dynamic_cast<ScratchOwner *>(ctx.backend);
  if (!owner)
    return Internal("OpScratch needs the context of a cuda backend, not of '" +
                    std::string(ctx.backend ? ctx.backend->name() : "none") + "'");
  return owner->Scratch(bytes);
}

} // namespace kiln::cuda
