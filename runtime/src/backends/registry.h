// Choosing a backend by name: what `kiln run --device` (alias --backend)
// and `kiln build --target` take.
#pragma once

#include "core/backend.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// The backends this runtime was built with, by name ("cpu" first, then
// "cuda" when built with -DKILN_CUDA).
std::vector<std::string> BackendNames();

// A device spelling split: "cpu" -> {"cpu", 0}, "cuda" -> {"cuda", 0},
// "cuda:1" -> {"cuda", 1}. InvalidArgument for an empty name, a bad index
// ("cuda:", "cuda:x", "cuda:-1") or an index on a backend that has none
// ("cpu:0"); the name itself is not checked against BackendNames().
struct DeviceSpec {
  std::string backend;
  int index = 0;
};
StatusOr<DeviceSpec> ParseDevice(std::string_view device);

// A backend instance for a device spelling ("cpu", "cuda", "cuda:N");
// NotFound listing BackendNames() for an unknown or unbuilt backend, or the
// backend's own error when its hardware is missing.
StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device);
// The kernel table of a built backend ("cuda:N" counts as "cuda"), without
// creating it (so a build machine without the hardware can check a plan);
// nullptr for an unknown name.
const KernelTable *BackendKernels(std::string_view name);
// "cuda" when this runtime was built with it and a CUDA device is visible,
// else "cpu": the default of --device.
std::string DefaultDevice();

} // namespace kiln
