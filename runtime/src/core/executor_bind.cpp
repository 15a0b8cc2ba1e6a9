// Executor::Bind: input checks, the shape pass (shape inference plus host
// ops), the arena layout, and the cache of both per input signature.
#include "core/executor_impl.h"
#include "core/paged_indices.h"

#include "kiln/plan.h"
#include "plan_format.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>

namespace kiln {
namespace {

// Byte size of a shape, or false when a dim is negative or it overflows.
bool ShapeBytes(const Shape &shape, DType dtype, uint64_t *bytes) {
  uint64_t b = DTypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(b, static_cast<uint64_t>(d), &b))
      return false;
  }
  if (b > (uint64_t{1} << 62))
    return false;
  *bytes = b;
  return true;
}

// Whether `actual` fits the plan's dims: same rank, equal static dims.
bool MatchesDims(const PlanTensor &t, const Shape &actual) {
  if (actual.size() != t.dims.size())
    return false;
  for (size_t i = 0; i < actual.size(); ++i)
    if (t.dims[i].value >= 0 && t.dims[i].value != actual[i])
      return false;
  return true;
}

// The layout cache signature holds every input's shape and memory space,
// and the values of the inputs the shape pass reads: those host ops read
// (value_input). The pass runs without the values of the others (as for a
// device input), so it cannot depend on them: a decode step's token ids,
// positions, slots, context lengths and block tables change every step and
// hit the cache. Only when a pass fails without them (a device op's rule
// reads a graph input's values) does the executor fall back to keying the
// values of inputs of at most this many elements: in every supported op, an
// operand whose values decide a result shape (Reshape/Expand/Tile/
// ConstantOfShape shapes, Slice bounds, Range limits, Split sizes) is a
// scalar or a rank-length vector, far below this bound.
constexpr int64_t kValueSignatureElements = 64;

// Host tensors hold shapes and indices; anything this large is a plan that
// marked real data as host, and is refused rather than allocated.
constexpr uint64_t kMaxHostTensorBytes = uint64_t{64} << 20;

} // namespace

Status Executor::Impl::CheckInputs(const std::vector<TensorView> &inputs) const {
  const auto &ids = plan->inputs();
  if (inputs.size() != ids.size())
    return InvalidArgument("the plan has " + std::to_string(ids.size()) + " inputs, got " +
                           std::to_string(inputs.size()));
  // ONNX semantics: one symbolic dim name has one value across all inputs.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (size_t i = 0; i < ids.size(); ++i) {
    const PlanTensor &t = plan->tensors()[ids[i]];
    const TensorView &v = inputs[i];
    std::string label = "input '" + t.name + "'";
    if (v.dtype != t.dtype)
      return InvalidArgument(label + " is " + DTypeName(v.dtype) + ", the plan expects " +
                             DTypeName(t.dtype));
    if (!MatchesDims(t, v.shape))
      return InvalidArgument(label + " has shape " + ShapeToString(v.shape) +
                             ", the plan expects " + t.DimsToString());
    uint64_t bytes = 0;
    if (!ShapeBytes(v.shape, v.dtype, &bytes))
      return InvalidArgument(label + " has an invalid shape " + ShapeToString(v.shape));
    if (bytes > 0 && v.data == nullptr)
      return InvalidArgument(label + " has no data");
    if (v.space != MemorySpace::kHost && backend->memory_space() == MemorySpace::kHost)
      return InvalidArgument(label + " is in device memory but the " +
                             std::string(backend->name()) + " backend reads host memory");
    if (v.space != MemorySpace::kHost && value_input[ids[i]])
      return InvalidArgument(label + " decides shapes by its values, so it must be in host memory");
    for (size_t d = 0; d < t.dims.size(); ++d) {
      const std::string &sym = t.dims[d].symbol;
      if (t.dims[d].value >= 0 || sym.empty())
        continue;
      auto it = symbols.find(sym);
      if (it == symbols.end()) {
        symbols[sym] = {v.shape[d], t.name};
      } else if (it->second.first != v.shape[d]) {
        return InvalidArgument(label + " has " + sym + " = " + std::to_string(v.shape[d]) +
                               " but input '" + it->second.second + "' has " + sym + " = " +
                               std::to_string(it->second.first));
      }
    }
  }
  return Status::Ok();
}

std::string Executor::Impl::Signature(const std::vector<TensorView> &inputs) const {
  std::string sig;
  auto put = [&](const void *p, size_t n) { sig.append(static_cast<const char *>(p), n); };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView &v = inputs[i];
    uint64_t rank = v.shape.size();
    put(&rank, sizeof(rank));
    put(v.shape.data(), v.shape.size() * sizeof(int64_t));
    put(&v.space, sizeof(v.space)); // decides whether the input is staged
    const bool keyed =
        value_input[plan->inputs()[i]] || (see_all_values && v.numel() <= kValueSignatureElements);
    if (v.space == MemorySpace::kHost && keyed && v.bytes() > 0)
      put(v.data, v.bytes());
  }
  return sig;
}

Status Executor::Impl::ShapePass() {
  const auto &tensors = plan->tensors();
  layout.shapes.assign(tensors.size(), Shape());
  layout.host_data.assign(tensors.size(), {});
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].kind != TensorKind::kActivation)
      continue;
    views[i].shape.clear();
    views[i].data = nullptr; // infer must not see a previous binding's bytes
    views[i].space = MemorySpace::kHost;
  }
  // Rules and host ops read values on the host: weights from the mapping,
  // inputs only when the caller's bytes are host memory.
  WeightViews(/*device=*/false);
  // Inputs outside the signature are hidden, as device inputs are.
  const auto &ids = plan->inputs();
  for (size_t i = 0; i < ids.size(); ++i)
    if (views[ids[i]].space != MemorySpace::kHost || (!see_all_values && !value_input[ids[i]]))
      views[ids[i]].data = nullptr;
  // Host ops run the host's kernels, which need no stream or library.
  ExecContext host_ctx;
  std::vector<TensorView> out;
  for (ExecOp &op : ops) {
    // Results start with the plan's dtype: ops whose dtype is not implied
    // by their operands (constant_of_shape) keep it.
    out.assign(op.outputs.size(), TensorView());
    for (size_t j = 0; j < out.size(); ++j)
      out[j].dtype = tensors[op.outputs[j]].dtype;
    Status st = op.rule->infer(op.attrs, op.in, out);
    if (!st.ok())
      return st.WithContext(op.label);
    for (size_t j = 0; j < out.size(); ++j) {
      int t = op.outputs[j];
      const PlanTensor &pt = tensors[t];
      if (out[j].dtype != pt.dtype)
        return InvalidArgument(op.label + ": result '" + pt.name + "' is " +
                               DTypeName(out[j].dtype) + " but the plan says " +
                               DTypeName(pt.dtype));
      if (!MatchesDims(pt, out[j].shape))
        return InvalidArgument(op.label + ": result '" + pt.name + "' has shape " +
                               ShapeToString(out[j].shape) + " but the plan says " +
                               pt.DimsToString() + " (are the input shapes right?)");
      uint64_t bytes = 0;
      if (!ShapeBytes(out[j].shape, pt.dtype, &bytes))
        return Status(StatusCode::kResourceExhausted,
                      op.label + ": result '" + pt.name + "' of shape " +
                          ShapeToString(out[j].shape) + " is too large");
      views[t].shape = out[j].shape;
      layout.shapes[t] = out[j].shape;
      if (op.host) {
        if (bytes > kMaxHostTensorBytes)
          return InvalidArgument(op.label + ": host tensor '" + pt.name + "' of shape " +
                                 ShapeToString(out[j].shape) +
                                 " is too large for shape arithmetic");
        layout.host_data[t].assign(bytes, 0);
        views[t].data = layout.host_data[t].data();
      }
    }
    if (!op.host)
      continue;
    for (size_t j = 0; j < out.size(); ++j)
      op.out[j] = views[op.outputs[j]];
    st = op.kernel->run(host_ctx, op.attrs, op.in, op.out);
    if (!st.ok())
      return st.WithContext(op.label);
  }
  ++stats.shape_passes;
  return Status::Ok();
}

void Executor::Impl::LayoutArena() {
  const auto &tensors = plan->tensors();
  std::vector<uint64_t> slot_bytes(num_slots, 0);
  for (const ExecOp &op : ops) {
    if (op.host)
      continue;
    for (int t : op.outputs) {
      uint64_t bytes = 0;
      ShapeBytes(layout.shapes[t], tensors[t].dtype, &bytes); // checked by ShapePass
      slot_bytes[tensors[t].slot] = std::max(slot_bytes[tensors[t].slot], bytes);
    }
  }
  layout.slot_offsets.assign(num_slots, 0);
  uint64_t pos = 0;
  for (int s = 0; s < num_slots; ++s) {
    layout.slot_offsets[s] = pos;
    // Each slot is at most 2^62 bytes (ShapeBytes), so this sum stays far
    // below 2^64 unless there are billions of slots.
    pos = AlignUp(pos + slot_bytes[s], alignment);
  }
  layout.input_offsets.clear();
  if (backend->memory_space() != MemorySpace::kHost) {
    const auto &ids = plan->inputs();
    layout.input_offsets.assign(ids.size(), UINT64_MAX);
    for (size_t i = 0; i < ids.size(); ++i) {
      const TensorView &v = bound_inputs[i];
      if (v.space != MemorySpace::kHost)
        continue;
      layout.input_offsets[i] = pos;
      pos = AlignUp(pos + v.bytes(), alignment);
    }
  }
  layout.arena_bytes = pos;
}

Status Executor::Impl::AddEntry(const std::string &sig) {
  if (cache.size() >= kCacheEntries) {
    cache.erase(cache_order.front());
    cache_order.pop_front();
  }
  auto entry = std::make_unique<CacheEntry>();
  entry->layout = std::move(layout);
  layout = BoundLayout();
  const auto &tensors = plan->tensors();
  entry->host_ptrs.assign(tensors.size(), nullptr);
  // On a device backend, device ops copy the host tensors they read (shape
  // arithmetic) to the device. For a binding that runs as a captured run,
  // from the backend's host memory (pinned on CUDA: pageable memory cannot
  // be captured), which each replay reads again, so it lives with the entry.
  uint64_t total = 0;
  const bool captured = graphs && backend->CanCapture();
  for (const auto &bytes : entry->layout.host_data)
    total = AlignUp(total + bytes.size(), alignment);
  if (captured && total > 0) {
    KILN_ASSIGN_OR_RETURN(entry->host_block, backend->AllocateHost(total));
    entry->backend = backend;
  }
  uint64_t pos = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::vector<uint8_t> &bytes = entry->layout.host_data[t];
    if (!tensors[t].host || tensors[t].kind != TensorKind::kActivation)
      continue;
    if (entry->host_block == nullptr) {
      entry->host_ptrs[t] = bytes.data();
      continue;
    }
    auto *dst = static_cast<uint8_t *>(entry->host_block) + pos;
    if (!bytes.empty())
      std::memcpy(dst, bytes.data(), bytes.size());
    entry->host_ptrs[t] = dst;
    pos = AlignUp(pos + bytes.size(), alignment);
  }
  current = entry.get();
  cache.emplace(sig, std::move(entry));
  cache_order.push_back(sig);
  return Status::Ok();
}

Status Executor::Impl::ApplyLayout() {
  const BoundLayout &layout = current->layout;
  if (arena_capacity < layout.arena_bytes) {
    // Grow by half again at least: a decode loop needs a little more arena
    // every step, and a fresh allocation each time pays a page fault on every
    // page it touches (that was a quarter of demo decode time).
    uint64_t want = std::max<uint64_t>(layout.arena_bytes, arena_capacity + arena_capacity / 2);
    want = AlignUp(want, alignment);
    arena.Reset();
    arena_capacity = 0;
    StatusOr<DeviceBuffer> grown = DeviceBuffer::Allocate(*backend, want, alignment);
    if (!grown.ok() && want > AlignUp(layout.arena_bytes, alignment)) {
      // A device with little left (the KV cache took most) may still hold
      // exactly what this binding needs.
      want = AlignUp(layout.arena_bytes, alignment);
      grown = DeviceBuffer::Allocate(*backend, want, alignment);
    }
    if (!grown.ok())
      return Status(StatusCode::kResourceExhausted,
                    "cannot allocate a " + std::to_string(want) + "-byte activation arena on the " +
                        backend->name() + " backend: " + grown.status().message());
    arena = std::move(grown.value());
    arena_capacity = want;
    ++stats.arena_allocations;
  }
  stats.arena_bytes = layout.arena_bytes;
  stats.arena_capacity = arena_capacity;
  const auto &tensors = plan->tensors();
  uint8_t *base = static_cast<uint8_t *>(arena.data());
  const MemorySpace arena_space = backend->memory_space();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor &t = tensors[i];
    if (t.kind != TensorKind::kActivation)
      continue;
    views[i].shape = layout.shapes[i];
    if (t.host) {
      views[i].data = current->host_ptrs[i];
      views[i].space = MemorySpace::kHost;
    } else {
      views[i].data = base ? base + layout.slot_offsets[t.slot] : nullptr;
      views[i].space = arena_space;
    }
  }
  WeightViews(/*device=*/true);
  const auto &ids = plan->inputs();
  for (size_t i = 0; i < ids.size(); ++i) {
    views[ids[i]] = bound_inputs[i];
    if (!layout.input_offsets.empty() && layout.input_offsets[i] != UINT64_MAX) {
      views[ids[i]].data = base + layout.input_offsets[i];
      views[ids[i]].space = arena_space;
    }
  }
  for (ExecOp &op : ops)
    for (size_t j = 0; j < op.outputs.size(); ++j)
      op.out[j] = views[op.outputs[j]];
  return Status::Ok();
}

Status Executor::Impl::StageInputs() {
  const BoundLayout &layout = current->layout;
  if (layout.input_offsets.empty())
    return Status::Ok();
  // The staged inputs lie together at the arena's end: packed on the host
  // as they lie there, they go in one copy (a decode step has seven small
  // index arrays; one copy each cost more than the bytes).
  uint64_t first = UINT64_MAX, end = 0;
  for (size_t i = 0; i < bound_inputs.size(); ++i)
    if (layout.input_offsets[i] != UINT64_MAX && bound_inputs[i].bytes() > 0) {
      first = std::min(first, layout.input_offsets[i]);
      end = std::max(end, layout.input_offsets[i] + bound_inputs[i].bytes());
    }
  if (first >= end)
    return Status::Ok();
  stage_buffer.resize(end - first);
  for (size_t i = 0; i < bound_inputs.size(); ++i)
    if (layout.input_offsets[i] != UINT64_MAX && bound_inputs[i].bytes() > 0)
      std::memcpy(stage_buffer.data() + (layout.input_offsets[i] - first), bound_inputs[i].data,
                  bound_inputs[i].bytes());
  // From pageable memory: the backend has the bytes when this returns.
  return backend->CopyFromHost(static_cast<uint8_t *>(arena.data()) + first, stage_buffer.data(),
                               end - first);
}

Status Executor::Bind(const std::vector<TensorView> &inputs) {
  Impl &m = *impl_;
  const BindTimer timer(m.profiling, m.totals);
  m.bound = false;
  KILN_RETURN_IF_ERROR(m.CheckInputs(inputs));
  if (m.check_paged_inputs && m.backend->memory_space() != MemorySpace::kHost)
    KILN_RETURN_IF_ERROR(CheckPagedInputs(*m.plan, inputs));
  const auto &ids = m.plan->inputs();
  m.bound_inputs = inputs;
  for (size_t i = 0; i < ids.size(); ++i)
    m.views[ids[i]] = inputs[i];

  m.current = nullptr;
  std::string sig = m.Signature(inputs);
  auto hit = m.cache.find(sig);
  if (hit != m.cache.end()) {
    m.current = hit->second.get();
    ++m.stats.layout_cache_hits;
    // Least recently used first out: a stream of one-off prompt shapes must
    // not push out the decode shapes every step uses.
    auto at = std::find(m.cache_order.begin(), m.cache_order.end(), sig);
    if (at != m.cache_order.end() && std::next(at) != m.cache_order.end()) {
      m.cache_order.erase(at);
      m.cache_order.push_back(sig);
    }
  } else {
    Status pass = m.ShapePass();
    if (!pass.ok() && !m.see_all_values) {
      // Maybe a rule read the values of a graph input that no host op reads.
      // If the pass succeeds with them, every later pass sees them and the
      // values of small inputs are keyed; otherwise the error stands.
      m.see_all_values = true;
      for (size_t i = 0; i < ids.size(); ++i)
        m.views[ids[i]] = inputs[i];
      pass = m.ShapePass();
      if (pass.ok()) {
        m.cache.clear();
        m.cache_order.clear();
        sig = m.Signature(inputs);
      } else {
        m.see_all_values = false;
      }
    }
    KILN_RETURN_IF_ERROR(pass);
    m.LayoutArena();
    KILN_RETURN_IF_ERROR(m.AddEntry(sig));
  }
  KILN_RETURN_IF_ERROR(m.ApplyLayout());
  m.bound = true;
  return Status::Ok();
}

} // namespace kiln
