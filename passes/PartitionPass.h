//===- PartitionPass.h - kiln-partition's declaration -------------*- C++ -*-===//
//
// The tools register it beside registerKilnPasses() (see PartitionPass.td
// for why it is declared apart).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PARTITIONPASS_H
#define KILN_PASSES_PARTITIONPASS_H

namespace kiln {

/// Registers kiln-partition with MLIR's pass registry (idempotent).
void registerPartitionPass();

} // namespace kiln

#endif // KILN_PASSES_PARTITIONPASS_H
