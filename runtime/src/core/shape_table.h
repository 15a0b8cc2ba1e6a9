// The backend-neutral shape table: for each plan op type, the rule that
// gives its results' dtypes and shapes from its operands' (and, for shape
// arithmetic, their values). Every backend runs the same rules, so a plan
// binds the same way everywhere; backends differ only in their kernel
// tables (core/kernel.h).
#pragma once

#include "core/kernel.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// During inference an input's `data` is non-null only when its values are
// known on the host (weights, graph inputs, host-evaluated shape tensors);
// a rule whose result shape depends on values it cannot see returns an
// error. `out` is sized to the op's results, each holding the plan's dtype
// on entry; the rule sets dtype and shape.
using InferFn = std::function<Status(const OpAttrs &attrs, const Inputs &in, Outputs &out)>;

struct ShapeRule {
  const char *type;
  InferFn infer;
};

// True for the ops that compute in f32 for f16/bf16 operands and return the
// operands' half type (HalfRule::kF32 in core/ops.def: arithmetic, math,
// reductions, norms, products, attention): their rules are written for f32,
// and a backend without a native half kernel may widen around its f32 one.
// Byte-moving ops (reshape, gather, concat, ...) and paged_attention handle
// every dtype themselves.
bool ComputesInF32ForHalf(std::string_view type);

// nullptr when no rule exists for `type`: the op is unknown to this runtime.
const ShapeRule *FindShapeRule(std::string_view type);
std::vector<std::string> ShapeRuleTypes();

} // namespace kiln
