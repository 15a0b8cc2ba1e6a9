//===- DecoderIO.h - find a decoder's inputs and outputs --------*- C++ -*-===//
//
// The runtime drives a decoder through named roles (token ids, mask,
// positions, logits, KV cache pairs). ONNX exports of Hugging Face models
// (optimum, torch.onnx) name them by convention; this unit matches those
// names so the runtime never has to guess.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_DECODERIO_H
#define KILN_COMPILER_PLAN_DECODERIO_H

#include "compiler/plan/PlanModel.h"

#include "llvm/Support/Error.h"

namespace kiln::plan {

/// Roles by name: inputs input_ids, attention_mask, position_ids; output
/// logits; and every past_key_values.N.{key,value} input paired with the
/// present.N.{key,value} output (ordered by N, key before value). A past
/// without its present (or, when the model has any past, the reverse) is an
/// error: the runtime could not carry that cache between steps. Roles a
/// model lacks stay -1.
llvm::Expected<DecoderDesc> detectDecoderIO(const GraphDesc &graph);

/// The ragged roles (kv_slots, query_start, context_lens, block_tables,
/// logits_indices, kv_cache.N.{key,value}) of a graph kiln-ragged rewrote.
/// Not present when the graph has no kv_cache inputs; an error when it has
/// some but a role is missing or a layer lacks its key or value.
llvm::Expected<RaggedDesc> detectRaggedIO(const GraphDesc &graph);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_DECODERIO_H
