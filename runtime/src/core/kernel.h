// What a backend's kernel is: a function of an execution context, the op's
// attributes, its operands and its results. Every backend fills a table of
// these (the CPU's is cpu::CpuKernels(); CUDA's comes next); the shape of
// each result was already decided by the backend-neutral shape table
// (core/shape_table.h), so a kernel only computes.
#pragma once

#include "core/op_attrs.h"
#include "core/op_list.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Backend;
class Communicator; // tensor-parallel collectives (comm/)

// Inputs are in plan order; an omitted optional operand is nullptr.
using Inputs = std::vector<const TensorView *>;
using Outputs = std::vector<TensorView>;

// Scratch memory a kernel may use for the duration of one op, in the
// backend's memory space. Owned by the backend; empty when it has none.
struct Workspace {
  void *data = nullptr;
  uint64_t bytes = 0;
};

// Runs fn(begin, end) over [0, n) in ranges of at least `grain` items, on
// the backend's worker threads; returns when all ranges are done.
class ThreadPool {
public:
  virtual ~ThreadPool() = default;
  virtual void ParallelFor(int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)> &fn) = 0;
};

// Everything a kernel may need beyond its operands. One per executor and
// backend; kernels must not keep pointers into it across calls.
struct ExecContext {
  Backend *backend = nullptr;
  void *stream = nullptr;        // the backend's stream (cudaStream_t); null on the CPU
  Workspace workspace;           // per-op scratch
  void *blas = nullptr;          // library handle (cublasLtHandle_t); null on the CPU
  ThreadPool *threads = nullptr; // the CPU's worker pool; null on devices
  Communicator *comm = nullptr;  // null with a single rank
};

// Runs with every input's data present (in the backend's memory space, or
// on the host for host tensors) and outputs allocated with the dtype and
// shape the shape table inferred. Kernels may enqueue work on ctx.stream and
// return before it finishes; Backend::Synchronize waits for it.
using KernelFn =
    std::function<Status(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out)>;

struct KernelDef {
  const char *type;
  KernelFn run;
};

// One op family's kernels in a backend (one of its files): a backend builds
// its table from a list of these, and a test checks that each adds only ops
// of its family (core/ops.def), so an op's kernels are where its family says.
struct KernelFamily {
  OpFamily family;
  void (*add)(std::vector<KernelDef> &table);
};

// A sorted table of kernels, searched by op type.
class KernelTable {
public:
  explicit KernelTable(std::vector<KernelDef> defs);
  // nullptr when the table has no kernel for `type`.
  const KernelDef *Find(std::string_view type) const;
  std::vector<std::string> Types() const;

private:
  std::vector<KernelDef> defs_;
};

} // namespace kiln
