// NCCL, opened on first use (core/lazy_library.h, nccl_loader.cpp).
#pragma once

#include "kiln/status.h"

namespace kiln::cuda {

// Loads NCCL (where the build found nccl.h); the NCCL communicator calls it
// first.
const Status &LoadNccl();

} // namespace kiln::cuda
