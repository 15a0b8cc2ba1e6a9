// Private state of kiln::Executor, shared by executor.cpp (ops, Run) and
// executor_bind.cpp (shape pass, arena layout, layout cache).
#pragma once

#include "core/backend.h"
#include "core/shape_table.h"
#include "kiln/executor.h"
#include "op_attrs.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct ExecOp {
  std::string type;
  const ShapeRule *rule = nullptr;
  // The backend's kernel; for a host op, the host's (CPU) kernel, which
  // runs during Bind on host memory.
  const KernelDef *kernel = nullptr;
  OpAttrs attrs;
  std::string label; // "op 'name' (type)" for errors
  std::vector<int> inputs, outputs;
  bool host = false; // outputs are host tensors: evaluated during Bind
  // Pointers into Impl::views, fixed at Create so Run() allocates nothing.
  std::vector<const TensorView *> in;
  std::vector<TensorView> out;
};

// What one shape pass produced; restoring it replaces the pass.
struct BoundLayout {
  std::vector<Shape> shapes;                   // per tensor (activations)
  std::vector<std::vector<uint8_t>> host_data; // per tensor (host tensors)
  std::vector<uint64_t> slot_offsets;
  // Where each graph input that arrives in host memory is staged in the
  // arena for a device backend (empty on a host backend, which reads inputs
  // in place).
  std::vector<uint64_t> input_offsets;
  uint64_t arena_bytes = 0;
};

// Where a captured run read and wrote: replaying it is only right while
// these are unchanged.
struct CaptureKey {
  void *arena = nullptr;
  std::vector<const void *> inputs; // each bound input's data (device inputs)
  uint64_t scratch_epoch = 0;
  bool operator==(const CaptureKey &o) const {
    return arena == o.arena && inputs == o.inputs && scratch_epoch == o.scratch_epoch;
  }
};

// One layout cache entry: a shape pass's result, where its host tensors
// live while the entry does, and its captured run (executor_graph.cpp).
struct CacheEntry {
  CacheEntry() = default;
  CacheEntry(const CacheEntry &) = delete;
  CacheEntry &operator=(const CacheEntry &) = delete;
  ~CacheEntry() {
    graph.reset();
    if (backend != nullptr)
      backend->FreeHost(host_block);
  }
  BoundLayout layout;
  // Per tensor: the bytes of a host tensor, in host_block (memory the
  // backend's copies may read asynchronously, and a captured run again at
  // each replay; for bindings made with graphs on) or in layout.host_data;
  // nullptr for other tensors.
  std::vector<void *> host_ptrs;
  Backend *backend = nullptr; // owner of host_block
  void *host_block = nullptr;
  std::unique_ptr<Backend::CapturedRun> graph;
  CaptureKey key;
  bool warm = false;         // ran eagerly once (op scratch sized)
  bool uncapturable = false; // a capture failed: always eager
};

struct Executor::Impl {
  const Plan *plan = nullptr;
  std::unique_ptr<Backend> owned_backend; // when Create made its own
  Backend *backend = nullptr;
  std::vector<ExecOp> ops;
  std::vector<TensorView> views; // per tensor, for the current binding
  // Per weight: where the backend's kernels read it (device memory on a
  // device backend); views hold the host mapping during the shape pass.
  std::vector<void *> weight_data;
  // The graph inputs as the caller bound them (host or device memory).
  std::vector<TensorView> bound_inputs;
  // Graph inputs whose values (not only shapes) reach the shape pass, so
  // they belong in the cache signature: see ComputeValueInputs.
  std::vector<bool> value_input;
  uint64_t alignment = 64;
  int num_slots = 0;
  bool bound = false;

  BoundLayout layout;            // a shape pass's result, before it joins the cache
  CacheEntry *current = nullptr; // the current binding's entry
  DeviceBuffer arena;            // in the backend's memory space
  uint64_t arena_capacity = 0;

  // Layout cache: signature -> entry, the least recently used evicted
  // first. A decode loop with CUDA graphs keeps one entry per batch and
  // table-width bucket.
  std::map<std::string, std::unique_ptr<CacheEntry>> cache;
  std::deque<std::string> cache_order;
  static constexpr size_t kCacheEntries = 32;
  // Whether the shape pass sees the values of graph inputs that no host op
  // reads. False until a pass fails without them (a rule of a device op
  // reads a graph input's values, e.g. a Reshape's shape input); from then
  // on the values of every small input are part of the signature.
  bool see_all_values = false;

  // Captured runs (Executor::SetGraphs; executor_graph.cpp).
  bool graphs = false;
  bool check_paged_inputs = false; // SetCheckPagedInputs

  Stats stats;

  // Profiling (Executor::SetProfiling): time per op type, in plan order of
  // first appearance.
  bool profiling = false;
  bool print_profile = false;  // KILN_PROFILE: print at destruction
  bool profile_shapes = false; // KILN_PROFILE=shape: entries per type and shape
  bool profile_graphs = false; // KILN_PROFILE=graph: captured runs timed whole
  int profile_skip = 0;        // KILN_PROFILE_SKIP: runs left out of the profile
  std::map<std::string, Executor::OpTime> op_times;
  Executor::Profile totals; // runs, binds and their seconds (ops unused)

  Status CheckInputs(const std::vector<TensorView> &inputs) const;
  std::string Signature(const std::vector<TensorView> &inputs) const;
  Status ShapePass();
  void LayoutArena();
  Status ApplyLayout();
  Status StageInputs();
  // Moves `layout` into a new cache entry under `sig` (evicting the
  // oldest), with its host tensors in the backend's host memory.
  Status AddEntry(const std::string &sig);
  // Run()'s op loop, eager.
  Status RunOps();
  // Run() through the current entry's captured run: replays it, captures
  // it, or runs eagerly (executor_graph.cpp).
  Status GraphRun();
  // GraphRun after StageInputs.
  Status GraphOps();
  std::vector<uint8_t> stage_buffer; // StageInputs' packed host inputs
  // Run() with profiling on (executor_profile.cpp).
  Status ProfiledRun();
  // A run that GraphRun serves, timed whole (profile_graphs).
  Status ProfiledGraphRun();
  // Both: stages the inputs, waits, and places the first device mark; true
  // when the backend has marks (else runs are timed by waits and the clock).
  StatusOr<bool> BeginProfiledRun();
  void ChargeOp(const ExecOp &op, double seconds);
  Status UploadWeights();
  // Points every weight view at the host mapping (shape pass) or at the
  // backend's copy (Run).
  void WeightViews(bool device);
};

// Charges a Bind() to `totals` when `on`, however the Bind returns.
class BindTimer {
public:
  BindTimer(bool on, Executor::Profile &totals)
      : on_(on), totals_(totals), t0_(std::chrono::steady_clock::now()) {}
  ~BindTimer() {
    if (!on_)
      return;
    totals_.binds += 1;
    totals_.bind_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  BindTimer(const BindTimer &) = delete;
  BindTimer &operator=(const BindTimer &) = delete;

private:
  bool on_;
  Executor::Profile &totals_;
  std::chrono::steady_clock::time_point t0_;
};

} // namespace kiln
