//===- Partitioner.h - kiln-partition's matcher and rewriter -----*- C++ -*-===//
//
// What Partition.cpp (the pass, MLPs, pairs, embedding, LM head),
// PartitionAttention.cpp (attention layers' heads) and PartitionShapes.cpp
// (shape and constant helpers) share: the Partitioner and the layer shapes
// it matches. Private to passes/.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PARTITIONER_H
#define KILN_PASSES_PARTITIONER_H

#include "compiler/dialect/KilnCollectiveOps.h"
#include "compiler/plan/PlanAttrs.h"
#include "passes/PartitionShard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::partition {

using namespace mlir;

int64_t dim(Value v, int64_t i);

/// `v`'s type with dim `axis` set to `n`.
Type withDim(Value v, int64_t axis, int64_t n);

bool isStaticWeight(Value v, int64_t rank);

std::string nodeOf(Operation *op);

/// The values of a small i64 constant, or nullopt.
std::optional<SmallVector<int64_t>> constInts(Value v);

Value i64Const(OpBuilder &b, Location loc, ArrayRef<int64_t> values);

/// Where element `index` of a reshape target lives: the target is a
/// constant, or a concat of 1-D pieces (a shape built from the input's
/// dims and constant head counts), and the piece holding it is a constant.
struct ShapeSlot {
  ConcatOp concat;    // null: the target itself is the constant
  unsigned piece = 0; // the concat operand
  int64_t at = 0;     // the element within the constant
  SmallVector<int64_t> values;
};

std::optional<ShapeSlot> shapeSlot(Value shape, int64_t index);

/// The length of a 1-D reshape target, or -1.
int64_t shapeLength(Value shape);

/// Gives `reshape` a target whose element `index` is `value`. A shared
/// target (CSE merges equal ones across layers) is copied, never changed.
void setShapeElement(OpBuilder &b, ReshapeOp reshape, int64_t index, int64_t value);

/// Whether `s` reads only the sizes of dims of its input other than `axis`:
/// its [start, end) leaves `axis` out, or every reader of its result is a
/// gather of constant indices that skip it. Such a reader sees the same
/// dims on every rank when a split narrows `axis`.
bool readsDimsBesides(ShapeOp s, int64_t axis);

/// A reader of `v` that is neither in `expected` nor a kiln.shape reading
/// only dims other than `axis` (see readsDimsBesides), or null.
Operation *readerBesides(Value v, ArrayRef<Operation *> expected, int64_t axis);

/// Points the kiln.shape readers of `from` at `to` (a value with the same
/// dims wherever they read).
void rewireShapeReaders(Value from, Value to);

/// How the ranks share one attention layer's heads.
struct HeadPlan {
  std::vector<Range> q, kv;
};

/// DeepSpeed's uneven split of the query heads; each rank keeps the KV
/// heads its query heads read. Where that would make a rank's query heads
/// read their KV heads in groups of unequal size (paged_attention maps
/// query head h to KV head h / (Hq_r / Hkv_r)), whole KV groups are split
/// instead (a KV head and its query heads); fails when there are fewer KV
/// heads than ranks to do that.
FailureOr<HeadPlan> planHeads(int64_t hq, int64_t hkv, int64_t ranks, std::string &why);

llvm::json::Array counts(const std::vector<Range> &ranges);

/// One attention layer as kiln-ragged and kiln-inject leave it: the
/// projection, per q/k/v a chain of reshape -> [transpose] -> [rotary] to
/// paged_attention, then [transpose] -> reshape -> o_proj. The projection
/// outputs and the attention output may also be read for their other dims
/// (kiln.shape, as exports build reshape targets from them), and the
/// attention output reshaped once more into [.., Hq D] for its shape only.
struct Attention {
  PagedAttentionOp pa;
  LinearOp fused;                    // fused QKV, split into three; or null
  SmallVector<Operation *, 3> parts; // the fused projection's split, or its 3 slices
  Value source[3];                   // what the q, k, v reshapes read
  LinearOp proj[3];                  // separate projections (no fused one)
  SmallVector<Operation *> in[3];    // q, k, v chains, from pa back to the reshape
  SmallVector<Operation *> out;      // from pa's result to o_proj's input
  SmallVector<ReshapeOp> sideMerges; // [.., Hq, D] -> [.., Hq D], read for other dims
  bool outShapeRead = false;         // a kiln.shape reads dims of pa's result (or beyond)
  LinearOp o;
  int64_t hq = 0, hkv = 0, d = 0;
  HeadPlan heads;
};

/// A column-split linear -> elementwise ops -> row-split linear pair (an
/// MLP without a gate, or a pair the manual policy names).
struct LinearPair {
  LinearOp col, row;
  SmallVector<Operation *> between;
  std::vector<Range> cols;
  bool manual = false;
};

class Partitioner {
public:
  Partitioner(func::FuncOp f, int64_t ranks, int64_t rank, ArrayRef<std::string> globs,
              bool requireAll)
      : f(f), ranks(ranks), rank(rank), requireAll(requireAll), b(f.getContext()) {
    for (const std::string &g : globs)
      if (auto p = llvm::GlobPattern::create(g))
        patterns.push_back({g, std::move(*p)});
  }
  LogicalResult run();
  llvm::json::Object report();

private:
  LogicalResult matchAttention(PagedAttentionOp pa, Attention &a, std::string &why);
  LogicalResult matchPairInto(LinearOp row, LinearPair &p, std::string &why);
  LogicalResult replicate(Operation *op, StringRef what, const std::string &why);
  bool taken(Operation *op) const { return used.contains(op); }
  void rewriteAttention(Attention &a);
  void zeroAttention(Attention &a);
  void rewriteGatedMlp(GatedMlpOp mlp, Range f);
  void rewriteMoe(MoeOp moe, Range f);
  void rewritePair(LinearPair &p);
  void rewriteEmbedding(GatherOp g, const std::vector<Range> &vocab);
  void rewriteLmHead(LinearOp head, const std::vector<Range> &vocab);
  Value allReduce(Value partial);
  Value slice(Value w, int64_t axis, int64_t offset, int64_t count, int64_t fullDim,
              int64_t groups = 1) {
    return partition::sliceWeight(b, w, axis, offset, count, fullDim, groups, rank);
  }
  void eraseDead();

  func::FuncOp f;
  int64_t ranks, rank;
  bool requireAll;
  OpBuilder b;
  std::vector<std::pair<std::string, llvm::GlobPattern>> patterns;
  llvm::DenseSet<Operation *> used;
  llvm::json::Array layers, replicated;
};

} // namespace kiln::partition

#endif // KILN_PASSES_PARTITIONER_H
