// The one list of the ops a plan can hold (core/ops.def, generated from the
// dialect's .td files by tools/gen_op_list.py): each op's name, family and
// half-precision rule. The shape table and every backend's kernel table are
// checked against it (test/unit/kernels/op_table_test.cpp), so an op missing
// a rule or a CPU kernel, or a kernel for an op no plan can hold, fails a
// test that names it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln {

// The files that hold an op's shape rule and kernels.
enum class OpFamily : uint8_t {
  kPointwise,  // elementwise arithmetic, math, comparisons, logic, casts
  kMovement,   // layout and shape: reshape, transpose, concat, slice, ...
  kGather,     // indexed reads and writes: gather, gather_nd, scatter_nd
  kReduce,     // reductions and softmax
  kNorm,       // layer and RMS normalization, fused with a residual add or not
  kProducts,   // matrix products, the fused projections and MLPs
  kAttention,  // attention, paged attention, rotary
  kCollective, // all_reduce, all_gather
};

// How an op computes f16/bf16 operands.
enum class HalfRule : uint8_t {
  kNative, // its kernels read and write half as it is (or it has no float operands)
  kF32,    // in f32: its shape rule is written for f32 and the results keep the
           // operands' half type; a backend may widen around an f32 kernel
};

enum class OpId : uint16_t {
#define KILN_OP(id, name, family, half) k##id,
#include "core/ops.def"
#undef KILN_OP
};

struct OpInfo {
  OpId id;
  std::string_view name;
  OpFamily family;
  HalfRule half;
};

// Every op, sorted by name.
const std::vector<OpInfo> &AllOps();
// nullptr for a name no plan can hold.
const OpInfo *FindOp(std::string_view name);
const OpInfo &GetOp(OpId id);
// "pointwise", "movement", ...: the family's file-name part.
std::string_view OpFamilyName(OpFamily family);

// Besides the plan's ops, a backend's kernel table may hold the engine's own
// kernels, named "kiln.<name>" (plan op names have no dot, so no plan can
// reach them): today kiln.sample, the device sampler (engine/device_sampler.h).
bool IsEngineKernel(std::string_view type);

} // namespace kiln
