// See build_common.h.
#include "build_common.h"

#include "cli.h"
#include "passes/PartitionPass.h"
#include "passes/Passes.h"

#include "compiler/support/BuildError.h"
#include "kiln/plan.h"
#include "kiln/device.h"
#include "kiln/plan_info.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

namespace kiln::cli {

llvm::Error CheckPlanOnTarget(const std::string &path, const std::string &target) {
  // A tensor-parallel plan is checked rank program by rank program; a rank
  // file of kiln reshard --split holds only its own.
  StatusOr<std::unique_ptr<Plan>> first =
      LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, PlanLoadOptions::kFirstHeldRank});
  if (!first.ok())
    return compiler::internalError("the plan just written does not load: " +
                                   first.status().message());
  std::vector<int> ranks = {(*first)->rank()};
  const std::vector<int> held = DescribePlan(**first).tp_ranks;
  ranks.insert(ranks.end(), held.begin() + std::min<size_t>(1, held.size()), held.end());
  const int tp_size = (*first)->tp_size();
  for (size_t i = 0; i < ranks.size(); ++i) {
    StatusOr<std::unique_ptr<Plan>> plan =
        i == 0 ? std::move(first) : LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, ranks[i]});
    if (!plan.ok())
      return compiler::internalError("the plan just written does not load: " +
                                     plan.status().message());
    Status runs = CheckPlanRunsOn(**plan, target);
    if (!runs.ok())
      return compiler::inputError("--target " + target + ": " +
                                  (tp_size > 1 ? "rank " + std::to_string(ranks[i]) + ": " : "") +
                                  runs.message());
  }
  return llvm::Error::success();
}

int RunCompilerDriver(compiler::BuildRequest &request, const char *command) {
  auto error = [command](const std::string &message, int code) {
    std::fprintf(stderr, "kiln %s: error: %s\n", command, message.c_str());
    return code;
  };
  const std::string target = request.config.target;
  const std::vector<std::string> names = BackendNames();
  StatusOr<DeviceSpec> spec = ParseDevice(target); // "cuda:N" counts as "cuda"
  if (!spec.ok() || std::find(names.begin(), names.end(), spec->backend) == names.end()) {
    std::string known;
    for (const std::string &name : names)
      known += (known.empty() ? "" : ", ") + name;
    return error("unknown target backend '" + target + "' (this kiln knows: " + known + ")",
                 kExitBadInput);
  }
  request.checkPlan = [target](const std::string &path) {
    return CheckPlanOnTarget(path, target);
  };
  // The driver finds kiln's passes by name (compiler/CMakeLists.txt).
  registerKilnPasses();
  registerPartitionPass();
  registerKilnPipelines();
  llvm::Error result = compiler::runBuild(request, llvm::outs(), llvm::errs());
  llvm::outs().flush();
  int code = kExitOk;
  llvm::handleAllErrors(
      std::move(result),
      [&](const compiler::InternalError &e) {
        llvm::errs().flush();
        code = error("internal: " + e.message(), kExitFailure);
      },
      [&](const llvm::ErrorInfoBase &e) {
        llvm::errs().flush();
        code = error(e.message(), kExitBadInput);
      });
  return code;
}

} // namespace kiln::cli
