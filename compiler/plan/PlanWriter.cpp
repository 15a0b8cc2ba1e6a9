//===- PlanWriter.cpp - write a kiln module as a .plan file --------------===//

#include "compiler/plan/PlanWriter.h"

#include "compiler/driver/BuildError.h"
#include "compiler/plan/DecoderIO.h"
#include "compiler/plan/GraphCollector.h"
#include "compiler/plan/PlanSerializer.h"
#include "plan_file.h"

#include "llvm/Support/FileSystem.h"

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

llvm::Expected<PlanSummary> writePlan(mlir::ModuleOp module, const PlanExtras &extras,
                                      const std::string &path) {
  auto func = findGraphFunction(module);
  if (!func)
    return func.takeError();
  auto graph = collectGraph(*func);
  if (!graph)
    return graph.takeError();
  auto decoder = detectDecoderIO(*graph);
  if (!decoder)
    return decoder.takeError();
  auto ragged = detectRaggedIO(*graph);
  if (!ragged)
    return ragged.takeError();

  std::vector<SectionBlob> sections;
  if (!graph->weights.empty())
    sections.push_back({graph->weights.data(), graph->weights.size()});
  std::string error = WritePlanFile(
      path,
      [&](const std::vector<SectionPlacement> &placements) {
        return serializePlan(*graph, *decoder, *ragged, extras, placements);
      },
      sections);
  // The only failures left are file system ones (a bad -o path, a full
  // disk): the user's to fix.
  if (!error.empty())
    return compiler::inputError(error);

  PlanSummary s;
  s.numTensors = graph->tensors.size();
  s.numOps = graph->ops.size();
  for (const TensorDesc &t : graph->tensors)
    if (t.kind == TensorKind::Weight)
      ++s.numWeights;
  s.weightBytes = graph->weights.size();
  s.memory = graph->memory;
  s.decoder = *decoder;
  s.ragged = *ragged;
  uint64_t size = 0;
  if (!llvm::sys::fs::file_size(path, size))
    s.fileBytes = size;
  return s;
}

} // namespace kiln::plan
