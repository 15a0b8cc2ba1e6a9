//===- InjectReport.h - what kernel injection fused, per layer ---*- C++ -*-===//

#ifndef KILN_PASSES_INJECTREPORT_H
#define KILN_PASSES_INJECTREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace kiln::inject {

/// Bail-out reasons by the ONNX node name of the op a pattern was rooted at
/// (the newest reason last, duplicates dropped).
using FailureLog = llvm::StringMap<std::vector<std::string>>;

struct InjectionReport {
  /// The table `kiln build --report` prints.
  std::string text;
  /// One line per layer whose attention, norms or MLP stayed unfused:
  /// "layer 3: attention not fused (/model/layers.3/self_attn/Softmax: ...)".
  std::vector<std::string> missing;
  int layers = 0;
  int injectedLayers = 0;
};

/// Groups `func`'s ops by transformer layer (from their ONNX node names) and
/// says, per layer, whether attention, the norms and the MLP were fused; an
/// unfused one gets the reasons `failures` recorded at its root op.
InjectionReport buildInjectionReport(mlir::func::FuncOp func, const FailureLog &failures);

/// The layer index in an ONNX node name ("/model/layers.3/mlp/..." -> 3), or
/// -1 when the name has none.
int layerOfName(llvm::StringRef name);

} // namespace kiln::inject

#endif // KILN_PASSES_INJECTREPORT_H
