//===- BuildError.h - bad input versus kiln's own failure --------*- C++ -*-===//
//
// `kiln build` exits 2 when the user's input is at fault (arguments, model,
// config) and 1 when kiln itself failed. Errors are plain llvm::Errors carrying
// a message; this header adds the one distinction the exit code needs: an
// InternalError marks a broken invariant inside kiln (a pass left the IR
// inconsistent, a write failed for a reason no input explains). Anything else
// counts as bad input.
//
// It lives in compiler/support/ because every layer reports errors this way:
// the plan writer and importer below the driver must not include the driver
// (compiler/CMakeLists.txt has the rules).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_SUPPORT_BUILDERROR_H
#define KILN_COMPILER_SUPPORT_BUILDERROR_H

#include "llvm/Support/Error.h"

#include <string>

namespace kiln::compiler {

class InternalError : public llvm::ErrorInfo<InternalError> {
public:
  static char ID;
  explicit InternalError(std::string text) : text(std::move(text)) {}
  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  std::string text;
};

/// A failure that is kiln's fault, not the input's.
inline llvm::Error internalError(const llvm::Twine &message) {
  return llvm::make_error<InternalError>(message.str());
}

/// An error caused by the input (model, config, arguments).
inline llvm::Error inputError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace kiln::compiler

#endif // KILN_COMPILER_SUPPORT_BUILDERROR_H
