// The gloo communicator (CPU, host memory); built only with gloo
// (KILN_GLOO, see runtime/CMakeLists.txt).
#pragma once

#include "comm/communicator.h"

namespace kiln::comm {

// Connects this rank to the others through config.store_dir, within
// config.timeout; Internal naming the rendezvous dir otherwise.
StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const RendezvousConfig &config);

} // namespace kiln::comm
