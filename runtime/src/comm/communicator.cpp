// CreateCommunicator: the only runtime source that knows which collective
// libraries this kiln was built with (KILN_HAVE_GLOO, KILN_HAVE_NCCL are set
// on this file alone by runtime/CMakeLists.txt).
#include "comm/communicator.h"

#if KILN_HAVE_GLOO
#include "comm/gloo_communicator.h"
#endif

namespace kiln {

#if KILN_HAVE_NCCL
namespace comm {
StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const RendezvousConfig &config,
                                                               Backend *backend);
}
#endif

std::vector<std::string> CommunicatorKinds() {
  std::vector<std::string> kinds;
#if KILN_HAVE_GLOO
  kinds.push_back("gloo");
#endif
#if KILN_HAVE_NCCL
  kinds.push_back("nccl");
#endif
  return kinds;
}

StatusOr<std::unique_ptr<Communicator>>
CreateCommunicator(const std::string &kind, const RendezvousConfig &config, Backend *backend) {
  (void)backend;
  if (kind == "gloo") {
#if KILN_HAVE_GLOO
    return comm::CreateGlooCommunicator(config);
#else
    return Unimplemented("tensor parallelism on the CPU needs gloo, and this kiln was built "
                         "without it: install libgloo-dev and rebuild (KILN_GLOO=AUTO or ON)");
#endif
  }
  if (kind == "nccl") {
#if KILN_HAVE_NCCL
    return comm::CreateNcclCommunicator(config, backend);
#else
    return Unimplemented("tensor parallelism on CUDA needs NCCL, and this kiln was built without "
                         "it: rebuild with CUDA and NCCL (nccl.h, libnccl) present");
#endif
  }
  return InvalidArgument("unknown communicator '" + kind + "' (gloo or nccl)");
}

} // namespace kiln
