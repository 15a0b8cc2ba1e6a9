// cuBLASLt, opened on first use (core/lazy_library.h, cublaslt_loader.cpp).
#pragma once

#include "kiln/status.h"

namespace kiln::cuda {

// Loads cuBLASLt; the CUDA backend calls it before it creates anything, so a
// missing library is one clear error.
const Status &LoadCublasLt();

} // namespace kiln::cuda
