// The check `kiln build` and `kiln reshard` run on a plan they have just
// written, before it replaces the output: it must load with the runtime's
// own loader, and every rank program it holds must run on the target
// backend. Compiler builds only (it returns llvm::Error).
#pragma once

#include "backends/registry.h"

#include "llvm/Support/Error.h"

#include <string>

namespace kiln::cli {

// A plan kiln just wrote that does not load is kiln's fault (an
// InternalError); an op the backend lacks is the build's input (model and
// target). A rank file of kiln reshard --split is checked on its own rank.
llvm::Error CheckPlanOnTarget(const std::string &path, const KernelTable &table,
                              const std::string &target);

} // namespace kiln::cli
