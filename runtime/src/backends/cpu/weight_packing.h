// The CPU backend's weight layout: matrix-product operands packed once.
#pragma once

#include "core/backend.h"
#include "kernels/cpu/products_packed_matrix.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cpu {

// Packs the f32, bf16, f16 and int8 (with its scales: linear_q8,
// gated_mlp_q8) 2-D weights that `ops` read as a product's right operand
// (unless kiln/cpu.h's SetCpuWeightPacking turned it off) into `packed`,
// which keeps them alive; products find them by the weight's address
// (kernels/cpu/products_gemm.cpp). Weights nothing else reads have their mapped pages
// given back. Out of memory only skips packing.
// The operand positions of `type` whose bf16 and f16 weights are packed in
// their own type and reach the product unwidened (WithHalfViaF32's
// pass-through): B of matmul and linear, both weights of gated_mlp.
std::vector<size_t> HalfProductOperands(const std::string &type);

void PackProductWeights(const Plan &plan, const std::vector<WeightUse> &ops,
                        std::vector<std::shared_ptr<const kernels::PackedMatrix>> &packed,
                        UploadStats &stats);

} // namespace kiln::cpu
