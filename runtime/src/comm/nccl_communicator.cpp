// The CUDA communicator: NCCL on the backend's stream. Built into the CUDA
// backend library when nccl.h and libnccl are found (runtime/CMakeLists.txt).
//
// A dead or stuck peer must never hang a rank (docs/tp-runtime.md):
//   - init is nonblocking (ncclConfig_t.blocking = 0) and polled with
//     ncclCommGetAsyncError until the deadline, then ncclCommAbort;
//   - every NCCL call is checked; a call that returns ncclInProgress is
//     polled the same way;
//   - a host wait (Broadcast, Barrier) polls cudaStreamQuery and the async
//     error instead of synchronizing, and aborts the communicator at the
//     deadline, which makes the stuck kernels return.
// The collectives themselves are enqueued on the stream without waiting, so
// a CUDA graph capture records them (NCCL supports capture since 2.9).
#include "comm/nccl_loader.h"
#include "comm/communicator.h"
#include "comm/store.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace kiln::comm {
namespace {

using Clock = std::chrono::steady_clock;

Status NcclError(ncclResult_t r, ncclComm_t comm, const char *what, int line) {
  std::string last = comm ? ncclGetLastError(comm) : "";
  return Internal(std::string("NCCL: ") + what +
                  " failed at nccl_communicator.cpp:" + std::to_string(line) + ": " +
                  ncclGetErrorString(r) + (last.empty() ? "" : " (" + last + ")"));
}

#define KILN_NCCL_CHECK(comm, expr)                                                                \
  do {                                                                                             \
    ncclResult_t kiln_nccl_r_ = (expr);                                                            \
    if (kiln_nccl_r_ == ncclInProgress)                                                            \
      kiln_nccl_r_ = WaitReady(comm, #expr);                                                       \
    if (kiln_nccl_r_ != ncclSuccess)                                                               \
      return NcclError(kiln_nccl_r_, comm, #expr, __LINE__);                                       \
  } while (0)

#define KILN_CUDA_CHECK(expr)                                                                      \
  do {                                                                                             \
    cudaError_t kiln_cuda_e_ = (expr);                                                             \
    if (kiln_cuda_e_ != cudaSuccess)                                                               \
      return Internal(std::string("CUDA: ") + #expr + ": " + cudaGetErrorString(kiln_cuda_e_));    \
  } while (0)

ncclDataType_t NcclType(DType t) {
  switch (t) {
  case DType::kF32:
    return ncclFloat32;
  case DType::kF16:
    return ncclFloat16;
  case DType::kBF16:
    return ncclBfloat16;
  default:
    return ncclUint8; // bytes; counts are scaled by the caller
  }
}

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, std::chrono::milliseconds timeout)
      : comm_(comm), rank_(rank), size_(size), timeout_(timeout) {}
  ~NcclCommunicator() override {
    if (!comm_)
      return;
    // Finalize flushes pending work; a failed or aborted one is only freed.
    if (!aborted_ && ncclCommFinalize(comm_) == ncclSuccess)
      (void)ncclCommDestroy(comm_);
    else
      (void)ncclCommAbort(comm_);
  }

  const char *name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status AllReduceSum(void *data, int64_t count, DType dtype, void *stream) override {
    if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16)
      return InvalidArgument(std::string("all_reduce sums f32, f16 or bf16, not ") +
                             DTypeName(dtype));
    KILN_RETURN_IF_ERROR(Healthy());
    KILN_NCCL_CHECK(comm_, ncclAllReduce(data, data, static_cast<size_t>(count), NcclType(dtype),
                                         ncclSum, comm_, static_cast<cudaStream_t>(stream)));
    return Status::Ok();
  }

  Status AllGather(const void *in, void *out, const std::vector<int64_t> &counts, DType dtype,
                   void *stream) override {
    if (static_cast<int>(counts.size()) != size_)
      return InvalidArgument("all_gather: " + std::to_string(counts.size()) + " counts for " +
                             std::to_string(size_) + " ranks");
    KILN_RETURN_IF_ERROR(Healthy());
    // Uneven counts: one broadcast per rank into its place, grouped so NCCL
    // runs them as one collective.
    const uint64_t elem = DTypeSize(dtype);
    auto *dst = static_cast<uint8_t *>(out);
    KILN_NCCL_CHECK(comm_, ncclGroupStart());
    uint64_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      const uint64_t bytes = static_cast<uint64_t>(counts[r]) * elem;
      if (bytes > 0) {
        ncclResult_t res = ncclBroadcast(r == rank_ ? in : dst + offset, dst + offset, bytes,
                                         ncclUint8, r, comm_, static_cast<cudaStream_t>(stream));
        if (res != ncclSuccess && res != ncclInProgress) {
          (void)ncclGroupEnd();
          return NcclError(res, comm_, "ncclBroadcast", __LINE__);
        }
      }
      offset += bytes;
    }
    KILN_NCCL_CHECK(comm_, ncclGroupEnd());
    return Status::Ok();
  }

  Status Broadcast(void *data, uint64_t bytes, int root,
                   std::chrono::milliseconds timeout) override {
    if (bytes == 0)
      return Status::Ok();
    KILN_RETURN_IF_ERROR(Healthy());
    // Host bytes through a device buffer on a stream of its own.
    KILN_RETURN_IF_ERROR(EnsureStaging(bytes));
    KILN_CUDA_CHECK(cudaMemcpyAsync(staging_, data, bytes, cudaMemcpyHostToDevice, own_stream_));
    KILN_NCCL_CHECK(comm_,
                    ncclBroadcast(staging_, staging_, bytes, ncclUint8, root, comm_, own_stream_));
    KILN_CUDA_CHECK(cudaMemcpyAsync(data, staging_, bytes, cudaMemcpyDeviceToHost, own_stream_));
    return WaitStream(own_stream_, timeout.count() > 0 ? timeout : timeout_, "broadcast");
  }

  Status Barrier() override {
    int64_t one = 0;
    return Broadcast(&one, sizeof(one), 0, std::chrono::milliseconds(0));
  }

  void Abort() override {
    if (comm_ && !aborted_)
      (void)ncclCommAbort(comm_);
    aborted_ = true;
    comm_ = nullptr;
  }

  // Polls a nonblocking call's completion (ncclInProgress) to the deadline.
  ncclResult_t WaitReady(ncclComm_t comm, const char *) {
    const auto deadline = Clock::now() + timeout_;
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
        return ncclInternalError;
      if (state == ncclInProgress && Clock::now() > deadline)
        return ncclInvalidUsage; // reported as a timeout by the caller's message
      if (state == ncclInProgress)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return state;
  }

private:
  Status Healthy() {
    if (!comm_ || aborted_)
      return Internal("NCCL communicator of rank " + std::to_string(rank_) +
                      " was aborted after an earlier failure");
    ncclResult_t state = ncclSuccess;
    KILN_NCCL_CHECK(comm_, ncclCommGetAsyncError(comm_, &state));
    if (state != ncclSuccess && state != ncclInProgress) {
      Status st = NcclError(state, comm_, "an earlier collective (async error)", __LINE__);
      Abort();
      return st;
    }
    return Status::Ok();
  }

  Status EnsureStaging(uint64_t bytes) {
    if (!own_stream_)
      KILN_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
    if (bytes <= staging_bytes_)
      return Status::Ok();
    if (staging_)
      KILN_CUDA_CHECK(cudaFree(staging_));
    staging_ = nullptr;
    KILN_CUDA_CHECK(cudaMalloc(&staging_, bytes));
    staging_bytes_ = bytes;
    return Status::Ok();
  }

  // Waits for `stream` without blocking in the driver, so a peer's death
  // (an async error) or the deadline ends the wait; both abort.
  Status WaitStream(cudaStream_t stream, std::chrono::milliseconds timeout, const char *what) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess)
        return Status::Ok();
      if (q != cudaErrorNotReady)
        return Internal(std::string("CUDA: ") + what + ": " + cudaGetErrorString(q));
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess ||
          (state != ncclSuccess && state != ncclInProgress)) {
        Status st = NcclError(state, comm_, what, __LINE__);
        Abort();
        return Internal("tensor parallel: rank " + std::to_string(rank_) + "'s " + what +
                        " failed (a peer rank exited?): " + st.message());
      }
      if (Clock::now() > deadline) {
        Abort();
        return Internal("tensor parallel: rank " + std::to_string(rank_) + "'s " + what +
                        " waited past the " + std::to_string(timeout.count()) +
                        " ms timeout for its peers; aborted the NCCL communicator");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  ncclComm_t comm_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  bool aborted_ = false;
  cudaStream_t own_stream_ = nullptr;
  void *staging_ = nullptr;
  uint64_t staging_bytes_ = 0;
};

} // namespace

StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const RendezvousConfig &config,
                                                               Backend *) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size)
    return InvalidArgument("rank " + std::to_string(config.rank) + " of world size " +
                           std::to_string(config.world_size));
  if (const Status &nccl = kiln::cuda::LoadNccl(); !nccl.ok())
    return Status(nccl.code(), "--comm nccl cannot start: " + nccl.message());
  KILN_CUDA_CHECK(cudaSetDevice(config.device));
  // Rank 0 makes the id; the others read it from the rendezvous store.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        OpenStore(config.store_dir, config.rank, config.timeout));
  ncclUniqueId id;
  if (config.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      return NcclError(r, nullptr, "ncclGetUniqueId", __LINE__);
    KILN_RETURN_IF_ERROR(
        store->Set("nccl_id", std::vector<char>(id.internal, id.internal + sizeof(id.internal))));
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<char> bytes, store->Get("nccl_id", config.timeout));
    if (bytes.size() != sizeof(id.internal))
      return Internal("rendezvous: the NCCL id in " + config.store_dir + " has " +
                      std::to_string(bytes.size()) + " bytes");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0; // init returns at once; we poll it to a deadline
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, config.world_size, id, config.rank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress)
    return NcclError(r, comm, "ncclCommInitRankConfig", __LINE__);
  auto out =
      std::make_unique<NcclCommunicator>(comm, config.rank, config.world_size, config.timeout);
  if (r == ncclInProgress) {
    const ncclResult_t ready = out->WaitReady(comm, "ncclCommInitRankConfig");
    if (ready != ncclSuccess) {
      out->Abort();
      return Internal("tensor parallel: rank " + std::to_string(config.rank) + " of " +
                      std::to_string(config.world_size) + ": NCCL init did not complete within " +
                      std::to_string(config.timeout.count()) +
                      " ms (a rank did not start?): " + ncclGetErrorString(ready));
    }
  }
  return std::unique_ptr<Communicator>(std::move(out));
}

} // namespace kiln::comm
