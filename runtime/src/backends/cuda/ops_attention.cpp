// CUDA kernels of attention (dense, with GQA heads, an optional broadcast
// mask and a causal limit) and paged_attention (a continuous batch over the
// paged KV cache, the caches written in place); docs/fused-ops.md. Their
// shape rules are in core/shapes/{fused_attention,paged_attention}.cpp; the
// device code is in kernels/cuda/{attention,paged_attention,attention_mma,
// decode_attention}.cu.
#include "core/shapes/attention.h"
#include "core/shapes/attention_paged.h"
#include "core/shapes/fused_checks.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "fused_operands.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_decode.h"
#include "kernels/cuda/attention_mma.h"
#include "kernels/cuda/attention_paged.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

constexpr const char *kAttention = "attention";
constexpr const char *kPaged = "paged_attention";
constexpr const char *kIndexNames[] = {"slots", "query_start", "context_lens", "block_tables"};

// ---- attention -----------------------------------------------------------

// The mask as strides over [b, h, i, j]: right-aligned, 0 where broadcast.
kc::DenseMask MaskOf(const TensorView *m) {
  kc::DenseMask mask;
  if (m == nullptr)
    return mask;
  mask.kind = m->dtype == DType::kBool   ? kc::DenseMaskKind::kBool
              : m->dtype == DType::kF16  ? kc::DenseMaskKind::kAdditiveF16
              : m->dtype == DType::kBF16 ? kc::DenseMaskKind::kAdditiveBF16
                                         : kc::DenseMaskKind::kAdditive;
  mask.data = m->data;
  const std::vector<int64_t> strides = ContiguousStrides(m->shape);
  const size_t lead = 4 - m->shape.size();
  for (size_t i = 0; i < m->shape.size(); ++i)
    mask.strides[lead + i] = m->shape[i] == 1 ? 0 : strides[i];
  return mask;
}

Status RunAttention(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(AttentionDims a, ResolveAttention(in));
  KILN_ASSIGN_OR_RETURN(float scale, RequiredFloat(kAttention, attrs, "scale"));
  KILN_ASSIGN_OR_RETURN(bool causal, RequiredFlag(kAttention, attrs, "causal"));
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kAttention, "q", *in[0]));
  for (int i : {1, 2})
    if (in[i]->dtype != in[0]->dtype)
      return OpError(kAttention, std::string("operand '") + (i == 1 ? "k" : "v") + "' is " +
                                     DTypeName(in[i]->dtype) + " but 'q' is " +
                                     DTypeName(in[0]->dtype) +
                                     "; the CUDA kernel needs one dtype for q, k and v");
  KILN_RETURN_IF_ERROR(CheckResultDType(kAttention, *in[0], out, 1));
  const TensorView *mask = in.size() > 3 ? in[3] : nullptr;
  if (mask != nullptr && mask->dtype != DType::kF32 && mask->dtype != DType::kF16 &&
      mask->dtype != DType::kBF16 && mask->dtype != DType::kBool)
    return OpError(kAttention, std::string("operand 'mask' must be f32, f16, bf16 or bool, got ") +
                                   DTypeName(mask->dtype));
  KILN_ASSIGN_OR_RETURN(float softcap, SoftCapOf(kAttention, attrs));
  const kc::DenseAttentionDims d = {a.batch,  a.q_heads,  a.kv_heads, a.q_len,
                                    a.kv_len, a.head_dim, a.v_dim,    softcap};
  if (!kc::DenseAttentionSupported(d))
    return OpError(kAttention, "head dims D = " + std::to_string(d.head_dim) +
                                   ", Dv = " + std::to_string(d.v_dim) + " (at most " +
                                   std::to_string(kc::kMaxDenseHeadDim) + "), batch " +
                                   std::to_string(d.batch) + " or KV heads " +
                                   std::to_string(d.kv_heads) +
                                   " (at most 65535) exceed the CUDA kernel's limits");
  KILN_CUDA_RETURN_IF_ERROR(kc::DenseAttention(type, in[0]->data, in[1]->data, in[2]->data,
                                               MaskOf(mask), out[0].data, d, scale, causal,
                                               Stream(ctx)));
  return Status::Ok();
}

// ---- paged_attention -----------------------------------------------------

// Read once per process: decode rows go to the decode kernel
// (decode_attention.h). On by default since it passed the GPU tests and
// measured faster (docs/gpu.md); KILN_DECODE_ATTENTION=0 keeps them on the
// query-tile kernels, for A/B runs.
bool DecodeKernelOn() {
  static const bool on = EnvSwitch("KILN_DECODE_ATTENTION", true);
  return on;
}

// KILN_DECODE_FILL_BLOCKS=N (1 .. kMaxDecodeFillBlocks): the decode kernel's
// split policy aims at about N blocks a step instead of the default's
// (kernels/cuda/attention_decode.h), for A/B runs on the device. Anything
// else is warned about once and ignored.
kc::DecodeSplitPolicy DecodePolicy() {
  static const kc::DecodeSplitPolicy policy = [] {
    kc::DecodeSplitPolicy p;
    const char *v = std::getenv("KILN_DECODE_FILL_BLOCKS");
    if (v == nullptr || *v == '\0')
      return p;
    char *end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || n < 1 || n > kc::kMaxDecodeFillBlocks) {
      std::fprintf(stderr,
                   "kiln: KILN_DECODE_FILL_BLOCKS='%s' is not 1 .. %lld; using the default %lld\n",
                   v, static_cast<long long>(kc::kMaxDecodeFillBlocks),
                   static_cast<long long>(p.fill_blocks));
      return p;
    }
    p.fill_blocks = n;
    return p;
  }();
  return policy;
}

// A part of the op's scratch, rounded up to 256 bytes so the next starts
// aligned.
uint64_t ScratchBytes(int64_t bytes) { return (static_cast<uint64_t>(bytes) + 255) / 256 * 256; }

// The index operands live on the device, so their values are not checked
// here: the model runner checks them on the host before upload
// (core/paged_indices.h), and the kernels guard every read and write.
Status RunPaged(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  using namespace paged_attention;
  KILN_ASSIGN_OR_RETURN(Dims dims, ResolveDims(attrs, in));
  KILN_ASSIGN_OR_RETURN(float scale, RequiredFloat(kPaged, attrs, "scale"));
  KILN_ASSIGN_OR_RETURN(kc::FusedFloat type, FusedFloatOf(kPaged, "q", *in[kQ]));
  kc::PagedDims d;
  d.q_heads = dims.q_heads;
  d.kv_heads = dims.kv_heads;
  d.tokens = dims.tokens;
  d.head_dim = dims.head_dim;
  d.v_dim = dims.v_dim;
  d.num_blocks = dims.num_blocks;
  d.block_size = dims.block_size;
  d.num_seqs = dims.num_seqs;
  d.max_blocks = dims.max_blocks;
  d.q_head_stride = dims.q_head_stride; // the layout attribute's
  d.q_token_stride = dims.q_token_stride;
  d.kv_head_stride = dims.kv_head_stride;
  d.kv_token_stride = dims.kv_token_stride;
  KILN_ASSIGN_OR_RETURN(d.softcap, SoftCapOf(kPaged, attrs));
  KILN_ASSIGN_OR_RETURN(d.window, WindowOf(kPaged, attrs));
  if (!kc::PagedAttentionSupported(d))
    return OpError(kPaged, "head dims D = " + std::to_string(d.head_dim) +
                               ", Dv = " + std::to_string(d.v_dim) + " (at most " +
                               std::to_string(kc::kMaxPagedHeadDim) + ") or KV heads " +
                               std::to_string(d.kv_heads) +
                               " (at most 65535) exceed the CUDA kernel's limits");
  for (int i : {kSlots, kQueryStart, kContextLens, kTables})
    if (in[i]->space != MemorySpace::kDevice && in[i]->numel() > 0)
      return OpError(kPaged, std::string("operand '") + kIndexNames[i - kSlots] +
                                 "' is in host memory; the CUDA kernel reads the index arrays "
                                 "on the device");
  kc::PagedTensors t;
  t.q = in[kQ]->data;
  t.k_new = in[kKNew]->data;
  t.v_new = in[kVNew]->data;
  t.k_cache = in[kKCache]->data; // written in place (see the CPU kernel's note)
  t.v_cache = in[kVCache]->data;
  t.out = out[0].data;
  const kc::PagedIndexArrays idx = {
      in[kSlots]->as<const int64_t>(), in[kQueryStart]->as<const int64_t>(),
      in[kContextLens]->as<const int64_t>(), in[kTables]->as<const int64_t>()};
  // Element strides of q and the result, from the layout's row strides.
  const kc::PrefillStrides ps = {d.q_token_stride * d.head_dim, d.q_head_stride * d.head_dim,
                                 d.q_token_stride * d.v_dim, d.q_head_stride * d.v_dim};
  const kc::PrefillTensors pt = {t.q, t.k_cache, t.v_cache, t.out};
  const bool decode = DecodeKernelOn() && kc::DecodeAttentionSupported(type, d, t);
  // A decode step (as many tokens as sequences): one launch stores and
  // attends (two with split keys).
  if (decode && d.tokens == d.num_seqs) {
    const kc::DecodeSplitPolicy policy = DecodePolicy();
    KILN_ASSIGN_OR_RETURN(void *scratch,
                          OpScratch(ctx, ScratchBytes(kc::DecodeAttentionScratchBytes(d, policy))));
    KILN_CUDA_RETURN_IF_ERROR(kc::DecodeAttention(
        type, t, idx, d, scale, kc::DecodeMode::kAllSequences, scratch, Stream(ctx), policy));
    return Status::Ok();
  }
  // A mixed step: the sequences with one new token go to the decode kernel
  // (unless there is only one sequence, then it has them all), the others
  // to the query-tile kernels: the tensor-core prefill kernel for query
  // chunks, else the split-key one.
  const bool singles = decode && d.num_seqs > 1;
  d.single_tokens_elsewhere = singles;
  const bool prefill =
      kc::PrefillAttentionPreferred(d) && kc::PrefillAttentionSupported(type, d, pt, ps);
  const int64_t tile_bytes =
      prefill ? kc::PrefillAttentionScratchBytes(d) : kc::PagedAttentionScratchBytes(d);
  const kc::DecodeSplitPolicy policy = DecodePolicy();
  const int64_t decode_bytes = singles ? kc::DecodeAttentionScratchBytes(d, policy) : 0;
  KILN_ASSIGN_OR_RETURN(void *scratch,
                        OpScratch(ctx, ScratchBytes(tile_bytes) + ScratchBytes(decode_bytes)));
  if (prefill) {
    KILN_CUDA_RETURN_IF_ERROR(kc::PagedStore(type, t, idx, d, Stream(ctx)));
    KILN_CUDA_RETURN_IF_ERROR(
        kc::PrefillAttention(type, pt, idx, d, ps, scale, scratch, Stream(ctx)));
  } else {
    KILN_CUDA_RETURN_IF_ERROR(kc::PagedAttention(type, t, idx, d, scale, scratch, Stream(ctx)));
  }
  if (singles)
    KILN_CUDA_RETURN_IF_ERROR(kc::DecodeAttention(
        type, t, idx, d, scale, kc::DecodeMode::kSingleTokens,
        static_cast<char *>(scratch) + ScratchBytes(tile_bytes), Stream(ctx), policy));
  return Status::Ok();
}

} // namespace

void AddAttentionKernels(std::vector<KernelDef> &table) {
  table.push_back({kAttention, RunAttention});
  table.push_back({kPaged, RunPaged});
}

} // namespace kiln::cuda
