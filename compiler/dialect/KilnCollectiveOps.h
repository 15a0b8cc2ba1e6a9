//===- KilnCollectiveOps.h - tensor-parallel collectives ---------*- C++ -*-===//
//
// kiln.all_reduce and kiln.all_gather (KilnCollectiveOps.td). Kept out of
// KilnOps.h: only kiln-partition builds them; everything else sees them as
// ops of the kiln dialect.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIALECT_KILNCOLLECTIVEOPS_H
#define KILN_COMPILER_DIALECT_KILNCOLLECTIVEOPS_H

#include "compiler/dialect/KilnOps.h"

namespace kiln {

/// Adds the collectives to the dialect (KilnDialect::initialize calls it).
void registerCollectiveOps(mlir::Dialect &dialect);

} // namespace kiln

#define GET_OP_CLASSES
#include "compiler/dialect/KilnCollectiveOps.h.inc"

#endif // KILN_COMPILER_DIALECT_KILNCOLLECTIVEOPS_H
