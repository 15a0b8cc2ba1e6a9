// Plain references for the op oracle: each op written as the obvious loops
// over doubles, from the op's contract (docs/ops.md, docs/fused-ops.md), and
// never from the kernels they check. Slow on purpose; sizes stay small.
#pragma once

#include "core/op_attrs.h"
#include "kiln/tensor.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "test/support/index_math.h"

namespace kiln::oracle {

struct RefTensor {
  Shape shape;
  std::vector<double> v;
  DType dtype = DType::kUndefined; // the operand's (kUndefined for results)
  int64_t numel() const { return NumElements(shape); }
};

// Operands in plan order, nullptr where omitted.
using RefInputs = std::vector<const RefTensor *>;
// The op's results, then the final values of the operands it updates in
// place (OpCase::in_place), in that order. Values are exact; the driver
// rounds them to the result dtype.
using RefFn = std::function<std::vector<RefTensor>(const OpAttrs &, const RefInputs &)>;
using RefTable = std::map<std::string, RefFn, std::less<>>;

// nullptr when no reference exists for `op`.
const RefFn *FindReference(std::string_view op);

// The families' references (ref_*.cpp).
void AddPointwiseRefs(RefTable &t);
void AddMovementRefs(RefTable &t);
void AddReduceNormRefs(RefTable &t);
void AddProductRefs(RefTable &t);
void AddAttentionRefs(RefTable &t);

// ---- Index helpers, one element at a time -------------------------------
// Unravel, Ravel and BroadcastIndex come from test/support/index_math.h.
using test::BroadcastIndex;
using test::Ravel;
using test::Unravel;
// Numpy broadcast of several shapes (the test's cases always broadcast).
Shape BroadcastAll(const std::vector<Shape> &shapes);
// A negative axis counts from the end.
int64_t Axis(int64_t axis, size_t rank);

} // namespace kiln::oracle
