//===- MemoryPlan.cpp - liveness-based arena slot assignment -------------===//
//
// kiln-memory-plan: gives every activation an arena slot so that tensors with
// disjoint lifetimes share memory. The contract is in Passes.td; the runtime
// re-checks the result on load (runtime/src/plan_loader.cpp, CheckSlots), so
// the lifetime convention here must match it exactly: a tensor is live from
// the op that writes it through the last op that reads it, inclusive, and a
// returned tensor is live to the end.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/PlanAttrs.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

namespace kiln {

#define GEN_PASS_DEF_KILNMEMORYPLAN
#include "passes/Passes.h.inc"

namespace {

/// How large a tensor is, for best-fit decisions when shapes are dynamic:
/// more dynamic dims count as larger (a dynamic dim stands for an unknown,
/// typically large, extent), ties go by the bytes of the static dims.
struct SizeKey {
  int dynamicDims = 0;
  int64_t staticPartBytes = 0;

  bool operator<(const SizeKey &o) const {
    return dynamicDims != o.dynamicDims ? dynamicDims < o.dynamicDims
                                        : staticPartBytes < o.staticPartBytes;
  }
};

/// Bytes of the static dims of `t` times its element size (the whole size
/// when the shape is static), or std::nullopt when that exceeds int64.
std::optional<int64_t> staticPartBytes(mlir::RankedTensorType t) {
  if (llvm::is_contained(t.getShape(), 0))
    return 0; // empty, however large the other dims
  int64_t bytes = plan::elementBytes(t.getElementType());
  for (int64_t d : t.getShape())
    if (!mlir::ShapedType::isDynamic(d) && __builtin_mul_overflow(bytes, d, &bytes))
      return std::nullopt;
  return bytes;
}

/// Callers have checked with staticPartBytes that the size fits.
SizeKey sizeKeyOf(mlir::Type type) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || !t.getElementType().isIntOrFloat())
    return {INT_MAX / 2, 0}; // unranked: huge
  return {static_cast<int>(t.getNumDynamicDims()), *staticPartBytes(t)};
}

/// Emits an error at every op result too large to address, e.g. a static
/// f32[2^61] (2^63 bytes): slot sizes, the arena and the plan's byte counts
/// are all int64.
mlir::LogicalResult checkSizes(mlir::Block &body) {
  bool ok = true;
  for (mlir::Operation &op : body) {
    for (mlir::OpResult r : op.getResults()) {
      auto t = mlir::dyn_cast<mlir::RankedTensorType>(r.getType());
      if (!t || !t.getElementType().isIntOrFloat() || staticPartBytes(t))
        continue;
      op.emitError() << "result " << r.getResultNumber() << " of type " << t
                     << " needs more than 2^63 bytes; kiln cannot plan its memory";
      ok = false;
    }
  }
  return mlir::success(ok);
}

struct Slot {
  SizeKey key;             // largest tensor assigned so far
  int64_t staticBytes = 0; // largest static size, or -1 once a dynamic tensor joins
};

/// Greedy interval coloring in op order. Owns the slot table and the free
/// list; the pass feeds it tensors in the order they are written.
class SlotAllocator {
public:
  /// Slot for a tensor of `type`: the free slot that fits best, else the
  /// largest free one (it grows least), else a new one.
  int allocate(mlir::Type type) {
    SizeKey need = sizeKeyOf(type);
    int best = -1;
    bool bestFits = false;
    for (int s : free_) {
      bool fits = !(slots_[s].key < need);
      if (best < 0 || (fits && !bestFits) ||
          (fits == bestFits &&
           (fits ? slots_[s].key < slots_[best].key : slots_[best].key < slots_[s].key))) {
        best = s;
        bestFits = fits;
      }
    }
    if (best < 0) {
      best = static_cast<int>(slots_.size());
      slots_.push_back({need, 0});
    } else {
      free_.erase(std::find(free_.begin(), free_.end(), best));
      if (slots_[best].key < need)
        slots_[best].key = need;
    }
    int64_t bytes = plan::staticBytes(type);
    Slot &slot = slots_[best];
    slot.staticBytes = (bytes < 0 || slot.staticBytes < 0) ? -1 : std::max(slot.staticBytes, bytes);
    return best;
  }

  void release(int slot) { free_.push_back(slot); }
  const std::vector<Slot> &slots() const { return slots_; }

private:
  std::vector<Slot> slots_;
  std::vector<int> free_;
};

/// Ops whose result is their first operand's bytes under another shape. The
/// result takes the operand's slot (a view: the kernels copy nothing when
/// input and output are one buffer), and the slot stays taken until the
/// last reader of either; the runtime's slot check knows the same ops.
bool isViewOp(mlir::Operation *op) {
  llvm::StringRef name = op->getName().getStringRef();
  return name == "kiln.reshape" || name == "kiln.flatten" || name == "kiln.squeeze" ||
         name == "kiln.unsqueeze";
}

struct MemoryPlanPass : impl::KilnMemoryPlanBase<MemoryPlanPass> {
  void runOnOperation() override;
};

void MemoryPlanPass::runOnOperation() {
  mlir::func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  mlir::Block &body = func.getBody().front();
  if (mlir::failed(checkSizes(body)))
    return signalPassFailure();

  llvm::DenseMap<mlir::Operation *, int> position;
  int n = 0;
  for (mlir::Operation &op : body)
    position[&op] = n++;

  // Index of the last op in `body` that reads `v`; INT_MAX when returned.
  auto lastUse = [&](mlir::Value v, int producer) {
    int last = producer;
    for (mlir::Operation *user : v.getUsers()) {
      mlir::Operation *top = body.findAncestorOpInBlock(*user);
      if (!top)
        continue;
      if (top->hasTrait<mlir::OpTrait::IsTerminator>())
        return INT_MAX;
      last = std::max(last, position[top]);
    }
    return last;
  };

  SlotAllocator allocator;
  std::multimap<int, int> expiring; // last use -> slot to free after it
  llvm::DenseMap<mlir::Value, int> slotOf;
  std::vector<int> slotEnd; // per slot: the last reader of what it holds now
  int64_t unshared = 0;
  for (mlir::Operation &op : body) {
    int pos = position[&op];
    if (!op.hasTrait<mlir::OpTrait::IsTerminator>() && !plan::isWeightOp(&op) &&
        !plan::isHostOp(&op) && op.getNumResults() > 0) {
      llvm::SmallVector<int64_t> slots;
      for (mlir::Value r : op.getResults()) {
        if (!mlir::isa<mlir::TensorType>(r.getType())) {
          slots.push_back(-1);
          continue;
        }
        int last = lastUse(r, pos);
        // A view shares its operand's slot, unless either is returned (each
        // graph output gets memory of its own).
        int slot = -1;
        if (isViewOp(&op) && last != INT_MAX) {
          mlir::Value in = op.getOperand(0);
          auto it = slotOf.find(in);
          if (it != slotOf.end() &&
              mlir::cast<mlir::TensorType>(in.getType()).getElementType() ==
                  mlir::cast<mlir::TensorType>(r.getType()).getElementType() &&
              slotEnd[it->second] != INT_MAX)
            slot = it->second;
        }
        if (slot < 0) {
          slot = allocator.allocate(r.getType());
          if (slot >= static_cast<int>(slotEnd.size()))
            slotEnd.resize(slot + 1, -1);
          slotEnd[slot] = last;
          int64_t bytes = plan::staticBytes(r.getType());
          if (bytes < 0 || unshared < 0 || __builtin_add_overflow(unshared, bytes, &unshared))
            unshared = -1; // dynamic, or more than int64 in all (then unknown too)
        } else {
          slotEnd[slot] = std::max(slotEnd[slot], last);
        }
        slots.push_back(slot);
        slotOf[r] = slot;
        if (last != INT_MAX)
          expiring.emplace(last, slot);
      }
      op.setAttr(plan::kSlotsAttr, mlir::DenseI64ArrayAttr::get(&getContext(), slots));
    }
    // Only after this op's results have slots: an operand read here and a
    // result written here must never share memory. A slot whose views are
    // read later stays taken.
    auto [begin, end] = expiring.equal_range(pos);
    for (auto it = begin; it != end; ++it)
      if (slotEnd[it->second] == pos) {
        allocator.release(it->second);
        slotEnd[it->second] = -1; // once, however many of its tensors end here
      }
    expiring.erase(begin, end);
  }

  mlir::Builder b(&getContext());
  llvm::SmallVector<int64_t> slotBytes;
  int64_t arenaBytes = 0;
  for (const Slot &s : allocator.slots()) {
    slotBytes.push_back(s.staticBytes);
    if (s.staticBytes > 0 && __builtin_add_overflow(arenaBytes, s.staticBytes, &arenaBytes)) {
      func.emitError() << "the arena's static slots need more than 2^63 bytes in all";
      return signalPassFailure();
    }
  }
  func->setAttr(plan::kMemoryPlanAttr,
                b.getDictionaryAttr({
                    b.getNamedAttr("num_slots", b.getI64IntegerAttr(allocator.slots().size())),
                    b.getNamedAttr("slot_static_bytes", b.getDenseI64ArrayAttr(slotBytes)),
                    b.getNamedAttr("unshared_static_bytes", b.getI64IntegerAttr(unshared)),
                }));
}

} // namespace
} // namespace kiln
