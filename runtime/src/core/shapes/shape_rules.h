// Each op family's shape rules, gathered into the shape table by
// core/shape_table.cpp. A family's kernels live in every backend's own
// table (the CPU's: cpu::CpuKernels()); the rules here are the one
// definition of what each op accepts and what it produces, and the operand
// checks beside them (core/shapes/*.h) are what those kernels share.
#pragma once

#include "core/op_list.h"
#include "core/shape_table.h"

#include <vector>

namespace kiln {

// One op family's rules (one of its files).
struct ShapeRuleFamily {
  OpFamily family;
  void (*add)(std::vector<ShapeRule> &rules);
};
// Every family's rules: the shape table is built from this list, and
// OpTable.EveryRuleAndCpuKernelIsWhereItsFamilySays checks that each adds
// only ops of its family (core/ops.def).
const std::vector<ShapeRuleFamily> &ShapeRuleFamilies();

void AddPointwiseBinaryShapeRules(std::vector<ShapeRule> &rules);
void AddPointwiseShapeRules(std::vector<ShapeRule> &rules);
void AddProductsShapeRules(std::vector<ShapeRule> &rules);
void AddReduceShapeRules(std::vector<ShapeRule> &rules);
void AddNormShapeRules(std::vector<ShapeRule> &rules);
void AddMovementShapeOpRules(std::vector<ShapeRule> &rules);
void AddMovementShapeRules(std::vector<ShapeRule> &rules);
void AddGatherShapeRules(std::vector<ShapeRule> &rules);
// The fused transformer ops of docs/fused-ops.md.
void AddNormFusedShapeRules(std::vector<ShapeRule> &rules);
void AddProductsMlpShapeRules(std::vector<ShapeRule> &rules);
void AddAttentionShapeRules(std::vector<ShapeRule> &rules);
// paged_attention: attention over the runtime-owned paged KV cache.
void AddAttentionPagedShapeRules(std::vector<ShapeRule> &rules);
// all_reduce, all_gather: tensor parallelism's collectives.
void AddCollectiveShapeRules(std::vector<ShapeRule> &rules);

} // namespace kiln
