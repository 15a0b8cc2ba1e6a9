//===- PhaseSupport.h - what the build's phases share ------------*- C++ -*-===//
//
// Helpers of the build driver (BuildDriver.cpp): diagnostics printed for users,
// registered passes run by name, and the counts and type summaries that the
// phase lines print.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DRIVER_PHASESUPPORT_H
#define KILN_COMPILER_DRIVER_PHASESUPPORT_H

#include "compiler/driver/BuildConfig.h"
#include "compiler/driver/BuildDriver.h"
#include "compiler/plan/PlanAttrs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace kiln::compiler {

/// Prints MLIR diagnostics as "error: message" lines, adding the ONNX node
/// when the message does not already name it, and counts errors so a failed
/// pass with no error (kiln's bug) can be told from a rejected model.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(mlir::MLIRContext &context, llvm::raw_ostream &log)
      : handler(&context, [this, &log](mlir::Diagnostic &diag) {
          print(log, diag, severityName(diag.getSeverity()));
          for (mlir::Diagnostic &note : diag.getNotes())
            print(log, note, "note");
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
            ++errors;
          return mlir::success();
        }) {}
  int errorCount() const { return errors; }

private:
  static const char *severityName(mlir::DiagnosticSeverity s) {
    switch (s) {
    case mlir::DiagnosticSeverity::Error:
      return "error";
    case mlir::DiagnosticSeverity::Warning:
      return "warning";
    case mlir::DiagnosticSeverity::Note:
      return "note";
    case mlir::DiagnosticSeverity::Remark:
      return "remark";
    }
    return "error";
  }
  static void print(llvm::raw_ostream &log, mlir::Diagnostic &diag, const char *severity) {
    std::string message = diag.str();
    std::string node = plan::nodeName(diag.getLocation());
    log << severity << ": ";
    if (!node.empty() && message.find("'" + node + "'") == std::string::npos)
      log << "node '" << node << "': ";
    log << message << "\n";
  }

  int errors = 0;
  mlir::ScopedDiagnosticHandler handler;
};

struct OpCounts {
  size_t ops = 0, constants = 0;
};

/// The kiln ops and the weight constants of `module`.
OpCounts countOps(mlir::ModuleOp module);

/// "12.3 MB".
std::string megabytes(uint64_t bytes);

/// The element type a config dtype names (fp32, fp16 or bf16).
mlir::Type dtypeElementType(mlir::MLIRContext &context, const std::string &dtype);

/// The config's dtype names the type the plan computes in. kiln converts
/// f32 to it; a model in another float type (f64, or f16 asked to become
/// bf16) is refused rather than built as something the user did not ask for.
llvm::Error checkDtype(mlir::ModuleOp module, const BuildConfig &config);

/// Whether @main returns an f16 or bf16 tensor other than the KV cache.
bool hasHalfLogits(mlir::ModuleOp module);

/// Weights per element type, e.g. "f16: 12 (1.5 MB)", for the phase line.
std::string weightTypes(mlir::ModuleOp module);

/// Adds the pass or pipeline registered as `name` to `pm`, with `options`
/// in MLIR's textual form ("key=value ...").
llvm::Error addRegistered(mlir::OpPassManager &pm, llvm::StringRef name,
                          llvm::StringRef options = "");

/// `value` as one pass-option value: MLIR's option parser takes a value in
/// double or single quotes verbatim (spaces included), and has no escape
/// for a value holding both quote characters.
llvm::Expected<std::string> quoteOption(llvm::StringRef flag, llvm::StringRef value);

/// Runs `populate`'s passes over the module. A failure with error
/// diagnostics is the model's fault; one without is kiln's.
llvm::Error runPasses(mlir::MLIRContext &context, mlir::ModuleOp module,
                      const DiagnosticPrinter &diags, Phase phase,
                      llvm::function_ref<llvm::Error(mlir::PassManager &)> populate);

} // namespace kiln::compiler

#endif // KILN_COMPILER_DRIVER_PHASESUPPORT_H
