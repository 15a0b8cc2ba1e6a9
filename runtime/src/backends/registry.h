// Choosing a backend by name: what `kiln run --device` (alias --backend)
// and `kiln build --target` take.
#pragma once

#include "core/backend.h"
#include "kiln/device.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// BackendNames, ParseDevice, DefaultDevice and CheckDeviceName: kiln/device.h.

// A backend instance for a device spelling ("cpu", "cuda", "cuda:N");
// NotFound listing BackendNames() for an unknown or unbuilt backend, or the
// backend's own error when its hardware is missing.
StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device);
// The kernel table of a built backend ("cuda:N" counts as "cuda"), without
// creating it (so a build machine without the hardware can check a plan);
// nullptr for an unknown name.
const KernelTable *BackendKernels(std::string_view name);

} // namespace kiln
