// What the CUDA op wrappers share about operands: their kernels' element
// type, device-to-device copies, and one scratch allocation per op that
// holds everything an op needs besides its operands and results:
//  - copies of operands in host memory: a plan may feed a device op a
//    tensor the host computed (a `host` tensor: shape arithmetic such as a
//    position range), and kernels read device memory only;
//  - f32 copies of f16/bf16 operands, for the rare op whose operands mix
//    float types (f32 with f16, f16 with bf16), which the shape table lets
//    through and the CPU computes in f32 (backends/cpu/half_via_f32.h);
//  - regions of the op's own (a converted exponent, an f32 result).
// OpScratch serves one buffer per op, so all of these come from one call.
#pragma once

#include "backends/cuda/cuda_util.h"
#include "kernels/cuda/elem_type.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln::cuda {

// Unimplemented: "<op>: no CUDA kernel for dtype <t>".
Status NoKernel(std::string_view op, DType t);
// The kernels' element type of `t`, or NoKernel.
StatusOr<kernels::cuda::ElemType> ElemTypeOf(std::string_view op, const TensorView &t);
// Copies `in` (device memory, out.bytes()) to out unless they already share
// memory (in-place plans); enqueued on the context's stream.
Status CopyToResult(ExecContext &ctx, const void *in, TensorView &out);

// True when an f16/bf16 operand or result meets another float type among
// the present operands and `out` (when given): the op must then compute in
// f32 as the CPU does, not in the half type.
bool MixesHalf(const Inputs &in, const TensorView *out);

class StagedOperands {
public:
  // Stages the present operands of `in` (host ones copied, and with
  // `widen_halves` f16/bf16 ones converted to f32; all enqueued on the
  // context's stream) and reserves regions of `extra` bytes each. Asks for
  // scratch only when something needs it.
  static StatusOr<StagedOperands> Stage(std::string_view op, ExecContext &ctx, const Inputs &in,
                                        bool widen_halves = false,
                                        const std::vector<uint64_t> &extra = {});

  // The device address of operand i (nullptr for an omitted one) and the
  // type the kernels see there (f32 for a widened half).
  const void *data(size_t i) const { return data_[i]; }
  kernels::cuda::ElemType type(size_t i) const { return type_[i]; }
  // Region k of `extra` (256-byte aligned; nullptr for a size of 0).
  void *extra(size_t k) const { return extra_[k]; }

private:
  std::vector<const void *> data_;
  std::vector<kernels::cuda::ElemType> type_;
  std::vector<void *> extra_;
};

} // namespace kiln::cuda
