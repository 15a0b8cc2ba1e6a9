#include "index_errors.h"

#include "cuda_util.h"

#include <mutex>
#include <string>

namespace kiln::cuda {
namespace {

using kernels::cuda::IndexError;
using kernels::cuda::IndexOp;

constexpr int kMaxDevices = 64;

std::mutex &RecordsMutex() {
  static std::mutex mu;
  return mu;
}

// One record per device ordinal for the life of the process (never freed:
// kernels of any backend on that device may still point at it).
IndexError **Records() {
  static IndexError *records[kMaxDevices] = {};
  return records;
}

StatusOr<int> CurrentDevice() {
  int device = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    return Internal("CUDA device " + std::to_string(device) + " is beyond the " +
                    std::to_string(kMaxDevices) + " devices index checks support");
  return device;
}

const char *OpName(int32_t op) {
  switch (static_cast<IndexOp>(op)) {
  case IndexOp::kGather:
    return "gather";
  case IndexOp::kGatherND:
    return "gather_nd";
  case IndexOp::kScatterND:
    return "scatter_nd";
  default:
    return "an index op";
  }
}

} // namespace

StatusOr<IndexError *> DeviceIndexErrors(cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(int device, CurrentDevice());
  std::lock_guard<std::mutex> lock(RecordsMutex());
  IndexError *&record = Records()[device];
  if (record == nullptr) {
    void *p = nullptr;
    KILN_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, sizeof(IndexError)));
    cudaError_t err = cudaMemsetAsync(p, 0, sizeof(IndexError), stream);
    if (err == cudaSuccess)
      err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
      cudaFree(p);
      return CudaError(err, "clearing the index error record", __FILE__, __LINE__);
    }
    record = static_cast<IndexError *>(p);
  }
  return record;
}

Status TakeIndexError(cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(int device, CurrentDevice());
  IndexError *record = nullptr;
  {
    std::lock_guard<std::mutex> lock(RecordsMutex());
    record = Records()[device];
  }
  if (record == nullptr)
    return Status::Ok();
  IndexError e;
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&e, record, sizeof(e), cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (e.op == 0)
    return Status::Ok();
  KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(record, 0, sizeof(IndexError), stream));
  return InvalidArgument(std::string(OpName(e.op)) + ": index " + std::to_string(e.value) +
                         " (at position " + std::to_string(e.position) +
                         " of indices) is out of range for dim " + std::to_string(e.dim) +
                         " of size " + std::to_string(e.dim_size) +
                         " (found on the device; that run's results are not valid)");
}

} // namespace kiln::cuda
