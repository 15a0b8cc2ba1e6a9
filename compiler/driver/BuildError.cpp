//===- BuildError.cpp -----------------------------------------------------===//

#include "compiler/driver/BuildError.h"

namespace kiln::compiler {

char InternalError::ID = 0;

} // namespace kiln::compiler
