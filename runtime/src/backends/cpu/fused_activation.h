// The fused MLP ops' activation (core/shapes/fused_mlp.h) as the CPU
// kernels' enum, shared by the f32 and int8 projections' kernels.
#pragma once

#include "core/shapes/fused_mlp.h"
#include "kernels/cpu/activation.h"
#include "kiln/status.h"

namespace kiln::cpu {

// The shape rule's activation as the kernels' enum.
inline StatusOr<kernels::Activation> KernelActivation(StatusOr<FusedActivation> act) {
  using kernels::Activation;
  KILN_RETURN_IF_ERROR(act.status());
  switch (*act) {
  case FusedActivation::kNone:
    return Activation::kNone;
  case FusedActivation::kRelu:
    return Activation::kRelu;
  case FusedActivation::kGelu:
    return Activation::kGelu;
  case FusedActivation::kGeluTanh:
    return Activation::kGeluTanh;
  case FusedActivation::kSilu:
    return Activation::kSilu;
  }
  return Activation::kNone;
}

} // namespace kiln::cpu
