//===- KilnOps.cpp - generated kiln op definitions ------------------------===//
//
// Only the TableGen output lives here (it is the heaviest translation unit);
// verifiers are in KilnVerify.cpp, shape functions in KilnShapes.cpp and
// folders in KilnFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

#include "compiler/dialect/KilnInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "compiler/dialect/KilnOps.cpp.inc"
