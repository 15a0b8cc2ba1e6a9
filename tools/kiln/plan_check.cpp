// See plan_check.h.
#include "plan_check.h"

#include "compiler/support/BuildError.h"
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

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

} // namespace kiln::cli
