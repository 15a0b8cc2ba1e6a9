// The CPU backend's weight layout: matrix-product operands packed once.
#pragma once

#include "core/backend.h"
#include "kernels/cpu/packed_matrix.h"

#include <memory>
#include <vector>

namespace kiln::cpu {

// Packs the f32 2-D weights that `ops` read as a product's right operand
// (unless kiln/cpu.h's SetCpuWeightPacking turned it off) into `packed`,
// which keeps them alive; products find them by the weight's address
// (kernels/cpu/gemm.cpp). Weights nothing else reads have their mapped pages
// given back. Out of memory only skips packing.
void PackProductWeights(const Plan &plan, const std::vector<WeightUse> &ops,
                        std::vector<std::shared_ptr<const kernels::PackedMatrix>> &packed,
                        UploadStats &stats);

} // namespace kiln::cpu
