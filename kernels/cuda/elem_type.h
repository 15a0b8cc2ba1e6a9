// The element types the CUDA kernels take, as plain launcher arguments (the
// op wrappers map kiln's DType here): kernels/op_kinds.h's.
#pragma once

#include "kernels/op_kinds.h"

namespace kiln::kernels::cuda {

// The one ElemType of kernels/op_kinds.h, also by its CUDA-qualified name.
using kernels::ElemSize;
using kernels::ElemType;
using kernels::IsFloatType;

} // namespace kiln::kernels::cuda
