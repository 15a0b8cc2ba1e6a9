//===- TpPlanWriter.h - write a tensor-parallel .plan file -------*- C++ -*-===//
//
// A tp_size > 1 build ends here instead of writePlan: one module per rank
// (kiln-partition's output, after the plan-phase passes) becomes one nested
// rank program each, and the weights go to a shared section (replicated
// tensors, once) and one section per rank (that rank's shards only), as
// schemas/plan.fbs (RankProgram, TensorParallel, ShardSpec) describes.
// Weights are streamed: a shard's bytes are sliced from the unsplit weight
// while they are written, so no rank's weights are ever held in memory.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_TPPLANWRITER_H
#define KILN_COMPILER_PLAN_TPPLANWRITER_H

#include "compiler/plan/PlanWriter.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace kiln::plan {

/// What was written, beyond writePlan's summary: bytes per section.
struct TpPlanSummary {
  PlanSummary plan; // ops, weights, memory plan of rank 0; fileBytes
  uint64_t sharedBytes = 0;
  std::vector<uint64_t> rankBytes;
  std::string partitionReport; // as stored, with the bytes added
};

/// Writes `path` from the rank modules (rank order). `extras.tensorParallel`
/// carries the tp size, build id and the pass's report; the programs are
/// filled in here. The report gets a "bytes" entry (shared, per rank, and
/// each rank's share of the unsplit weights). With `split`, writes instead
/// one rank file per rank at rankFilePath(path, r): that rank's program,
/// the shared section and the rank's own (kiln reshard --split); fileBytes
/// is then their sum, and checkBeforeCommit runs on each.
llvm::Expected<TpPlanSummary> writeTpPlan(const std::vector<mlir::ModuleOp> &ranks,
                                          const PlanExtras &extras, const std::string &path,
                                          bool split = false);

/// Rank r's file of a split plan: "out.plan" -> "out.rank<r>.plan" (the
/// extension kept when the name has one, else appended).
std::string rankFilePath(const std::string &path, int64_t rank);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_TPPLANWRITER_H
