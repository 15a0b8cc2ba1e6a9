//===- BuildError.cpp -----------------------------------------------------===//

#include "compiler/support/BuildError.h"

namespace kiln::compiler {

char InternalError::ID = 0;

} // namespace kiln::compiler
