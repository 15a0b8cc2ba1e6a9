// The CPU backend's table of ops: for each plan op type, a shape/dtype
// inference function and a run function. Ops translate plan semantics
// (broadcasting, ONNX attributes) into calls to the plain kernels in
// kernels/cpu/.
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"
#include "core/op_attrs.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cpu {

// Inputs are in plan order; an omitted optional operand is nullptr. During
// inference an input's `data` is non-null only when its values are known on
// the host (weights, graph inputs, host-evaluated shape tensors); an op whose
// output shape depends on values it cannot see returns an error.
using InferFn = std::function<Status(const OpAttrs &attrs, const std::vector<const TensorView *> &in,
                           std::vector<TensorView> &out /* sized to #outputs; set dtype+shape */)>;
// Runs with every input's data present and outputs allocated with the
// inferred dtype and shape.
using RunFn = std::function<Status(const OpAttrs &attrs, const std::vector<const TensorView *> &in,
                         std::vector<TensorView> &out)>;

struct OpDef {
  const char *type;
  InferFn infer;
  RunFn run;
};

// nullptr when this runtime has no kernel for `type`.
const OpDef *FindOp(std::string_view type);
std::vector<std::string> SupportedOpTypes();

// Every family's definitions as written, without the half-via-f32 wrapper:
// the source of the shape table (core/shape_table.cpp) and of the CPU
// kernel table (kernel_table.cpp).
const std::vector<OpDef> &AllOpDefs();

}  // namespace kiln::cpu
