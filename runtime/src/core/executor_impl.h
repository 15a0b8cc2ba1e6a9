// Private state of kiln::Executor, shared by executor.cpp (ops, Run),
// executor_bind.cpp (shape pass, arena layout, layout cache) and
// executor_pack.cpp (weights packed for the matrix products).
#pragma once

#include "backends/cpu/op_registry.h"
#include "kernels/cpu/packed_matrix.h"
#include "kiln/executor.h"
#include "op_attrs.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct ExecOp {
  const cpu::OpDef *def = nullptr;
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
  uint64_t arena_bytes = 0;
};

struct Executor::Impl {
  const Plan *plan = nullptr;
  std::vector<ExecOp> ops;
  std::vector<TensorView> views; // per tensor, for the current binding
  // Graph inputs whose values (not only shapes) reach the shape pass, so
  // they belong in the cache signature: see ComputeValueInputs.
  std::vector<bool> value_input;
  uint64_t alignment = 64;
  int num_slots = 0;
  bool bound = false;

  BoundLayout layout; // the current binding's layout
  uint8_t *arena = nullptr;
  uint64_t arena_capacity = 0;

  // Layout cache: signature -> layout, evicted oldest first.
  std::map<std::string, BoundLayout> cache;
  std::deque<std::string> cache_order;
  static constexpr size_t kCacheEntries = 8;

  // Packed copies of product weights, held for the executor's lifetime;
  // products find them by the weight's address (kernels/cpu/gemm.cpp).
  std::vector<std::shared_ptr<const kernels::PackedMatrix>> packed;

  Stats stats;

  ~Impl();
  Status CheckInputs(const std::vector<TensorView> &inputs) const;
  std::string Signature(const std::vector<TensorView> &inputs) const;
  Status ShapePass();
  void LayoutArena();
  Status ApplyLayout();
  void PackWeights();
};

} // namespace kiln
