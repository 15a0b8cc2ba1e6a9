// Each op family's CPU kernels, gathered into the CPU kernel table by
// cpu_backend.cpp. The shape rules of the same ops are in core/shapes/; a
// kernel runs only after its rule accepted the operands and sized the
// results.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln::cpu {

void AddBinaryKernels(std::vector<KernelDef> &table);
void AddUnaryKernels(std::vector<KernelDef> &table);
void AddMatMulKernels(std::vector<KernelDef> &table);
void AddReduceKernels(std::vector<KernelDef> &table);
void AddNormKernels(std::vector<KernelDef> &table);
void AddShapeOpKernels(std::vector<KernelDef> &table);
void AddLayoutKernels(std::vector<KernelDef> &table);
void AddIndexKernels(std::vector<KernelDef> &table);
// The fused transformer ops of docs/fused-ops.md.
void AddFusedNormKernels(std::vector<KernelDef> &table);
void AddFusedMlpKernels(std::vector<KernelDef> &table);
void AddFusedMlpQ8Kernels(std::vector<KernelDef> &table);
void AddFusedAttentionKernels(std::vector<KernelDef> &table);
// paged_attention: attention over the runtime-owned paged KV cache.
void AddPagedAttentionKernels(std::vector<KernelDef> &table);
void AddCollectiveKernels(std::vector<KernelDef> &table);

} // namespace kiln::cpu
