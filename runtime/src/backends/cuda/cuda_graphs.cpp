// Stream capture into a cudaGraphExec, and its launch.
#include "backends/cuda/cuda_graphs.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {
namespace {

class GraphRun : public Backend::CapturedRun {
public:
  explicit GraphRun(cudaGraphExec_t exec) : exec_(exec) {}
  ~GraphRun() override {
    // An exec still running on the stream is kept alive by the driver.
    cudaGraphExecDestroy(exec_);
  }
  cudaGraphExec_t exec() const { return exec_; }

private:
  cudaGraphExec_t exec_;
};

} // namespace

Status BeginGraphCapture(cudaStream_t stream) {
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Backend::CapturedRun>> EndGraphCapture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  // Ends the capture even when it was invalidated (then with an error and
  // no graph), which leaves the stream usable.
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream, &graph));
  if (graph == nullptr)
    return Internal("the CUDA stream capture recorded no graph");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  KILN_CUDA_RETURN_IF_ERROR(err);
  return std::unique_ptr<Backend::CapturedRun>(new GraphRun(exec));
}

Status LaunchGraph(const Backend::CapturedRun &run, cudaStream_t stream) {
  const auto *graph = dynamic_cast<const GraphRun *>(&run);
  if (graph == nullptr)
    return Internal("a captured run of another backend was given to the cuda backend");
  KILN_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph->exec(), stream));
  return Status::Ok();
}

} // namespace kiln::cuda
