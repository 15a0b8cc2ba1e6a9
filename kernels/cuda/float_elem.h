// The float element types of the CUDA kernels' buffers, named here so that
// kernel headers need no runtime type (the op wrappers map kiln::DType).
#pragma once

namespace kiln::kernels::cuda {

enum class FloatElem { kF32, kF64, kF16, kBF16 };

} // namespace kiln::kernels::cuda
