#include "core/paged_indices.h"

#include "core/shapes/attention_paged.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <string>

namespace kiln {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status Bad(const std::string &message) { return InvalidArgument("paged step: " + message); }

Status CheckQueryStart(const PagedIndices &p) {
  if (p.query_start[0] != 0)
    return Bad("query_start[0] must be 0, got " + Num(p.query_start[0]));
  for (int64_t s = 0; s < p.num_seqs; ++s)
    if (p.query_start[s + 1] < p.query_start[s])
      return Bad("query_start must be non-decreasing, but query_start[" + Num(s + 1) +
                 "] = " + Num(p.query_start[s + 1]) + " < query_start[" + Num(s) + "]");
  if (p.query_start[p.num_seqs] != p.tokens)
    return Bad("query_start[" + Num(p.num_seqs) + "] = " + Num(p.query_start[p.num_seqs]) +
               " must equal the token count " + Num(p.tokens));
  return Status::Ok();
}

} // namespace

Status CheckPagedIndices(const PagedIndices &p, int64_t num_blocks, int64_t block_size) {
  if (p.tokens < 0 || p.num_seqs < 0 || p.max_blocks < 0 || num_blocks < 1 || block_size < 1)
    return Bad("negative sizes or an empty cache");
  KILN_RETURN_IF_ERROR(CheckQueryStart(p));
  for (int64_t s = 0; s < p.num_seqs; ++s) {
    const int64_t n = p.query_start[s + 1] - p.query_start[s], ctx = p.context_lens[s];
    if (ctx < n)
      return Bad("context_lens[" + Num(s) + "] = " + Num(ctx) + " is less than its " + Num(n) +
                 " new tokens");
    const int64_t blocks = ctx / block_size + (ctx % block_size != 0);
    if (blocks > p.max_blocks)
      return Bad("context_lens[" + Num(s) + "] = " + Num(ctx) + " needs " + Num(blocks) +
                 " blocks but the block table has " + Num(p.max_blocks));
    const int64_t *row = p.block_tables + s * p.max_blocks;
    for (int64_t j = 0; j < blocks; ++j)
      if (row[j] < 0 || row[j] >= num_blocks)
        return Bad("block_tables[" + Num(s) + "][" + Num(j) + "] = " + Num(row[j]) +
                   " is outside [0, " + Num(num_blocks) + ")");
  }
  for (int64_t t = 0; t < p.tokens; ++t)
    if (p.slots[t] >= 0 && p.slots[t] / block_size >= num_blocks)
      return Bad("slots[" + Num(t) + "] = " + Num(p.slots[t]) + " is outside the cache's " +
                 Num(num_blocks) + " * " + Num(block_size) + " slots");
  return Status::Ok();
}

Status CheckPagedInputs(const Plan &plan, const std::vector<TensorView> &inputs) {
  using namespace paged_attention;
  const auto *ops = plan.graph().ops();
  for (uint32_t i = 0; ops && i < ops->size(); ++i) {
    const fb::Op &op = *ops->Get(i);
    if (!op.type() || op.type()->string_view() != "paged_attention")
      continue;
    const std::string label =
        "op '" + (op.name() ? op.name()->str() : std::string()) + "' (paged_attention)";
    if (!op.inputs() || op.inputs()->size() != 9)
      return InvalidArgument(label + ": expected 9 operands");
    // The bound view of operand k, which must be a host graph input of
    // `rank` dims (i64 unless it is the cache).
    const TensorView *v[9] = {};
    for (int k : {kKCache, kSlots, kQueryStart, kContextLens, kTables}) {
      const int t = op.inputs()->Get(k);
      const int pos =
          t >= 0 && t < static_cast<int>(plan.tensors().size()) ? plan.InputIndex(t) : -1;
      if (pos < 0 || pos >= static_cast<int>(inputs.size()) ||
          inputs[pos].space != MemorySpace::kHost)
        return InvalidArgument(label + ": operand " + std::to_string(k) +
                               " is not a graph input in host memory, so its values cannot be "
                               "checked before a device kernel reads them");
      v[k] = &inputs[pos];
      const size_t rank = k == kKCache ? 4 : k == kTables ? 2 : 1;
      if (v[k]->shape.size() != rank || (k != kKCache && v[k]->dtype != DType::kI64))
        return InvalidArgument(label + ": operand " + std::to_string(k) + " is " +
                               DTypeName(v[k]->dtype) + ShapeToString(v[k]->shape));
    }
    const int64_t N = v[kContextLens]->shape[0];
    if (v[kQueryStart]->shape[0] != N + 1 || v[kTables]->shape[0] != N)
      return InvalidArgument(label + ": query_start, context_lens and block_tables disagree on "
                                     "the number of sequences");
    const PagedIndices p{v[kSlots]->as<const int64_t>(),
                         v[kQueryStart]->as<const int64_t>(),
                         v[kContextLens]->as<const int64_t>(),
                         v[kTables]->as<const int64_t>(),
                         v[kSlots]->shape[0],
                         N,
                         v[kTables]->shape[1]};
    Status st = CheckPagedIndices(p, v[kKCache]->shape[0], v[kKCache]->shape[2]);
    if (!st.ok())
      return st.WithContext(label);
  }
  return Status::Ok();
}

int64_t PagedKvWindow(const Plan &plan) {
  const auto *ops = plan.graph().ops();
  int64_t widest = 0;
  for (uint32_t i = 0; ops && i < ops->size(); ++i) {
    const fb::Op &op = *ops->Get(i);
    if (!op.type() || op.type()->string_view() != "paged_attention")
      continue;
    int64_t window = 0;
    if (op.attrs())
      for (const fb::Attr *a : *op.attrs())
        if (a->name() && a->name()->string_view() == "window" && a->kind() == fb::AttrKind::Int)
          window = a->i();
    if (window <= 0)
      return 0;
    widest = std::max(widest, window);
  }
  return widest;
}

} // namespace kiln
