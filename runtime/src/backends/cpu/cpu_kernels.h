// Each op family's CPU kernels, gathered into the CPU kernel table by
// cpu_backend.cpp. The shape rules of the same ops are in core/shapes/; a
// kernel runs only after its rule accepted the operands and sized the
// results.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln::cpu {

// Every family's kernels (core/kernel.h KernelFamily): CpuKernels() is built
// from this list.
const std::vector<KernelFamily> &CpuKernelFamilies();

void AddPointwiseBinaryKernels(std::vector<KernelDef> &table);
void AddPointwiseKernels(std::vector<KernelDef> &table);
void AddProductsKernels(std::vector<KernelDef> &table);
void AddReduceKernels(std::vector<KernelDef> &table);
void AddNormKernels(std::vector<KernelDef> &table);
void AddMovementShapeOpKernels(std::vector<KernelDef> &table);
void AddMovementKernels(std::vector<KernelDef> &table);
void AddGatherKernels(std::vector<KernelDef> &table);
// The fused transformer ops of docs/fused-ops.md.
void AddNormFusedKernels(std::vector<KernelDef> &table);
void AddProductsMlpKernels(std::vector<KernelDef> &table);
void AddProductsQ8Kernels(std::vector<KernelDef> &table);
void AddAttentionKernels(std::vector<KernelDef> &table);
// paged_attention: attention over the runtime-owned paged KV cache.
void AddAttentionPagedKernels(std::vector<KernelDef> &table);
void AddCollectiveKernels(std::vector<KernelDef> &table);

} // namespace kiln::cpu
