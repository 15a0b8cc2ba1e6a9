// Choosing a backend by name: what `kiln run --backend` and `kiln build
// --target` take.
#pragma once

#include "core/backend.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// The backends this runtime was built with, by name ("cpu" first).
std::vector<std::string> BackendNames();
// A backend instance; NotFound listing BackendNames() for an unknown or
// unbuilt name, or the backend's own error when its hardware is missing.
StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name);
// The kernel table of a built backend, without creating it (so a build
// machine without the hardware can check a plan); nullptr for an unknown
// name.
const KernelTable *BackendKernels(std::string_view name);

} // namespace kiln
