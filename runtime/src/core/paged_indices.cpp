#include "core/paged_indices.h"

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

} // namespace kiln
