// Executor::Run through captured runs (CUDA graphs): the ops of one layout
// cache entry are recorded once on the backend's stream and replayed while
// the memory they were recorded on is the same.
#include "core/executor_impl.h"

namespace kiln {

Status Executor::Impl::GraphRun() {
  KILN_RETURN_IF_ERROR(StageInputs()); // never captured: values change per run
  return GraphOps();
}

Status Executor::Impl::GraphOps() {
  CacheEntry &entry = *current;
  if (entry.uncapturable)
    return RunOps();
  // Everything a recording holds besides the entry's own memory: the
  // arena, the device inputs (KV caches) and the op scratch.
  CaptureKey key;
  key.arena = arena.data();
  key.scratch_epoch = backend->scratch_epoch();
  key.inputs.reserve(bound_inputs.size());
  for (const TensorView &v : bound_inputs)
    key.inputs.push_back(v.space == MemorySpace::kHost ? nullptr : v.data);
  if (entry.graph && entry.key == key) {
    KILN_RETURN_IF_ERROR(backend->Replay(*entry.graph));
    ++stats.graph_replays;
    return Status::Ok();
  }
  entry.graph.reset();
  if (!entry.warm) {
    // The first run of a binding sizes the op scratch, which a capture must
    // not grow (growing waits for the stream).
    KILN_RETURN_IF_ERROR(RunOps());
    entry.warm = true;
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(backend->BeginCapture());
  const Status ran = RunOps();
  StatusOr<std::unique_ptr<Backend::CapturedRun>> graph = backend->EndCapture();
  if (!ran.ok() || !graph.ok()) {
    // Nothing of the recording ran: run it eagerly, which reports an op's
    // own error if it has one, and never capture this binding again.
    entry.uncapturable = true;
    ++stats.graph_failures;
    return RunOps();
  }
  entry.graph = std::move(graph.value());
  // The recording's op scratch epoch: a capture never grows it, but check.
  key.scratch_epoch = backend->scratch_epoch();
  entry.key = std::move(key);
  ++stats.graph_captures;
  KILN_RETURN_IF_ERROR(backend->Replay(*entry.graph));
  ++stats.graph_replays;
  return Status::Ok();
}

} // namespace kiln
