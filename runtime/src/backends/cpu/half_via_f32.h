// f16 and bf16 support for ops whose kernels compute in f32/f64 only: the
// wrapped op widens half-precision inputs to f32, runs the f32 kernel, and
// rounds half-precision outputs back (round to nearest even). Numerically this
// is what ONNX Runtime's CPU provider does for most f16 ops.
#pragma once

#include "op_registry.h"

#include <string_view>

namespace kiln::cpu {

// True for the arithmetic, math, reduction, normalization and matrix ops
// that get the wrapper; byte-moving ops (reshape, gather, concat, ...)
// handle every dtype themselves.
bool ComputesInF32ForHalf(std::string_view type);

// `def` with infer and run that widen f16/bf16 operands; unchanged behavior
// when no operand is f16 or bf16.
OpDef WithHalfViaF32(const OpDef &def);

}  // namespace kiln::cpu
