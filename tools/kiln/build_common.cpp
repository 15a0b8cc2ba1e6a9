// See build_common.h.
#include "build_common.h"

#include "cli.h"
#include "passes/PartitionPass.h"
#include "passes/Passes.h"

#include "compiler/support/BuildError.h"
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <memory>
#include <vector>

namespace kiln::cli {

llvm::Error CheckPlanOnTarget(const std::string &path, const KernelTable &table,
                              const std::string &target) {
  // A tensor-parallel plan is checked rank program by rank program; a rank
  // file of kiln reshard --split holds only its own.
  StatusOr<std::unique_ptr<Plan>> first =
      LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, PlanLoadOptions::kFirstHeldRank});
  if (!first.ok())
    return compiler::internalError("the plan just written does not load: " +
                                   first.status().message());
  std::vector<int> ranks = {(*first)->rank()};
  if (const fb::TensorParallel *tp = (*first)->fb().tensor_parallel(); tp && tp->ranks())
    for (uint32_t i = 1; i < tp->ranks()->size(); ++i)
      ranks.push_back(tp->ranks()->Get(i)->rank());
  const int tp_size = (*first)->tp_size();
  for (size_t i = 0; i < ranks.size(); ++i) {
    StatusOr<std::unique_ptr<Plan>> plan =
        i == 0 ? std::move(first) : LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, ranks[i]});
    if (!plan.ok())
      return compiler::internalError("the plan just written does not load: " +
                                     plan.status().message());
    Status runs = CheckPlanRunsOn(**plan, table, target);
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
  const KernelTable *table = BackendKernels(target);
  if (!table) {
    std::string known;
    for (const std::string &name : BackendNames())
      known += (known.empty() ? "" : ", ") + name;
    return error("unknown target backend '" + target + "' (this kiln knows: " + known + ")",
                 kExitBadInput);
  }
  request.checkPlan = [table, target](const std::string &path) {
    return CheckPlanOnTarget(path, *table, target);
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
