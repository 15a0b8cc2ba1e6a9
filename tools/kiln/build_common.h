// What `kiln build` and `kiln reshard` share: the check they run on a plan
// they have just written, before it replaces the output (it must load with
// the runtime's own loader, and every rank program it holds must run on the
// target backend), and running the compiler's driver with exit codes.
// Compiler builds only.
#pragma once

#include "compiler/driver/BuildDriver.h"

#include "llvm/Support/Error.h"

#include <string>

namespace kiln::cli {

// A plan kiln just wrote that does not load is kiln's fault (an
// InternalError); an op the backend lacks is the build's input (model and
// target). A rank file of kiln reshard --split is checked on its own rank.
llvm::Error CheckPlanOnTarget(const std::string &path, const std::string &target);

// Sets `request.checkPlan` to CheckPlanOnTarget for the config's target,
// registers kiln's passes, runs the driver and prints its error as
// "kiln COMMAND: error: ...". Returns the exit code: 0, 2 for bad input
// (the model, plan, config or target), 1 when kiln itself failed.
int RunCompilerDriver(compiler::BuildRequest &request, const char *command);

} // namespace kiln::cli
