// Shape rule of paged_attention (docs/fused-ops.md): a continuous batch's new
// tokens stored into the runtime-owned paged KV cache, then attending
// causally to their own sequence's context through its block table.
#include "core/shapes/attention_paged.h"

#include "core/shapes/fused_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace paged_attention {
namespace {

constexpr const char *kPaged = "paged_attention";

constexpr const char *kNames[] = {"q",     "k_new",       "v_new",        "k_cache",     "v_cache",
                                  "slots", "query_start", "context_lens", "block_tables"};
constexpr const char *kLayouts[] = {"[1, Hq, T, D]",
                                    "[1, Hkv, T, D]",
                                    "[1, Hkv, T, Dv]",
                                    "[NB, Hkv, BS, D]",
                                    "[NB, Hkv, BS, Dv]",
                                    "[T]",
                                    "[N + 1]",
                                    "[N]",
                                    "[N, MB]"};

// q's, k_new's and v_new's dims in the token-major (bshd) layout.
constexpr const char *kTokenMajor[] = {"[1, T, Hq, D]", "[1, T, Hkv, D]", "[1, T, Hkv, Dv]"};

const char *LayoutText(int i, Layout layout) {
  return layout == Layout::kBshd && i <= kVNew ? kTokenMajor[i] : kLayouts[i];
}

std::string Num(int64_t v) { return std::to_string(v); }

// The index operands' data, as int64 arrays (their dtype is checked).
struct IndexArrays {
  const int64_t *slots, *query_start, *context_lens, *block_tables;
};

// q, k_new, v_new and the caches share one float dtype, the index operands
// are i64. Kernels handle f16 and bf16 themselves: the caches are written in
// place, and a half-via-f32 wrapper (the CPU's half_via_f32) would widen
// them into temporary copies whose writes are lost.
Status CheckDTypes(const Inputs &in) {
  const DType dt = in[kQ]->dtype;
  if (dt != DType::kF32 && dt != DType::kF16 && dt != DType::kBF16)
    return OpError(kPaged,
                   std::string("operand 'q' must be f32, f16 or bf16, got ") + DTypeName(dt));
  for (int i = kKNew; i <= kVCache; ++i)
    if (in[i]->dtype != dt)
      return OpError(kPaged, std::string("operand '") + kNames[i] + "' is " +
                                 DTypeName(in[i]->dtype) + " but 'q' is " + DTypeName(dt) +
                                 ": q, k_new, v_new, k_cache and v_cache must share one dtype "
                                 "(f32, f16 or bf16)");
  for (int i = kSlots; i <= kTables; ++i)
    if (in[i]->dtype != DType::kI64)
      return OpError(kPaged, std::string("operand '") + kNames[i] + "' must be i64, got " +
                                 DTypeName(in[i]->dtype));
  return Status::Ok();
}

Status CheckRanks(const Inputs &in, Layout layout) {
  for (int i = kQ; i <= kTables; ++i) {
    const size_t rank = i < kSlots ? 4 : i == kTables ? 2 : 1;
    if (in[i]->shape.size() != rank)
      return OpError(kPaged, std::string("operand '") + kNames[i] + "' must be " +
                                 Num(static_cast<int64_t>(rank)) + "-D " + LayoutText(i, layout) +
                                 ", got shape " + ShapeToString(in[i]->shape));
  }
  return Status::Ok();
}

// Operand i's dim `axis` must equal `want`, the named dim of another operand.
Status CheckDim(const Inputs &in, int i, size_t axis, int64_t want, const char *what,
                Layout layout = Layout::kBhsd) {
  if (in[i]->shape[axis] == want)
    return Status::Ok();
  return OpError(kPaged, std::string("operand '") + kNames[i] + "' of shape " +
                             ShapeToString(in[i]->shape) + " must be " + LayoutText(i, layout) +
                             " with " + what + " = " + Num(want));
}

// query_start: 0, non-decreasing, ending at T.
Status CheckQueryStart(const int64_t *qs, const Dims &d) {
  if (qs[0] != 0)
    return OpError(kPaged, "query_start[0] must be 0, got " + Num(qs[0]));
  for (int64_t s = 0; s < d.num_seqs; ++s)
    if (qs[s + 1] < qs[s])
      return OpError(kPaged, "query_start must be non-decreasing, but query_start[" + Num(s + 1) +
                                 "] = " + Num(qs[s + 1]) + " < query_start[" + Num(s) +
                                 "] = " + Num(qs[s]));
  if (qs[d.num_seqs] != d.tokens)
    return OpError(kPaged, "query_start[N] = query_start[" + Num(d.num_seqs) +
                               "] = " + Num(qs[d.num_seqs]) +
                               " must equal the token count T = " + Num(d.tokens));
  return Status::Ok();
}

// Each context holds the sequence's new tokens and fits its block table, and
// every block it reads is a cache block.
Status CheckContexts(const IndexArrays &b, const Dims &d) {
  for (int64_t s = 0; s < d.num_seqs; ++s) {
    const int64_t n = b.query_start[s + 1] - b.query_start[s], ctx = b.context_lens[s];
    const std::string at = "[" + Num(s) + "] = " + Num(ctx);
    if (ctx < n)
      return OpError(kPaged, "context_lens" + at + " is less than the sequence's " + Num(n) +
                                 " new tokens (query_start[" + Num(s) + ".." + Num(s + 1) + "])");
    const int64_t blocks = ctx / d.block_size + (ctx % d.block_size != 0);
    if (blocks > d.max_blocks)
      return OpError(kPaged, "context_lens" + at +
                                 " exceeds the block table's capacity MB * BS = " +
                                 Num(d.max_blocks) + " * " + Num(d.block_size));
    if (n == 0) // a sequence without new tokens reads nothing
      continue;
    KILN_RETURN_IF_ERROR(CheckBlasLimit(kPaged, {ctx}));
    const int64_t *row = b.block_tables + s * d.max_blocks;
    for (int64_t j = 0; j < blocks; ++j)
      if (row[j] < 0 || row[j] >= d.num_blocks)
        return OpError(kPaged, "block_tables[" + Num(s) + "][" + Num(j) + "] = " + Num(row[j]) +
                                   " is outside [0, NB = " + Num(d.num_blocks) +
                                   ") and is read by a context of " + Num(ctx) + " tokens");
  }
  return Status::Ok();
}

// slots: < 0 (not stored) or a slot of the cache.
Status CheckSlots(const int64_t *slots, const Dims &d) {
  for (int64_t t = 0; t < d.tokens; ++t)
    if (slots[t] >= 0 && slots[t] / d.block_size >= d.num_blocks) // slot >= NB * BS
      return OpError(kPaged, "slots[" + Num(t) + "] = " + Num(slots[t]) +
                                 " is outside the cache's NB * BS = " + Num(d.num_blocks) + " * " +
                                 Num(d.block_size) + " slots");
  return Status::Ok();
}

} // namespace

StatusOr<Layout> LayoutOf(const OpAttrs &attrs) {
  auto it = attrs.all().find("layout");
  if (it == attrs.all().end())
    return Layout::kBhsd;
  if (it->second.kind == AttrValue::Kind::kString && it->second.s == "bhsd")
    return Layout::kBhsd;
  if (it->second.kind == AttrValue::Kind::kString && it->second.s == "bshd")
    return Layout::kBshd;
  return OpError(kPaged, "attribute 'layout' must be the string \"bhsd\" or \"bshd\"" +
                             (it->second.kind == AttrValue::Kind::kString
                                  ? ", got \"" + it->second.s + "\""
                                  : std::string(", got a value of another kind")));
}

Shape ResultShape(const Dims &d) {
  if (d.layout == Layout::kBshd)
    return {1, d.tokens, d.q_heads, d.v_dim};
  return {1, d.q_heads, d.tokens, d.v_dim};
}

StatusOr<Dims> ResolveDims(const OpAttrs &attrs, const Inputs &in) {
  Dims d;
  KILN_ASSIGN_OR_RETURN(d.layout, LayoutOf(attrs));
  const bool bshd = d.layout == Layout::kBshd;
  KILN_RETURN_IF_ERROR(CheckDTypes(in));
  KILN_RETURN_IF_ERROR(CheckRanks(in, d.layout));
  const Shape &q = in[kQ]->shape, &kc = in[kKCache]->shape, &bt = in[kTables]->shape;
  const size_t head_axis = bshd ? 2 : 1, token_axis = bshd ? 1 : 2;
  d.q_heads = q[head_axis];
  d.tokens = q[token_axis];
  d.head_dim = q[3];
  d.num_blocks = kc[0];
  d.kv_heads = kc[1];
  d.block_size = kc[2];
  d.v_dim = in[kVNew]->shape[3];
  d.num_seqs = bt[0];
  d.max_blocks = bt[1];
  d.q_head_stride = bshd ? 1 : d.tokens;
  d.q_token_stride = bshd ? d.q_heads : 1;
  d.kv_head_stride = bshd ? 1 : d.tokens;
  d.kv_token_stride = bshd ? d.kv_heads : 1;
  for (int i : {kQ, kKNew, kVNew})
    KILN_RETURN_IF_ERROR(CheckDim(in, i, 0, 1, "batch", d.layout));
  KILN_RETURN_IF_ERROR(CheckDim(in, kKCache, 3, d.head_dim, "q's head dim D"));
  if (d.kv_heads < 1 || d.q_heads % d.kv_heads != 0)
    return OpError(kPaged, "query heads Hq = " + Num(d.q_heads) +
                               " must be a multiple of the caches' key/value heads Hkv = " +
                               Num(d.kv_heads) + " >= 1");
  if (d.block_size < 1)
    return OpError(kPaged, "operand 'k_cache' of shape " + ShapeToString(kc) +
                               " must have a block size BS >= 1");
  const Shape want_k = bshd ? Shape{1, d.tokens, d.kv_heads, d.head_dim}
                            : Shape{1, d.kv_heads, d.tokens, d.head_dim};
  const Shape want_v =
      bshd ? Shape{1, d.tokens, d.kv_heads, d.v_dim} : Shape{1, d.kv_heads, d.tokens, d.v_dim};
  const Shape want_vc = {d.num_blocks, d.kv_heads, d.block_size, d.v_dim};
  KILN_RETURN_IF_ERROR(
      CheckExactShape(kPaged, "k_new", *in[kKNew], want_k, LayoutText(kKNew, d.layout)));
  KILN_RETURN_IF_ERROR(
      CheckExactShape(kPaged, "v_new", *in[kVNew], want_v, LayoutText(kVNew, d.layout)));
  KILN_RETURN_IF_ERROR(
      CheckExactShape(kPaged, "v_cache", *in[kVCache], want_vc, "[NB, Hkv, BS, Dv]"));
  KILN_RETURN_IF_ERROR(CheckDim(in, kSlots, 0, d.tokens, "q's token count T"));
  KILN_RETURN_IF_ERROR(CheckDim(in, kContextLens, 0, d.num_seqs, "block_tables' sequences N"));
  KILN_RETURN_IF_ERROR(
      CheckDim(in, kQueryStart, 0, d.num_seqs + 1, "block_tables' sequences N plus one"));
  KILN_RETURN_IF_ERROR(
      CheckBlasLimit(kPaged, {d.q_heads / d.kv_heads * d.tokens, d.head_dim, d.v_dim}));
  return d;
}

Status CheckIndices(const Inputs &in, const Dims &d) {
  for (int i : {kSlots, kQueryStart, kContextLens, kTables})
    if (in[i]->data == nullptr && in[i]->numel() > 0) // an empty operand has nothing to read
      return Status::Ok();
  const IndexArrays b = {in[kSlots]->as<const int64_t>(), in[kQueryStart]->as<const int64_t>(),
                         in[kContextLens]->as<const int64_t>(), in[kTables]->as<const int64_t>()};
  KILN_RETURN_IF_ERROR(CheckQueryStart(b.query_start, d));
  KILN_RETURN_IF_ERROR(CheckContexts(b, d));
  return CheckSlots(b.slots, d);
}

} // namespace paged_attention

namespace {

using namespace paged_attention;

// 9 operands (docs/fused-ops.md) -> [1, Hq, T, Dv] ([1, T, Hq, Dv] for bshd).
Status InferPaged(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity(kPaged, in, 9, 9, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(Dims d, ResolveDims(attrs, in));
  KILN_RETURN_IF_ERROR(RequiredFloat(kPaged, attrs, "scale").status());
  KILN_RETURN_IF_ERROR(SoftCapOf(kPaged, attrs).status());
  KILN_RETURN_IF_ERROR(WindowOf(kPaged, attrs).status());
  KILN_RETURN_IF_ERROR(CheckIndices(in, d));
  out[0] = {in[kQ]->dtype, ResultShape(d), nullptr};
  return Status::Ok();
}

} // namespace

void AddAttentionPagedShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"paged_attention", InferPaged});
}

} // namespace kiln
