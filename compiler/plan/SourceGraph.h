//===- SourceGraph.h - the unpartitioned module stored in a plan -*- C++ -*-===//
//
// A plan carries the module kiln-partition starts from (Plan.source_graph in
// schemas/plan.fbs) so that `kiln reshard` can split it again for another
// rank count without the ONNX file. The module is stored as MLIR bytecode
// without the weights' bytes: the plan has those already, and each weight
// constant is found again among the plan's tensors by its `name`. For that
// the names must be unique, which nameWeights() makes sure of before the
// module is stored and before the plan's tensors are named after it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_SOURCEGRAPH_H
#define KILN_COMPILER_PLAN_SOURCEGRAPH_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>

namespace kiln::plan {

inline constexpr const char *kSourceGraphFormat = "mlir-bytecode";
/// The MLIR that wrote a source graph; bytecode is read only by the same
/// major version (MLIR's bytecode carries no dialect versioning for kiln).
inline constexpr const char *kSourceGraphMlirVersion = "19";

/// Gives every weight constant whose value is a resource (the model's
/// tensors; small dense constants stay inline in the stored module) a
/// unique, non-empty `name`: its own, else its ONNX node's, else "weight",
/// with ".2", ".3", ... added to the second and later of a name.
void nameWeights(mlir::ModuleOp module);

/// The module as MLIR bytecode, resource blobs left out.
llvm::Expected<std::string> writeSourceGraph(mlir::ModuleOp module);

/// Bytes of a weight found by name, or an error naming what is missing.
/// The pointer must stay valid for as long as the module is used.
struct WeightBytesRef {
  const void *data = nullptr;
  uint64_t size = 0;
};
using WeightLookup = std::function<llvm::Expected<WeightBytesRef>(const std::string &name)>;

/// Parses a stored source graph into `context` (kiln's and func's dialects
/// loaded) and gives every resource weight its bytes from `lookup`. A
/// weight `lookup` cannot find is an error when the graph uses it; an
/// unused one is erased. Bytes of the wrong size are an error.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
readSourceGraph(mlir::MLIRContext &context, llvm::StringRef bytes, const WeightLookup &lookup);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_SOURCEGRAPH_H
