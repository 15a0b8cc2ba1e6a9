// The gloo communicator (CPU, host memory); built only with gloo
// (KILN_GLOO, see runtime/CMakeLists.txt).
#pragma once

#include "dist/communicator.h"

namespace kiln::dist {

// Connects this rank to the others through config.store_dir, within
// config.timeout; Internal naming the rendezvous dir otherwise.
StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const RendezvousConfig &config);

} // namespace kiln::dist
