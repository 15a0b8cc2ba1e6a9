//===- BuildDriver.h - the phases of kiln build ------------------*- C++ -*-===//
//
// `kiln build` runs the phases of DESIGN.md in order: import, cleanup,
// inject, ragged, partition, quantize, plan. Each phase reports progress and
// its wall time on the log stream; `--compile-to PHASE` stops after a phase
// and prints the IR instead of writing a plan. The CLI (tools/kiln/
// cmd_build.cpp) is a thin wrapper over runBuild so tests and tools can call
// the same code in-process.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DRIVER_PIPELINE_H
#define KILN_COMPILER_DRIVER_PIPELINE_H

#include "compiler/driver/BuildConfig.h"
#include "compiler/plan/PlanModel.h"
#include "compiler/plan/SourceGraph.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::compiler {

enum class Phase { Import, Cleanup, Inject, Ragged, Partition, Quantize, Plan };

llvm::StringRef phaseName(Phase phase);
/// The phase named `name`, or std::nullopt.
std::optional<Phase> parsePhase(llvm::StringRef name);
/// "import, cleanup, ..., plan", for usage and error messages.
std::string phaseNames();

/// What `kiln reshard` builds from instead of an ONNX file: a plan's stored
/// source graph, its weights and its model-wide fields.
struct ReshardSource {
  /// The input plan's extras (PlanReader.h: extrasFromPlan), with its
  /// source graph.
  plan::PlanExtras extras;
  /// Its weights by name, whole or reassembled from shards.
  plan::WeightLookup weights;
  /// For progress lines and the provenance: the input file(s).
  std::string description;
  int64_t fromTpSize = 1;
  std::string fromBuildId; // empty for a one-rank plan
};

struct BuildRequest {
  std::string modelPath;
  /// Where the plan goes; unused (and may be empty) with compileTo.
  std::string outputPath;
  /// Overrides where the tokenizer is read from (file or directory).
  std::string tokenizerPath;
  /// Store a chat template outside the runtime's Jinja subset (with a
  /// warning) instead of failing the build.
  bool allowUnsupportedTemplate = false;
  /// Stop after this phase and print the IR to `out` instead of writing.
  std::optional<Phase> compileTo;
  BuildConfig config;
  /// Recorded in the plan (Plan.compiler_version, Plan.provenance).
  std::string compilerVersion;
  /// The git commit kiln was built from ("unknown" without git), for the
  /// plan's provenance.
  std::string sourceCommit = "unknown";
  /// Suppresses progress lines (errors and warnings still go to `log`).
  bool quiet = false;
  /// Prints the injection report (per layer, what fused and why not) to
  /// `log` after the inject phase.
  bool printReport = false;
  /// tp_size > 1: a layer kiln-partition cannot split fails the build
  /// (naming it) instead of staying whole on every rank.
  bool requirePartition = false;
  /// User PDL patterns (an MLIR file of pdl.pattern ops), applied at the
  /// start of the inject phase.
  std::string patternsFile;
  /// Pass plugins (shared libraries); each registers a pass named after the
  /// plugin, which runs after the user patterns and before kiln-inject.
  std::vector<std::string> passPlugins;
  /// When set, runs on the complete plan file (at a temporary path) before
  /// it replaces outputPath; an error fails the build and leaves outputPath
  /// as it was. `kiln build` checks the plan against the target backend's
  /// kernels here (the compiler itself never links the runtime).
  std::function<llvm::Error(const std::string &planPath)> checkPlan;
  /// `kiln reshard`: start from this source graph instead of importing
  /// modelPath; only the partition, quantize and plan phases run, and the
  /// model-wide fields come from it. Not owned.
  const ReshardSource *reshard = nullptr;
  /// tp_size > 1: write one file per rank (rankFilePath), each holding the
  /// shared section and that rank's, instead of one plan.
  bool splitRanks = false;
};

/// Runs the build. Diagnostics, warnings and (unless quiet) progress go to
/// `log`; IR from compileTo goes to `out`. Errors carry a message for the
/// user; an InternalError (BuildError.h) means kiln itself failed. No plan
/// file exists at outputPath after a failure unless one was there before.
llvm::Error runBuild(const BuildRequest &request, llvm::raw_ostream &out, llvm::raw_ostream &log);

} // namespace kiln::compiler

#endif // KILN_COMPILER_DRIVER_PIPELINE_H
