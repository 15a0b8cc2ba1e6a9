// The tensor-parallel collectives a kernel or the engine may call, over the
// ranks of one run (docs/tp-runtime.md). A backend's execution context holds
// one (ExecContext::comm; null with a single rank and no --comm). Buffers of
// AllReduceSum and AllGather are in the backend's memory space and, on a
// device, ordered on its stream; Broadcast moves host bytes (the engine's
// step inputs). Every call is collective: each rank makes the same calls in
// the same order. A failed call (a peer died or timed out) returns an error
// naming the rank when it is known; the communicator is then unusable.
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Backend;

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual const char *name() const = 0; // "gloo", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: `data` (count elements of f32, f16 or bf16) becomes the
  // elementwise sum of every rank's `data`. `stream`: the backend's stream
  // (ExecContext::stream) the call is ordered on; null on the CPU.
  virtual Status AllReduceSum(void *data, int64_t count, DType dtype, void *stream = nullptr) = 0;
  // out = rank 0's `in`, then rank 1's, ...: counts[r] elements of `dtype`
  // from rank r (uneven and zero counts allowed; in has counts[rank()]).
  virtual Status AllGather(const void *in, void *out, const std::vector<int64_t> &counts,
                           DType dtype, void *stream = nullptr) = 0;
  // `bytes` host bytes from `root` to every rank. `timeout` 0: the
  // communicator's; a follower waiting for the next step passes a longer one.
  virtual Status Broadcast(void *data, uint64_t bytes, int root,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  virtual Status Barrier() = 0;
  // Fails every later call at once; for a rank that saw a peer fail.
  virtual void Abort() = 0;
};

// Where and how the ranks of one run meet (docs/tp-runtime.md).
struct RendezvousConfig {
  int rank = 0;
  int world_size = 1;
  // The rendezvous store (comm/store.h): a directory every rank can write
  // (a shared filesystem across hosts), or tcp://HOST:PORT, rank 0's address.
  std::string store_dir;
  // The address this rank's transport listens on, for its peers.
  std::string host = "127.0.0.1";
  // NCCL: the CUDA device of this rank.
  int device = 0;
  // Rendezvous and each collective fail after this long.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

// "gloo" (CPU, host memory) or "nccl" (CUDA, device memory on `backend`'s
// stream). Unavailable, saying what to install, in a kiln built without it.
StatusOr<std::unique_ptr<Communicator>>
CreateCommunicator(const std::string &kind, const RendezvousConfig &config, Backend *backend);
// The kinds this kiln was built with.
std::vector<std::string> CommunicatorKinds();

} // namespace kiln
