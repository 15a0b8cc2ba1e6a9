// Runs a loaded plan's graph on a backend (the CPU unless told otherwise).
//
// Bind(inputs) runs the shape pass: it infers every tensor's shape for the
// bound input shapes, evaluates `host` ops (shape arithmetic) right away on
// host memory, sizes each memory-plan slot as its largest tensor, and lays
// the slots out in one arena allocation in the backend's memory, reused
// while it is large enough. The result of that pass is cached per input
// signature (shapes, and the values of the inputs the pass reads). Run()
// then enqueues the remaining ops in plan order on the backend, or replays
// a captured run of them (SetGraphs). Create uploads the weights once through the backend: the CPU
// reads them in place from the plan's mapping, except the right operands of
// matrix products, which it packs into the layout the product kernels
// stream (SetCpuWeightPacking in kiln/cpu.h turns that off).
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

class Backend;     // runtime/src/core/backend.h
class KernelTable; // runtime/src/core/kernel.h

class Executor {
public:
  // Resolves each op's shape rule and kernel, decodes its attributes and
  // uploads the weights. InvalidArgument naming every op type the backend
  // has no kernel for. `plan` and `backend` must outlive the executor; the
  // first form runs on a CPU backend of its own.
  static StatusOr<std::unique_ptr<Executor>> Create(const Plan &plan);
  static StatusOr<std::unique_ptr<Executor>> Create(const Plan &plan, Backend &backend);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  // Binds the graph inputs, in plan.inputs() order. Each must match its
  // plan dtype and rank, its static dims, and (across inputs) the value of
  // each named dim. An input may be in host memory or (space kDevice) in the
  // backend's; a device backend copies host inputs into its arena at Run().
  // Inputs whose values decide shapes must be in host memory. The data must
  // stay valid and unchanged until the last Run() of this binding: host ops
  // read it now, the other ops at Run().
  Status Bind(const std::vector<TensorView> &inputs);

  // Enqueues the bound graph on the backend; on the CPU it has run when
  // this returns. Errors name the op (ONNX node name and type).
  Status Run();

  // Captured runs (CUDA graphs; off by default, and only on a backend that
  // can capture): with this on, Run() records the ops of a binding once
  // (after one eager run, which sizes the op scratch) and from then on
  // replays the recording while the binding's layout cache entry, arena,
  // device inputs and op scratch are the same. Host inputs are still
  // copied in before each replay, so their values may change between runs
  // of one shape. A capture that fails leaves that binding eager. Results
  // are the same either way: the same kernels run on the same memory. Set
  // it before Bind: a binding made with it on keeps its host tensors (shape
  // arithmetic that device ops read) where each replay can read them.
  void SetGraphs(bool on);
  bool graphs() const;

  // Inputs from an untrusted caller (kiln exec): on a device backend, whose
  // paged attention reads its index arrays unchecked (the engine checks
  // them once per step), Bind checks them first (CheckPagedIndices'
  // errors). The CPU kernels check their own; off by default.
  void SetCheckPagedInputs(bool on);
  // Waits until the last Run() has finished on the backend; an error a
  // device kernel raised surfaces here.
  Status Wait();

  // Graph outputs of the last Run(), in plan.outputs() order. The views
  // point into the arena, the inputs or the weights, in the memory space
  // their `space` says, and stay valid until the next Bind().
  std::vector<TensorView> outputs() const;
  const TensorView &output(int index) const;
  // Copies output `index` into host memory at `dst` (output(index).bytes()
  // bytes), after the run finished.
  Status CopyOutputToHost(int index, void *dst) const;

  Backend &backend() const;

  struct Stats {
    uint64_t arena_bytes = 0;    // bytes the current binding uses
    uint64_t arena_capacity = 0; // bytes allocated
    int arena_allocations = 0;   // times the arena was (re)allocated
    int shape_passes = 0;        // Bind()s that ran the shape pass
    int layout_cache_hits = 0;   // Bind()s served from the layout cache
    int packed_weights = 0;      // weights packed for matrix products at Create
    uint64_t packed_bytes = 0;   // bytes those packed copies hold
    int released_weights = 0;    // of those, weights whose mapped pages were released
    int narrowed_weights = 0;    // of those, f32 weights packed exactly in bf16 or f16
    uint64_t device_bytes = 0;   // bytes of weights copied into a device backend's memory
    int graph_captures = 0;      // runs captured (SetGraphs)
    int graph_replays = 0;       // Run()s served by replaying one
    int graph_failures = 0;      // captures that failed (those bindings run eagerly)
  };
  const Stats &stats() const;

  // Where a run's time goes, per op type. With profiling on, Run() waits
  // for the backend after every op and charges the time to the op's type,
  // so a device op is timed whole (launch and execution, nothing
  // overlapped) and the sum is slower than a plain run: for measurement
  // only. Bind()'s shape pass and Run()'s input staging are timed too.
  // KILN_PROFILE=1 in the environment turns it on for every executor and
  // prints ProfileTable() to stderr when the executor is destroyed.
  // On a device backend each op is timed on the device, by marks recorded
  // between ops with no wait, so launches overlap as in a plain run. With
  // KILN_PROFILE=shape ops are told apart by type and operand shape (the
  // rows x K x N of a product), else by type alone. Every entry carries the
  // floating-point operations and bytes its ops must do at least
  // (core/op_cost.h), for a roofline: the table divides them by the time
  // and, given KILN_PEAK_GBPS and KILN_PEAK_TFLOPS, shows the fraction of
  // those peaks reached.
  // With whole_graphs (KILN_PROFILE=graph), a run that the executor serves
  // through a captured graph (SetGraphs) stays one: it is timed whole and
  // charged to one entry, "graph replay" (or "graph capture", or "graph
  // eager run" for a binding's first run and one that cannot be
  // captured), with the costs of its ops
  // summed; other runs are timed per op as above. That is the device's time
  // for a replayed step, which beside the step's wall time in a plain run
  // says how long the device waits for the host between steps.
  struct OpTime {
    std::string type; // op type, and with KILN_PROFILE=shape its shape
    int64_t calls = 0;
    double seconds = 0;
    double flops = 0; // estimated, summed over calls
    double bytes = 0; // estimated device-memory traffic, summed over calls
  };
  struct Profile {
    std::vector<OpTime> ops; // most time first
    int64_t runs = 0, binds = 0;
    double run_seconds = 0;     // Run() in all, staging and waits included
    double stage_seconds = 0;   // copying host inputs to the backend
    double bind_seconds = 0;    // Bind(): checks, shape pass or cache hit, layout
    bool device_timing = false; // ops timed by device marks, not host waits
  };
  void SetProfiling(bool on, bool whole_graphs = false);
  Profile profile() const;
  // The profile as a table: per op type, calls and milliseconds per run and
  // the share of the ops' time.
  std::string ProfileTable() const;
  // The data pointer a tensor had in the last binding (for tests of slot
  // sharing); nullptr for unknown ids.
  const void *TensorData(int tensor_id) const;

private:
  // Create with the table that runs host ops (shape arithmetic during
  // Bind): the CPU's. Core names no backend, so the runtime's registry
  // (backends/registry.cpp), which defines both Creates, hands it over.
  static StatusOr<std::unique_ptr<Executor>>
  CreateWithHostKernels(const Plan &plan, Backend &backend, const KernelTable &host_kernels);
  struct Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln
