//===- HostTensors.cpp - mark shape computations as host tensors ---------===//
//
// kiln-mark-host: the runtime evaluates shape computations on the host before
// it sizes the arena (schemas/plan.fbs, Tensor.host). This pass decides which
// ops those are, starting from the operands whose values are shapes, axes or
// counts and walking their producers backwards. The contract is in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/PlanAttrs.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

namespace kiln {

#define GEN_PASS_DEF_KILNMARKHOST
#include "passes/Passes.h.inc"

namespace {

/// Operands from index `first` on are shape-like for ops of this name, and
/// `role` names them in messages. Optional operands (slice axes/steps,
/// reduce/squeeze axes, split sizes, trilu k) all sit at the end, so "from
/// `first` on" stays right when some are omitted.
struct ShapeOperands {
  int first = -1; // -1: the op has no shape-like operand
  const char *role = "";
};

ShapeOperands shapeOperandsOf(llvm::StringRef name) {
  if (!name.consume_front("kiln."))
    return {};
  if (name == "reshape" || name == "expand")
    return {1, "shape"};
  if (name == "slice")
    return {1, "starts/ends/axes/steps"};
  if (name == "constant_of_shape")
    return {0, "shape"};
  if (name == "range")
    return {0, "start/limit/delta"};
  if (name == "squeeze" || name == "unsqueeze" || name.starts_with("reduce_"))
    return {1, "axes"};
  if (name == "split")
    return {1, "split"};
  if (name == "tile")
    return {1, "repeats"};
  if (name == "trilu")
    return {1, "k"};
  return {};
}

/// Ops that are cheap scalar/shape arithmetic, so the host may evaluate them
/// even on float values (e.g. a float Range for rotary positions).
bool isShapeArithmetic(llvm::StringRef name) {
  if (!name.consume_front("kiln."))
    return false;
  return llvm::StringSwitch<bool>(name)
      .Cases("shape", "size", "gather", "concat", "reshape", "unsqueeze", "squeeze", "slice", true)
      .Cases("cast", "add", "sub", "mul", "div", "neg", "abs", "floor", "ceil", true)
      .Cases("equal", "less", "greater", "less_or_equal", "greater_or_equal", true)
      .Cases("and", "or", "xor", "not", "where", "max", "min", "clip", true)
      .Cases("range", "constant_of_shape", "expand", "identity", "tile", "split", true)
      .Cases("transpose", "flatten", "reduce_sum", "reduce_max", "reduce_min", true)
      .Cases("reduce_mean", "constant", true)
      .Default(false);
}

bool isFloatTensor(mlir::Type t) {
  auto shaped = mlir::dyn_cast<mlir::ShapedType>(t);
  return shaped && mlir::isa<mlir::FloatType>(shaped.getElementType());
}

/// An op that computes float data the host cannot reproduce before running
/// the model: anything that is not shape arithmetic and touches floats.
bool isFloatCompute(mlir::Operation *op) {
  if (isShapeArithmetic(op->getName().getStringRef()))
    return false;
  for (mlir::Type t : op->getOperandTypes())
    if (isFloatTensor(t))
      return true;
  for (mlir::Type t : op->getResultTypes())
    if (isFloatTensor(t))
      return true;
  return false;
}

struct MarkHostPass : impl::KilnMarkHostBase<MarkHostPass> {
  void runOnOperation() override;
};

void MarkHostPass::runOnOperation() {
  mlir::func::FuncOp func = getOperation();
  // Each pending value remembers the shape operand that made it a host
  // tensor, so an error can name both ends of the chain.
  struct Pending {
    mlir::Value value;
    mlir::Operation *consumer;
    const char *role;
  };
  llvm::SmallVector<Pending> worklist;
  func.walk([&](mlir::Operation *op) {
    ShapeOperands s = shapeOperandsOf(op->getName().getStringRef());
    if (s.first < 0)
      return;
    for (unsigned i = s.first; i < op->getNumOperands(); ++i)
      worklist.push_back({op->getOperand(i), op, s.role});
  });

  mlir::UnitAttr host = mlir::UnitAttr::get(&getContext());
  llvm::DenseSet<mlir::Operation *> visited;
  while (!worklist.empty()) {
    Pending p = worklist.pop_back_val();
    mlir::Operation *producer = p.value.getDefiningOp();
    // Graph inputs are bound on the host, constants live in the plan.
    if (!producer || plan::isWeightOp(producer) || !visited.insert(producer).second)
      continue;
    if (isFloatCompute(producer)) {
      mlir::InFlightDiagnostic diag =
          producer->emitError()
          << plan::describeOp(producer)
          << " computes float data that a shape depends on: it reaches the " << p.role
          << " operand of " << plan::describeOp(p.consumer)
          << "; shapes must be computable on the host from input shapes and constants";
      diag.attachNote(p.consumer->getLoc()) << "the shape is used here";
      return signalPassFailure();
    }
    producer->setAttr(plan::kHostAttr, host);
    // Shape and Size read only their input's dims, which the host always knows.
    if (producer->getName().getStringRef() == "kiln.shape" ||
        producer->getName().getStringRef() == "kiln.size")
      continue;
    for (mlir::Value operand : producer->getOperands())
      worklist.push_back({operand, p.consumer, p.role});
  }
}

} // namespace
} // namespace kiln
