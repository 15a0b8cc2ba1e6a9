// What the movement family's op files (ops_movement.cpp, ops_gather.cpp)
// share: their operands as the device reads them.
//
// A non-host op's operand is usually in device memory, but it may be a host
// tensor: a value of shape arithmetic the executor evaluated on the host
// during Bind (a Range of positions, a Shape) that a device op also reads.
// Byte copies (cudaMemcpy*) read such an operand where it is; kernels get a
// copy in the op's scratch (OpScratch), enqueued on the stream. The copy
// reads host memory that lives as long as the binding, so it may run after
// the wrapper returns.
#pragma once

#include "core/kernel.h"
#include "kiln/status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace kiln::cuda {

class DeviceOperands {
public:
  // Stages operands `which` of `in` that are host tensors and reserves
  // `extra_bytes` of the op's scratch for the op itself (256-byte aligned),
  // all in one OpScratch call. Omitted operands stay null.
  static StatusOr<DeviceOperands> Make(ExecContext &ctx, const Inputs &in,
                                       std::initializer_list<int> which, uint64_t extra_bytes = 0);

  // The device address of operand i (null when omitted or not asked for).
  const void *operator[](size_t i) const { return ptrs_[i]; }
  // The reserved scratch (null when none was asked for).
  void *extra() const { return extra_; }

private:
  std::vector<const void *> ptrs_;
  void *extra_ = nullptr;
};

// How cudaMemcpy* reads `t`.
cudaMemcpyKind CopyKindFrom(const TensorView &t);

// Copies src's bytes to dst (a result in device memory) on the stream,
// unless they are empty or already the same memory (an in-place plan).
Status CopyTensor(ExecContext &ctx, const TensorView &src, TensorView &dst);

} // namespace kiln::cuda
