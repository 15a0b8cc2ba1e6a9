// The fused MLP ops' activation (core/shapes/products_mlp.h) as the CPU
// kernels' enum, shared by the f32 and int8 projections' kernels.
#pragma once

#include "backends/kernel_kinds.h"
#include "core/shapes/products_mlp.h"
#include "kernels/cpu/pointwise_activation.h"
#include "kiln/status.h"

namespace kiln::cpu {

// The shape rule's activation (or its error) as the kernels' enum.
inline StatusOr<kernels::Activation> KernelActivation(StatusOr<FusedActivation> act) {
  KILN_RETURN_IF_ERROR(act.status());
  return ToKernelActivation(*act);
}

} // namespace kiln::cpu
