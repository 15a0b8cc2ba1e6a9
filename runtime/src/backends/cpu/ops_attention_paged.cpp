// CPU kernel of paged_attention (docs/fused-ops.md): a continuous batch's new
// tokens stored into the runtime-owned paged KV cache, then attending
// causally to their own sequence's context through its block table. Its
// shape rule, dims and index checks are in core/shapes/attention_paged.cpp.
//
// Every shape and index is checked before anything is written, so a
// rejected call leaves the caches as they were.
#include "core/shapes/attention_paged.h"
#include "core/shapes/fused_checks.h"
#include "cpu_kernels.h"
#include "kernels/cpu/attention_paged.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

constexpr const char *kPaged = "paged_attention";

using namespace paged_attention;

// The shape rule's dims as the kernel's.
kernels::PagedAttentionDims KernelDims(const Dims &d) {
  kernels::PagedAttentionDims k;
  k.q_heads = d.q_heads;
  k.kv_heads = d.kv_heads;
  k.tokens = d.tokens;
  k.head_dim = d.head_dim;
  k.v_dim = d.v_dim;
  k.num_blocks = d.num_blocks;
  k.block_size = d.block_size;
  k.num_seqs = d.num_seqs;
  k.max_blocks = d.max_blocks;
  k.q_head_stride = d.q_head_stride;
  k.q_token_stride = d.q_token_stride;
  k.kv_head_stride = d.kv_head_stride;
  k.kv_token_stride = d.kv_token_stride;
  return k;
}

// The caches are runtime-owned persistent buffers that this op updates in
// place: it writes through k_cache's and v_cache's input views. A
// TensorView's constness is shallow (`data` is a plain pointer), so a
// `const TensorView *` input still names writable memory; the executor binds
// these two operands to the cache buffers, never to a copy.
Status RunPaged(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(Dims dims, ResolveDims(attrs, in));
  KILN_ASSIGN_OR_RETURN(float scale, RequiredFloat(kPaged, attrs, "scale"));
  KILN_RETURN_IF_ERROR(CheckIndices(in, dims));
  kernels::PagedAttentionDims d = KernelDims(dims);
  KILN_ASSIGN_OR_RETURN(d.softcap, SoftCapOf(kPaged, attrs));
  KILN_ASSIGN_OR_RETURN(d.window, WindowOf(kPaged, attrs));
  const kernels::PagedBatch b = {
      in[kSlots]->as<const int64_t>(), in[kQueryStart]->as<const int64_t>(),
      in[kContextLens]->as<const int64_t>(), in[kTables]->as<const int64_t>()};
  if (in[kQ]->dtype == DType::kF32) {
    kernels::PagedAttention(in[kQ]->as<const float>(), in[kKNew]->as<const float>(),
                            in[kVNew]->as<const float>(), in[kKCache]->as<float>(),
                            in[kVCache]->as<float>(), b, out[0].as<float>(), d, scale);
    return Status::Ok();
  }
  // f16 or bf16 (the shape rule admits nothing else): caches updated in
  // their own type, attention in f32.
  const auto kind =
      in[kQ]->dtype == DType::kF16 ? kernels::ElemType::kF16 : kernels::ElemType::kBF16;
  kernels::PagedAttention(kind, in[kQ]->as<const uint16_t>(), in[kKNew]->as<const uint16_t>(),
                          in[kVNew]->as<const uint16_t>(), in[kKCache]->as<uint16_t>(),
                          in[kVCache]->as<uint16_t>(), b, out[0].as<uint16_t>(), d, scale);
  return Status::Ok();
}

} // namespace

void AddAttentionPagedKernels(std::vector<KernelDef> &table) {
  table.push_back({kPaged, RunPaged});
}

} // namespace kiln::cpu
