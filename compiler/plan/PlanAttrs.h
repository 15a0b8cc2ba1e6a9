//===- PlanAttrs.h - attributes of the plan phase ----------------*- C++ -*-===//
//
// Names of the discardable attributes that the plan-phase passes
// (kiln-mark-host, kiln-memory-plan) attach and the plan writer reads, plus
// the small predicates they share, so the three agree on what a weight and an
// activation are.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_PLANATTRS_H
#define KILN_COMPILER_PLAN_PLANATTRS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <string>

namespace kiln::plan {

/// Unit attribute on an op whose results are all host tensors.
inline constexpr const char *kHostAttr = "kiln.host";
/// Dense i64 array on an op: the arena slot of each result, -1 for none.
inline constexpr const char *kSlotsAttr = "kiln.slots";
/// Dictionary on the function: num_slots, slot_static_bytes,
/// unshared_static_bytes (see the MemoryPlan table in schemas/plan.fbs).
inline constexpr const char *kMemoryPlanAttr = "kiln.memory_plan";

/// True for ops whose results become weight tensors in the plan rather than
/// ops: constants never reach the plan's op list (docs/ops.md).
inline bool isWeightOp(mlir::Operation *op) {
  return op->getName().getStringRef() == "kiln.constant";
}

/// True when the op's results are host tensors (kiln-mark-host ran and chose
/// it).
inline bool isHostOp(mlir::Operation *op) { return op->hasAttr(kHostAttr); }

/// Bytes per element of a plan dtype; i1 is stored as one byte (bool).
inline int64_t elementBytes(mlir::Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// Bytes of a ranked tensor with a static shape, or -1.
inline int64_t staticBytes(mlir::Type type) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || !t.getElementType().isIntOrFloat())
    return -1;
  return t.getNumElements() * elementBytes(t.getElementType());
}

/// The ONNX node name an op came from (the importer puts it in a NameLoc,
/// possibly inside a FusedLoc after CSE), or "" when it has none.
inline std::string nodeName(mlir::Location loc) {
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location inner : fused.getLocations())
      if (std::string n = nodeName(inner); !n.empty())
        return n;
  return "";
}

/// "'name' (kiln.op)" for messages, or just "kiln.op" for unnamed ops.
inline std::string describeOp(mlir::Operation *op) {
  std::string name = nodeName(op->getLoc());
  std::string type = op->getName().getStringRef().str();
  return name.empty() ? type : "'" + name + "' (" + type + ")";
}

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PLANATTRS_H
