// Each op family's registration, written once for every backend: the
// macro expands, inside a backend's Add<Family>Kernels(table), to one table
// entry per op of the family, naming the backend's own Run<Op> functions
// (found where it expands). A backend without one of them does not compile,
// and the op names of a family are listed here and nowhere else among the
// backends. The shape rules' lists are core/shapes/; the op list they all
// answer to is core/ops.def.
#pragma once

#include "backends/kernel_kinds.h"

// Unary math (kernels/unary_ops.def), Not, IsNaN, Identity, Clip and Cast.
#define KILN_ADD_POINTWISE_KERNELS(table)                                                          \
  AddEach<kUnaryOps>(table, [](auto i) { return KernelFn(RunUnary<decltype(i)::value>); });        \
  table.push_back({"not", RunNot});                                                                \
  table.push_back({"is_nan", RunIsNaN});                                                           \
  table.push_back({"identity", RunIdentity});                                                      \
  table.push_back({"clip", RunClip});                                                              \
  table.push_back({"cast", RunCast})

// Broadcasting arithmetic, Max, Min, comparisons, logic and Where.
#define KILN_ADD_POINTWISE_BINARY_KERNELS(table)                                                   \
  AddEach<kArithOps>(table, [](auto i) { return KernelFn(RunArith<decltype(i)::value>); });        \
  table.push_back({"max", RunMaxMin<true>});                                                       \
  table.push_back({"min", RunMaxMin<false>});                                                      \
  AddEach<kCompareOps>(table, [](auto i) { return KernelFn(RunCompare<decltype(i)::value>); });    \
  AddEach<kLogicOps>(table, [](auto i) { return KernelFn(RunLogic<decltype(i)::value>); });        \
  table.push_back({"where", RunWhere})

// Reductions (kernels/reduce_ops.def), Softmax and LogSoftmax.
#define KILN_ADD_REDUCE_KERNELS(table)                                                             \
  AddEach<kReduceOps>(table, [](auto i) { return KernelFn(RunReduce<decltype(i)::value>); });      \
  table.push_back({"softmax", RunSoftmax<false>});                                                 \
  table.push_back({"log_softmax", RunSoftmax<true>});                                              \
  table.push_back({"cumsum", RunCumSum})

// The movement ops that compute no data: copies (kCopyOps), Shape, Size,
// ConstantOfShape and Range.
#define KILN_ADD_MOVEMENT_SHAPE_KERNELS(table)                                                     \
  for (const char *copy_op : kCopyOps)                                                             \
    table.push_back({copy_op, RunCopy});                                                           \
  table.push_back({"shape", RunShape});                                                            \
  table.push_back({"size", RunSize});                                                              \
  table.push_back({"constant_of_shape", RunConstantOfShape});                                      \
  table.push_back({"range", RunRange})

// The movement ops that move data.
#define KILN_ADD_MOVEMENT_KERNELS(table)                                                           \
  table.push_back({"transpose", RunTranspose});                                                    \
  table.push_back({"slice", RunSlice});                                                            \
  table.push_back({"expand", RunExpand});                                                          \
  table.push_back({"tile", RunTile});                                                              \
  table.push_back({"concat", RunConcat});                                                          \
  table.push_back({"split", RunSplit});                                                            \
  table.push_back({"trilu", RunTrilu})

// Gather, GatherND and ScatterND.
#define KILN_ADD_GATHER_KERNELS(table)                                                             \
  table.push_back({"gather", RunGather});                                                          \
  table.push_back({"gather_nd", RunGatherND});                                                     \
  table.push_back({"scatter_nd", RunScatterND})

// The tensor-parallel collectives.
#define KILN_ADD_COLLECTIVE_KERNELS(table)                                                         \
  table.push_back({"all_reduce", RunAllReduce});                                                   \
  table.push_back({"all_gather", RunAllGather})
