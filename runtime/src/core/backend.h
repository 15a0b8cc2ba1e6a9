// The seam between the executor and the hardware. A Backend owns memory in
// its own space, holds the plan's weights there (uploaded once), moves bytes
// to and from the host, runs kernels from its own table with its execution
// context, and waits for them. The executor, its arena, the engine's KV
// cache and the logits readback all go through it; nothing above core/
// allocates device memory or knows which backend it is on.
//
// The cpu backend (backends/cpu/cpu_backend.h) is the reference and is
// always built. docs/architecture.md has the checklist for adding one.
#pragma once

#include "core/kernel.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

// How one op reads the plan's tensors; a backend's weight upload looks at
// these to choose a layout per weight (the CPU packs matrix-product
// operands, a GPU may transpose or interleave them).
struct WeightUse {
  std::string_view op_type;
  const OpAttrs *attrs = nullptr;
  const std::vector<int> *inputs = nullptr; // plan tensor ids, -1 for omitted
};

struct UploadStats {
  int packed_weights = 0;    // weights stored in a backend-specific layout
  uint64_t packed_bytes = 0; // bytes those copies hold
  int released_weights = 0;  // of those, weights whose mapped pages were given back
  int narrowed_weights = 0;  // of those, f32 weights held exactly in bf16 or f16
  uint64_t device_bytes = 0; // bytes of weights copied into device memory
};

// A device's memory, for sizing the KV cache by a fraction of what is free.
struct DeviceMemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class Backend {
public:
  virtual ~Backend() = default;

  // "cpu", "cuda": the name `kiln build --target` and `--backend` take.
  virtual const char *name() const = 0;
  // Where Allocate's memory lives. kHost: the host may read and write it.
  virtual MemorySpace memory_space() const = 0;

  // The backend's kernels; an op type it lacks makes a plan unrunnable here.
  virtual const KernelTable &kernels() const = 0;
  virtual ExecContext &context() = 0;

  // Memory in the backend's space, aligned to `alignment` (a power of two,
  // at least 64). ResourceExhausted, naming the size, when it is not there.
  virtual StatusOr<void *> Allocate(uint64_t bytes, uint64_t alignment) = 0;
  virtual void Free(void *ptr) = 0;

  // Makes the plan's weights readable by this backend's kernels, once per
  // plan and backend: fills `data` (indexed by tensor id) with the pointer
  // each weight's kernels read. `uses` tells how ops read them. The plan must
  // outlive the backend's use of the pointers.
  virtual Status UploadWeights(const Plan &plan, const std::vector<WeightUse> &uses,
                               std::vector<void *> &data, UploadStats &stats) = 0;

  // Byte copies between host memory and this backend's memory, ordered
  // after every kernel already enqueued. CopyToHost returns once `dst` holds
  // the bytes.
  virtual Status CopyFromHost(void *dst, const void *src, uint64_t bytes) = 0;
  virtual Status CopyToHost(void *dst, const void *src, uint64_t bytes) = 0;

  // Waits for every enqueued kernel and copy.
  virtual Status Synchronize() = 0;

  // Device-side timing, for the profiler. Mark(i) records mark i in stream
  // order, after every kernel enqueued before it, without waiting;
  // MarkSeconds(n) waits for marks 0..n-1 and gives each one's seconds after
  // mark 0. Unimplemented on a backend whose kernels run on the calling
  // thread (the profiler then waits after each op and reads the host clock).
  virtual Status Mark(int index) {
    (void)index;
    return Unimplemented(std::string("the ") + name() + " backend has no device timing");
  }
  virtual StatusOr<std::vector<double>> MarkSeconds(int count) {
    (void)count;
    return Unimplemented(std::string("the ") + name() + " backend has no device timing");
  }

  // Free and total memory of a device backend's device, now; Unimplemented
  // for a backend whose memory is the host's.
  virtual StatusOr<DeviceMemoryInfo> MemoryInfo() {
    return Unimplemented(std::string("the ") + name() + " backend does not report device memory");
  }

  // Host memory that this backend's copies may read asynchronously, and
  // that a captured run reads again at each replay (pinned memory on CUDA).
  // The executor keeps the host tensors that device ops read there. The
  // default is plain host memory. FreeHost waits for the work that may
  // still read it.
  virtual StatusOr<void *> AllocateHost(uint64_t bytes);
  virtual void FreeHost(void *ptr);

  // Capture and replay of a run (CUDA graphs, docs/gpu.md). Between
  // BeginCapture and EndCapture, the kernels and copies enqueued on the
  // backend's stream (a communicator's collectives on it too) are recorded
  // instead of run; EndCapture makes them one replayable unit, Replay
  // enqueues it. A failed capture (an op that synchronizes or allocates)
  // ends in EndCapture's error, and the stream is usable again. The
  // default backend cannot capture.
  class CapturedRun {
  public:
    virtual ~CapturedRun() = default;
  };
  virtual bool CanCapture() const { return false; }
  virtual Status BeginCapture() {
    return Unimplemented(std::string("the ") + name() + " backend cannot capture runs");
  }
  virtual StatusOr<std::unique_ptr<CapturedRun>> EndCapture() {
    return Unimplemented(std::string("the ") + name() + " backend cannot capture runs");
  }
  virtual Status Replay(const CapturedRun & /*run*/) {
    return Unimplemented(std::string("the ") + name() + " backend cannot capture runs");
  }
  // Changes whenever memory the kernels use besides their operands (op
  // scratch) moves: a run captured at another epoch must not be replayed.
  virtual uint64_t scratch_epoch() const { return 0; }
};

// Memory from a backend, freed through it when the handle goes away.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  static StatusOr<DeviceBuffer> Allocate(Backend &backend, uint64_t bytes, uint64_t alignment = 64);
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { Reset(); }

  void *data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  void Reset();

private:
  Backend *backend_ = nullptr;
  void *data_ = nullptr;
  uint64_t bytes_ = 0;
};

// The op types of the plan that `kernels` lacks, sorted, each once. Host
// ops (shape arithmetic, run on the host during Bind) are not counted.
std::vector<std::string> MissingKernels(const Plan &plan, const KernelTable &kernels);
// InvalidArgument naming the missing op types and the backend, or Ok.
Status CheckPlanRunsOn(const Plan &plan, const KernelTable &kernels, std::string_view backend);

} // namespace kiln
