// Each op family's CUDA kernels, gathered into the CUDA kernel table by
// cuda_backend.cpp. The shape rules are the backend-neutral ones of
// core/shapes/; a kernel runs only after its rule accepted the operands and
// sized the results, so it checks only what the rule leaves to the kernel
// (index values, attribute values the rule does not read).
//
// Float ops take f32, f16 and bf16 natively (f16/bf16 computed in f32 and
// rounded to nearest even once per result); there is no half-via-f32
// wrapper on the device, since it would need temporary device copies.
#pragma once

#include "core/kernel.h"

#include <vector>

namespace kiln::cuda {

// Every family's kernels (core/kernel.h KernelFamily): CudaKernels() is built
// from this list and the engine's own kernels (kiln.sample).
const std::vector<KernelFamily> &CudaKernelFamilies();

// Unary math, not, is_nan, identity, clip, cast.
void AddPointwiseKernels(std::vector<KernelDef> &table);
// The broadcasting ones (ops_pointwise_binary.cpp): arithmetic, comparisons,
// logic, where.
void AddPointwiseBinaryKernels(std::vector<KernelDef> &table);
// gelu (ops_norm.cpp).
void AddGeluKernels(std::vector<KernelDef> &table);
// reduce_*, softmax, log_softmax.
void AddReduceKernels(std::vector<KernelDef> &table);
// Data movement: reshape family, transpose, concat, split, slice, expand,
// tile, trilu, range, constant_of_shape.
void AddMovementKernels(std::vector<KernelDef> &table);
// gather, gather_nd, scatter_nd (ops_gather.cpp).
void AddGatherKernels(std::vector<KernelDef> &table);
// matmul, gemm, linear, gated_mlp through cuBLASLt, and kiln's GEMV for few rows.
void AddProductsKernels(std::vector<KernelDef> &table);
// layer_normalization, rms_norm, add_rms_norm, add_layer_norm.
void AddNormKernels(std::vector<KernelDef> &table);
// rotary (ops_norm.cpp).
void AddRotaryKernels(std::vector<KernelDef> &table);
// attention and paged_attention.
void AddAttentionKernels(std::vector<KernelDef> &table);
// kiln.sample: the engine's on-device sampler (no plan op; ops_sampling.cpp).
void AddSamplingKernels(std::vector<KernelDef> &table);
// all_reduce, all_gather over the context's communicator (NCCL).
void AddCollectiveKernels(std::vector<KernelDef> &table);

} // namespace kiln::cuda
