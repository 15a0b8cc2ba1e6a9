#include "fake_model.h"

#include <algorithm>

#include <string>

namespace kiln::engine::testing {
namespace {

constexpr uint64_t kEmptyKv = 0x5eed; // the "KV" before position 0

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

FakeModel::FakeModel(const BlockManager &blocks, int64_t vocab)
    : blocks_(blocks), vocab_(vocab), kv_(blocks.num_blocks() * blocks.block_size(), 0) {}

uint64_t FakeModel::NextKv(uint64_t prev, int32_t token, int64_t pos) {
  return Mix(prev ^ Mix(static_cast<uint64_t>(token) << 32 ^ static_cast<uint64_t>(pos)));
}

int32_t FakeModel::NextToken(int64_t seq_id, uint64_t kv) const {
  return static_cast<int32_t>(Mix(kv ^ Mix(static_cast<uint64_t>(seq_id))) %
                              static_cast<uint64_t>(vocab_));
}

Status FakeModel::Run(const Step &step, std::vector<float> &logits) {
  logits.assign(step.NumSampling() * vocab_, 0.0f);
  int64_t row = 0;
  for (const ScheduledChunk &c : step.chunks) {
    KILN_RETURN_IF_ERROR(RunChunk(c, c.samples ? &logits[row * vocab_] : nullptr)
                             .WithContext("sequence " + std::to_string(c.seq_id)));
    row += c.samples ? 1 : 0;
  }
  return Status::Ok();
}

Status FakeModel::RunChunk(const ScheduledChunk &c, float *logits_row) {
  const Sequence &seq = *c.seq;
  const int64_t bs = blocks_.block_size();
  const int64_t end = c.start + c.num_tokens;
  if (c.num_tokens < 1 || end > seq.NumTokens() ||
      end > static_cast<int64_t>(seq.block_table.size()) * bs)
    return Internal("chunk [" + std::to_string(c.start) + ", " + std::to_string(end) +
                    ") is outside the sequence or its blocks");
  auto slot = [&](int64_t pos) -> uint64_t & {
    return kv_[seq.block_table[pos / bs] * bs + pos % bs];
  };
  // Attention reads the cached context (from the chunk's first token's
  // sliding window on, when the block manager has one); check it is this
  // sequence's.
  const int64_t window = blocks_.window();
  const int64_t first = window > 0 ? std::max<int64_t>(0, c.start - window + 1) : 0;
  uint64_t truth = kEmptyKv;
  for (int64_t q = 0; q < c.start; ++q) {
    truth = NextKv(truth, seq.TokenAt(q), q);
    if (q < first)
      continue;
    if (seq.block_table[q / bs] == kReleasedBlock)
      return Internal("position " + std::to_string(q) +
                      " is in the window but its block was "
                      "released");
    if (slot(q) != truth)
      return Internal("the cached KV at position " + std::to_string(q) + " (block " +
                      std::to_string(seq.block_table[q / bs]) + ") is not this sequence's");
  }
  uint64_t kv = c.start == 0 ? kEmptyKv : slot(c.start - 1);
  for (int64_t q = c.start; q < end; ++q) {
    const int32_t block = seq.block_table[q / bs];
    if (blocks_.RefCount(block) != 1)
      return Internal("position " + std::to_string(q) + " writes block " + std::to_string(block) +
                      " with refcount " + std::to_string(blocks_.RefCount(block)));
    kv = NextKv(kv, seq.TokenAt(q), q);
    slot(q) = kv;
  }
  if (logits_row)
    logits_row[NextToken(seq.id, kv)] = 1.0f;
  return Status::Ok();
}

std::vector<int32_t> FakeModel::Reference(int64_t id, const std::vector<int32_t> &prompt,
                                          int max_new, int32_t eos) const {
  uint64_t kv = kEmptyKv;
  int64_t pos = 0;
  for (int32_t t : prompt)
    kv = NextKv(kv, t, pos++);
  std::vector<int32_t> out;
  while (static_cast<int>(out.size()) < max_new) {
    out.push_back(NextToken(id, kv));
    if (out.back() == eos)
      break;
    kv = NextKv(kv, out.back(), pos++);
  }
  return out;
}

} // namespace kiln::engine::testing
