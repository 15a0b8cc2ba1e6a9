// CudaBackend: device memory, the weight upload, copies on the backend's
// stream, and the CUDA kernel table.
#include "backends/cuda/cuda_backend.h"

#include "backends/cuda/cuda_graphs.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/index_errors.h"
#include "backends/cuda/cublaslt_loader.h"
#include "kernels/cuda/launch.h"
#include "kiln/plan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

namespace kiln::cuda {
namespace {

// Weights are laid out at this alignment in the one device allocation that
// holds them all: a multiple of every vector width a kernel loads with, and
// of the 256 bytes cuBLASLt prefers for its operands.
constexpr uint64_t kWeightAlign = 256;
// The upload streams the plan's mapping through this many pinned host
// buffers of this size: one is filled from the mapping while the others'
// copies to the device run.
constexpr int kStagingBuffers = 3;
constexpr uint64_t kStagingBytes = 32ull << 20;

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Pinned staging buffers and the event that says each is free again.
// Destroyed after a synchronize, so no copy still reads one.
class Staging {
public:
  ~Staging() {
    // After a failed copy some may still be read: wait for each first.
    for (int i = 0; i < kStagingBuffers; ++i) {
      if (events_[i]) {
        cudaEventSynchronize(events_[i]);
        cudaEventDestroy(events_[i]);
      }
      if (host_[i])
        cudaFreeHost(host_[i]);
    }
  }
  Status Init() {
    for (int i = 0; i < kStagingBuffers; ++i) {
      KILN_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&host_[i], kStagingBytes, cudaHostAllocDefault));
      KILN_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming));
    }
    return Status::Ok();
  }
  // Copies `bytes` from host `src` to device `dst` on `stream` in chunks,
  // each staged through the next free pinned buffer.
  Status Copy(void *dst, const void *src, uint64_t bytes, cudaStream_t stream) {
    const auto *from = static_cast<const uint8_t *>(src);
    auto *to = static_cast<uint8_t *>(dst);
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = std::min(kStagingBytes, bytes - done);
      // Waits until the copy that last read this buffer has finished.
      KILN_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events_[next_]));
      std::memcpy(host_[next_], from + done, n);
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(to + done, host_[next_], n, cudaMemcpyHostToDevice, stream));
      KILN_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[next_], stream));
      next_ = (next_ + 1) % kStagingBuffers;
      done += n;
    }
    return Status::Ok();
  }

private:
  void *host_[kStagingBuffers] = {};
  cudaEvent_t events_[kStagingBuffers] = {};
  int next_ = 0;
};

class CudaBackend : public Backend, public ScratchOwner {
public:
  explicit CudaBackend(int device) : device_(device) { ctx_.backend = this; }
  ~CudaBackend() override {
    // Errors here have nowhere to go; the device is being let go.
    cudaSetDevice(device_);
    if (stream_)
      cudaStreamSynchronize(stream_);
    for (void *p : weights_)
      cudaFree(p);
    if (scratch_)
      cudaFree(scratch_);
    if (ctx_.workspace.data)
      cudaFree(ctx_.workspace.data);
    for (cudaEvent_t e : marks_)
      cudaEventDestroy(e);
    if (blas_)
      cublasLtDestroy(blas_);
    if (stream_)
      cudaStreamDestroy(stream_);
  }

  Status Init() {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&blas_));
    KILN_CUDA_RETURN_IF_ERROR(cudaMalloc(&ctx_.workspace.data, kCublasWorkspaceBytes));
    ctx_.workspace.bytes = kCublasWorkspaceBytes;
    ctx_.stream = stream_;
    ctx_.blas = blas_;
    // The index kernels' error record, allocated now rather than by the
    // first index op (which could be inside a captured CUDA graph).
    KILN_RETURN_IF_ERROR(DeviceIndexErrors(stream_).status());
    return Status::Ok();
  }

  const char *name() const override { return "cuda"; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const KernelTable &kernels() const override { return CudaKernels(); }
  // Kernels launch on ctx_.stream, which belongs to this backend's device:
  // make that device current for the calling thread (a pipeline may run on
  // another thread than the one that created the backend, whose current
  // device would be 0). Init already proved the index valid.
  ExecContext &context() override {
    cudaSetDevice(device_);
    return ctx_;
  }

  StatusOr<void *> Allocate(uint64_t bytes, uint64_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
    if (bytes > (uint64_t{1} << 60) || alignment > (uint64_t{1} << 30))
      return Status(StatusCode::kResourceExhausted, "cannot allocate " + std::to_string(bytes) +
                                                        " bytes aligned to " +
                                                        std::to_string(alignment) + " on a GPU");
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // cudaMalloc aligns to 256 bytes; a larger alignment over-allocates and
    // remembers the pointer cudaMalloc gave.
    const uint64_t extra = alignment > 256 ? alignment : 0;
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, std::max<uint64_t>(bytes + extra, 1));
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError(); // clear it, so the next check does not report it
      return Status(StatusCode::kResourceExhausted,
                    "cannot allocate " + std::to_string(bytes) + " bytes on cuda:" +
                        std::to_string(device_) + " (" + FreeMemoryNote() + ")");
    }
    KILN_CUDA_RETURN_IF_ERROR(err);
    if (extra == 0)
      return p;
    void *aligned = reinterpret_cast<void *>(AlignUp(reinterpret_cast<uintptr_t>(p), alignment));
    over_aligned_[aligned] = p;
    return aligned;
  }
  void Free(void *ptr) override {
    if (!ptr)
      return;
    auto it = over_aligned_.find(ptr);
    if (it != over_aligned_.end()) {
      ptr = it->second;
      over_aligned_.erase(it);
    }
    cudaSetDevice(device_);
    cudaFree(ptr); // waits for the device, so no kernel still reads it
  }

  Status UploadWeights(const Plan &plan, const std::vector<WeightUse> &uses,
                       std::vector<void *> &data, UploadStats &stats) override;

  Status CopyFromHost(void *dst, const void *src, uint64_t bytes) override {
    if (bytes == 0)
      return Status::Ok();
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // From pageable memory (every caller's today) the driver copies `src`
    // out before returning, so the caller may reuse it at once; from pinned
    // memory the copy is asynchronous and `src` must stay unchanged until
    // the next Synchronize or CopyToHost. The device side is in stream order.
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    return Status::Ok();
  }
  Status CopyToHost(void *dst, const void *src, uint64_t bytes) override {
    if (bytes == 0)
      return Synchronize();
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    return Synchronize();
  }
  Status Synchronize() override {
    // A kernel's failure (an illegal address) shows at the next wait.
    Status st = [&]() -> Status {
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
      return Status::Ok();
    }();
    if (!st.ok())
      return st.WithContext(
          "waiting for the cuda stream (a kernel enqueued before may have failed)");
    // An index kernel that met an out-of-range index says so here.
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return TakeIndexError(stream_);
  }

  StatusOr<DeviceMemoryInfo> MemoryInfo() override {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    DeviceMemoryInfo info;
    size_t free_bytes = 0, total_bytes = 0;
    KILN_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
    return info;
  }

  Status Mark(int index) override {
    if (index < 0 || index > (1 << 20))
      return InvalidArgument("timing mark " + std::to_string(index) + " is out of range");
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    while (marks_.size() <= static_cast<size_t>(index)) {
      cudaEvent_t e = nullptr;
      KILN_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
      marks_.push_back(e);
    }
    KILN_CUDA_RETURN_IF_ERROR(cudaEventRecord(marks_[index], stream_));
    return Status::Ok();
  }
  StatusOr<std::vector<double>> MarkSeconds(int count) override {
    if (count < 0 || static_cast<size_t>(count) > marks_.size())
      return InvalidArgument("asked for " + std::to_string(count) + " timing marks, " +
                             std::to_string(marks_.size()) + " recorded");
    std::vector<double> seconds(count, 0.0);
    if (count == 0)
      return seconds;
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    KILN_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(marks_[count - 1]));
    for (int i = 1; i < count; ++i) {
      float ms = 0;
      KILN_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, marks_[0], marks_[i]));
      seconds[i] = 1e-3 * ms;
    }
    return seconds;
  }

  // Pinned, so copies from it are asynchronous and can be captured.
  StatusOr<void *> AllocateHost(uint64_t bytes) override {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    void *p = nullptr;
    cudaError_t err = cudaHostAlloc(&p, std::max<uint64_t>(bytes, 1), cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return Status(StatusCode::kResourceExhausted,
                    "cannot allocate " + std::to_string(bytes) + " bytes of pinned host memory");
    }
    KILN_CUDA_RETURN_IF_ERROR(err);
    return p;
  }
  void FreeHost(void *ptr) override {
    if (!ptr)
      return;
    // A copy enqueued before may still read it. Errors have nowhere to go.
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaFreeHost(ptr);
  }

  bool CanCapture() const override { return true; }
  Status BeginCapture() override {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return BeginGraphCapture(stream_);
  }
  StatusOr<std::unique_ptr<CapturedRun>> EndCapture() override {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return EndGraphCapture(stream_);
  }
  Status Replay(const CapturedRun &run) override {
    KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return LaunchGraph(run, stream_);
  }
  uint64_t scratch_epoch() const override { return scratch_epoch_; }

  // ScratchOwner: one buffer for every op's intermediates. Growing it waits
  // for the stream (an op enqueued before may still use the old buffer),
  // frees it and allocates the larger size, rounded up to 2 MiB and at
  // least half again the old size, so a growing batch reallocates rarely.
  // A captured CUDA graph must not grow it: run once uncaptured first.
  StatusOr<void *> Scratch(uint64_t bytes) override {
    if (bytes <= scratch_bytes_)
      return scratch_;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    if (scratch_)
      KILN_CUDA_RETURN_IF_ERROR(cudaFree(scratch_));
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    const uint64_t want =
        AlignUp(std::max(bytes, scratch_bytes_grown_ + scratch_bytes_grown_ / 2), 2ull << 20);
    ++scratch_epoch_; // captured runs that used the old buffer are stale
    KILN_ASSIGN_OR_RETURN(scratch_, Allocate(want, 256));
    scratch_bytes_ = want;
    scratch_bytes_grown_ = want;
    return scratch_;
  }
  uint64_t scratch_bytes() const override { return scratch_bytes_; }

private:
  std::string FreeMemoryNote() {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      return "free memory unknown";
    }
    return std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total_bytes >> 20);
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  ExecContext ctx_;
  std::vector<cudaEvent_t> marks_;        // the profiler's timing marks
  std::vector<void *> weights_;           // one allocation per UploadWeights
  std::map<void *, void *> over_aligned_; // Allocate's result -> cudaMalloc's
  void *scratch_ = nullptr;
  uint64_t scratch_bytes_ = 0, scratch_bytes_grown_ = 0;
  uint64_t scratch_epoch_ = 0;
};

Status CudaBackend::UploadWeights(const Plan &plan, const std::vector<WeightUse> & /*uses*/,
                                  std::vector<void *> &data, UploadStats &stats) {
  KILN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  const auto &tensors = plan.tensors();
  data.assign(tensors.size(), nullptr);
  // Every weight once, in plan order; weights that are the same bytes of
  // the mapping (a tied embedding) share one copy.
  std::map<std::pair<const void *, uint64_t>, uint64_t> offsets;
  std::vector<std::pair<size_t, uint64_t>> placed; // tensor id, offset
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor &t = tensors[i];
    if (t.kind != TensorKind::kWeight || t.data == nullptr)
      continue;
    auto [it, fresh] = offsets.emplace(std::pair{t.data, t.size}, total);
    if (fresh)
      total = AlignUp(total + t.size, kWeightAlign);
    placed.push_back({i, it->second});
  }
  if (placed.empty())
    return Status::Ok();
  StatusOr<void *> base = Allocate(total, kWeightAlign);
  if (!base.ok())
    return Status(base.status().code(), "cannot hold the plan's " + std::to_string(total >> 20) +
                                            " MiB of weights: " + base.status().message());
  auto *device = static_cast<uint8_t *>(*base);
  Status copied = [&]() -> Status {
    Staging staging; // freed on return, after its copies finished
    KILN_RETURN_IF_ERROR(staging.Init());
    // In offset order, so the mapping is read front to back.
    std::vector<std::pair<uint64_t, std::pair<const void *, uint64_t>>> order;
    for (const auto &[key, offset] : offsets)
      order.push_back({offset, key});
    std::sort(order.begin(), order.end());
    for (const auto &[offset, key] : order)
      KILN_RETURN_IF_ERROR(staging.Copy(device + offset, key.first, key.second, stream_));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }();
  if (!copied.ok()) {
    Free(device);
    return copied.WithContext("uploading the plan's weights");
  }
  weights_.push_back(device);
  for (const auto &[id, offset] : placed)
    data[id] = device + offset;
  stats.device_bytes += total;
  return Status::Ok();
}

} // namespace

int CudaDeviceCount() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(int device) {
  // cuBLASLt is opened now (lazy_library.h), so its absence is one message.
  if (const Status &lt = LoadCublasLt(); !lt.ok())
    return Status(lt.code(), "the CUDA backend cannot start: " + lt.message());
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return InvalidArgument(std::string("no CUDA device visible: ") + cudaGetErrorString(err) +
                           " (is the NVIDIA driver loaded, and CUDA_VISIBLE_DEVICES unset or "
                           "naming a device?)");
  }
  if (n == 0)
    return InvalidArgument("no CUDA device visible: the driver reports none (is "
                           "CUDA_VISIBLE_DEVICES empty?)");
  if (device < 0 || device >= n)
    return InvalidArgument("no CUDA device cuda:" + std::to_string(device) + "; " +
                           std::to_string(n) + " visible (cuda:0" +
                           (n > 1 ? " .. cuda:" + std::to_string(n - 1) : std::string()) + ")");
  // KILN_PDL=1: the decode step's small kiln kernels (norms, rotary, split,
  // decode attention) may launch while the kernel ahead of them drains
  // (kernels/cuda/launch.h). Off by default: 1.4% slower at batch 1 on the
  // 8B on an H100 (docs/gpu.md).
  static const bool programmatic = EnvSwitch("KILN_PDL", false);
  kiln::kernels::cuda::SetProgrammaticLaunch(programmatic);
  auto backend = std::make_unique<CudaBackend>(device);
  KILN_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<Backend>(std::move(backend));
}

namespace {

KernelTable BuildTable() {
  std::vector<KernelDef> defs;
  for (const KernelFamily &f : CudaKernelFamilies())
    f.add(defs);
  AddSamplingKernels(defs); // the engine's own kernel, no plan op
  return KernelTable(std::move(defs));
}

} // namespace

const std::vector<KernelFamily> &CudaKernelFamilies() {
  static const std::vector<KernelFamily> families = {
      {OpFamily::kPointwise, AddPointwiseKernels},
      {OpFamily::kPointwise, AddPointwiseBinaryKernels},
      {OpFamily::kPointwise, AddGeluKernels},
      {OpFamily::kMovement, AddMovementKernels},
      {OpFamily::kGather, AddGatherKernels},
      {OpFamily::kReduce, AddReduceKernels},
      {OpFamily::kNorm, AddNormKernels},
      {OpFamily::kProducts, AddProductsKernels},
      {OpFamily::kAttention, AddAttentionKernels},
      {OpFamily::kAttention, AddRotaryKernels},
      {OpFamily::kCollective, AddCollectiveKernels},
  };
  return families;
}

const KernelTable &CudaKernels() {
  static const KernelTable table = BuildTable();
  return table;
}

} // namespace kiln::cuda
