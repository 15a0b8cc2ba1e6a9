// Each op family's shape rules, gathered into the shape table by
// core/shape_table.cpp. A family's kernels live in every backend's own
// table (the CPU's: cpu::CpuKernels()); the rules here are the one
// definition of what each op accepts and what it produces, and the operand
// checks beside them (core/shapes/*.h) are what those kernels share.
#pragma once

#include "core/shape_table.h"

#include <vector>

namespace kiln {

void AddBinaryShapeRules(std::vector<ShapeRule> &rules);
void AddUnaryShapeRules(std::vector<ShapeRule> &rules);
void AddMatMulShapeRules(std::vector<ShapeRule> &rules);
void AddReduceShapeRules(std::vector<ShapeRule> &rules);
void AddNormShapeRules(std::vector<ShapeRule> &rules);
void AddShapeOpShapeRules(std::vector<ShapeRule> &rules);
void AddLayoutShapeRules(std::vector<ShapeRule> &rules);
void AddIndexShapeRules(std::vector<ShapeRule> &rules);
// The fused transformer ops of docs/fused-ops.md.
void AddFusedNormShapeRules(std::vector<ShapeRule> &rules);
void AddFusedMlpShapeRules(std::vector<ShapeRule> &rules);
void AddFusedAttentionShapeRules(std::vector<ShapeRule> &rules);
// paged_attention: attention over the runtime-owned paged KV cache.
void AddPagedAttentionShapeRules(std::vector<ShapeRule> &rules);
// all_reduce, all_gather: tensor parallelism's collectives.
void AddCollectiveShapeRules(std::vector<ShapeRule> &rules);

} // namespace kiln
