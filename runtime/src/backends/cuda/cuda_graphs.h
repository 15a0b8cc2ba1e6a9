// CUDA graphs for the CUDA backend's captured runs (Backend::BeginCapture,
// EndCapture, Replay): stream capture of everything enqueued on the
// backend's stream, instantiated once, launched on the same stream.
#pragma once

#include "core/backend.h"

#include <cuda_runtime_api.h>

#include <memory>

namespace kiln::cuda {

// Starts recording `stream` (thread-local mode: only this thread's calls
// that could synchronize are refused, and they end the capture in an
// error rather than wait).
Status BeginGraphCapture(cudaStream_t stream);

// Ends the recording of `stream` and instantiates it. Internal when the
// capture was invalidated (an op synchronized, allocated, or copied from
// pageable host memory); the stream is out of capture mode either way.
StatusOr<std::unique_ptr<Backend::CapturedRun>> EndGraphCapture(cudaStream_t stream);

// Launches a run EndGraphCapture made on `stream`.
Status LaunchGraph(const Backend::CapturedRun &run, cudaStream_t stream);

} // namespace kiln::cuda
