//===- PlanWriter.cpp - write a kiln module as a .plan file --------------===//

#include "compiler/plan/PlanWriter.h"

#include "compiler/plan/DecoderIO.h"
#include "compiler/plan/GraphCollector.h"
#include "compiler/plan/PlanSerializer.h"
#include "compiler/plan/WeightBytes.h"
#include "compiler/support/BuildError.h"
#include "compiler/support/SourcePages.h"
#include "plan_file.h"

#include "llvm/Support/FileSystem.h"

#include <optional>

namespace kiln::plan {

llvm::Expected<mlir::func::FuncOp> findGraphFunction(mlir::ModuleOp module) {
  mlir::func::FuncOp only, main;
  int withBody = 0;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    if (f.isExternal())
      continue;
    ++withBody;
    only = f;
    if (f.getSymName() == "main")
      main = f;
  }
  if (withBody == 1)
    return only;
  if (main)
    return main;
  return compiler::inputError(withBody == 0 ? "the module has no function to build a plan from"
                                            : "the module has several functions and none is "
                                              "named 'main'");
}

namespace {

/// Section 0: every weight streamed from where its value lives (a mapped
/// model file, a blob a pass made) straight to the file at its offset, so the
/// build never holds a copy of the weights.
SectionSource weightSection(const CollectedGraph &g) {
  return {g.graph.weightBytes, [&g](SectionWriter &out) -> std::string {
            const std::string writeFailed = "write of the plan's weights failed (disk full?)";
            for (const WeightSource &w : g.weights) {
              const TensorDesc &t = g.graph.tensors[w.tensor];
              if (!out.WriteZeros(t.offset - out.written()))
                return writeFailed;
              bool written = true;
              llvm::Error e = streamWeightBytes(w.value, [&](const void *data, uint64_t size) {
                return written = out.Write(data, size);
              });
              if (e) {
                std::string why = llvm::toString(std::move(e));
                return written ? "weight '" + t.name + "': " + why : writeFailed;
              }
            }
            return "";
          }};
}

} // namespace

llvm::Expected<PlanSummary> writePlan(mlir::ModuleOp module, const PlanExtras &extras,
                                      const std::string &path) {
  auto func = findGraphFunction(module);
  if (!func)
    return func.takeError();
  auto graph = collectGraph(*func);
  if (!graph)
    return graph.takeError();
  // Whatever earlier phases read of the model files is not needed resident
  // any more; the writer touches each weight once and releases it again.
  compiler::releaseAllSourcePages();
  auto decoder = detectDecoderIO(graph->graph);
  if (!decoder)
    return decoder.takeError();
  auto ragged = detectRaggedIO(graph->graph);
  if (!ragged)
    return ragged.takeError();

  const CollectedGraph &g = *graph;
  std::vector<SectionSource> sections;
  if (g.graph.weightBytes > 0)
    sections.push_back(weightSection(g));
  // The provenance's hashes may still be computing: the plan is laid out
  // with placeholders and they are filled in after the weights are written.
  PlanExtras x = extras;
  auto completeProvenance = [&x]() -> std::string {
    if (llvm::Error e = x.completeProvenance(x.provenance))
      return llvm::toString(std::move(e));
    return "";
  };
  // The check's own error keeps its kind (input or internal) and is
  // returned as it is; the file writer only needs to know it failed.
  std::optional<llvm::Error> checkError;
  auto checkBeforeCommit = [&x, &checkError](const std::string &tmp) -> std::string {
    if (llvm::Error e = x.checkBeforeCommit(tmp)) {
      checkError.emplace(std::move(e));
      return "the plan check failed";
    }
    return "";
  };
  std::string error = StreamPlanFile(
      path,
      [&](const std::vector<SectionPlacement> &placements) {
        return serializePlan(g.graph, *decoder, *ragged, x, placements);
      },
      sections, x.completeProvenance ? std::function<std::string()>(completeProvenance) : nullptr,
      x.checkBeforeCommit ? std::function<std::string(const std::string &)>(checkBeforeCommit)
                          : nullptr);
  if (checkError)
    return std::move(*checkError);
  // The failures left are the user's to fix: file system ones (a bad -o
  // path, a full disk), a weight without data, an unreadable model file.
  if (!error.empty())
    return compiler::inputError(error);

  PlanSummary s;
  s.numTensors = g.graph.tensors.size();
  s.numOps = g.graph.ops.size();
  for (const TensorDesc &t : g.graph.tensors)
    if (t.kind == TensorKind::Weight)
      ++s.numWeights;
  s.weightBytes = g.graph.weightBytes;
  s.memory = g.graph.memory;
  s.decoder = *decoder;
  s.ragged = *ragged;
  uint64_t size = 0;
  if (!llvm::sys::fs::file_size(path, size))
    s.fileBytes = size;
  return s;
}

} // namespace kiln::plan
