// f16 and bf16 support for CPU kernels that compute in f32/f64 only: the
// wrapped kernel widens half-precision inputs to f32, runs the f32 kernel,
// and rounds half-precision outputs back (round to nearest even).
// Numerically this is what ONNX Runtime's CPU provider does for most f16
// ops. The shape table gives these ops half results for half operands
// (core/shape_table.cpp), so only the run side needs this.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln::cpu {

// The CPU wraps exactly the ops the shape table lists as computing in f32
// for half operands (kiln::ComputesInF32ForHalf, core/shape_table.h), so
// the two can never disagree.
// `run` with f16/bf16 operands widened; unchanged behavior when no operand
// is f16 or bf16. A half 2-D operand at one of `packed_weights` that has a
// packed copy of its own type held (kernels::FindPacked with its own dims) is passed
// as it is, labelled f32: the f32 kernel hands its address to Gemm<float>,
// which finds the packed copy by it and never reads the tensor itself
// (weight_packing.h packs exactly those).
KernelFn WithHalfViaF32(KernelFn run, std::vector<size_t> packed_weights = {});

} // namespace kiln::cpu
