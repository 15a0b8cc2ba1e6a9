// Continuous batching with Dynamic SplitFuse: every step is a flat batch of
// at most max_batched_tokens tokens from many sequences, decodes first, then
// prompt chunks, with long prompts split across steps. Short KV memory makes
// requests wait or be preempted (by recompute), never crash or deadlock.
#pragma once

#include "engine/block_manager.h"
#include "engine/sequence.h"
#include "kiln/status.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace kiln::engine {

struct SchedulerConfig {
  int64_t max_batched_tokens = 2048; // the token budget of one step
  int max_seqs_per_step = 256;       // also the most sequences running at once
  int max_tracked_seqs = 1024;       // waiting + running
};

// InvalidArgument unless every limit is >= 1 and max_batched_tokens >=
// max_seqs_per_step (so the oldest sequence always fits beside the decodes).
Status ValidateSchedulerConfig(const SchedulerConfig &config);

// Positions [start, start + num_tokens) of one sequence, computed in one step.
struct ScheduledChunk {
  Sequence *seq = nullptr;
  int64_t seq_id = 0;
  int64_t start = 0;
  int64_t num_tokens = 0;
  // The chunk ends at the sequence's last token, so the model's logits at
  // its last position yield the sequence's next token.
  bool samples = false;
  // Every position of the chunk returns its logits row, in order, instead
  // of the one sampling row: scoring a text (kiln eval ppl), never the
  // scheduler's chunks. A step with such a chunk cannot sample on the device.
  bool all_logits = false;
};

struct Step {
  uint64_t id = 0;
  std::vector<ScheduledChunk> chunks; // decodes first, then prompt chunks
  int64_t num_tokens = 0;             // sum of the chunks' num_tokens
  std::vector<int64_t> preempted;     // ids preempted while making this step

  bool empty() const { return chunks.empty(); }
  // Chunks whose `samples` is set: the number of tokens Update expects.
  int64_t NumSampling() const;
};

// Owned by one engine loop; not thread-safe.
class Scheduler {
public:
  // InvalidArgument for a bad config. `blocks` must outlive the scheduler
  // and not be used by anyone else.
  static StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerConfig &config,
                                                     BlockManager &blocks);

  // Queues a request. InvalidArgument for an empty prompt, max_new_tokens
  // < 1, a non-empty output, an id in use, or a request whose prompt plus
  // max_new_tokens needs more blocks than the whole pool; ResourceExhausted
  // when max_tracked_seqs requests are already waiting or running.
  Status Add(Sequence seq);

  // Plans the next step and reserves its KV blocks. Empty only when nothing
  // is waiting or running. A step that never gets its Update is dropped: its
  // tokens are scheduled again.
  Step Schedule();

  // Records that `step` (the last one scheduled) ran: advances each
  // sequence's computed tokens, registers newly full blocks in the prefix
  // cache, appends `sampled` (one token per chunk with `samples`, in step
  // order) and finishes sequences that reached max_new_tokens. Chunks of
  // sequences finished or cancelled since Schedule are skipped.
  // InvalidArgument, changing nothing, for another step, a wrong number of
  // tokens or a negative token.
  Status Update(const Step &step, const std::vector<int32_t> &sampled);

  // Finishes a waiting or running sequence (e.g. on EOS) and frees its
  // blocks. Ok and no change when it already finished; NotFound when the id
  // is unknown.
  Status Finish(int64_t id, FinishReason reason);
  // Finish(id, kCancelled).
  Status Cancel(int64_t id) { return Finish(id, FinishReason::kCancelled); }

  // Hands over the finished sequences, oldest finish first; their ids become free.
  std::vector<Sequence> TakeFinished();

  // The sequence with `id`, waiting, running or finished and not yet taken.
  const Sequence *Find(int64_t id) const;
  int64_t NumWaiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t NumRunning() const { return static_cast<int64_t>(running_.size()); }
  bool HasUnfinished() const { return !waiting_.empty() || !running_.empty(); }
  const SchedulerConfig &config() const { return config_; }

private:
  Scheduler(const SchedulerConfig &config, BlockManager &blocks)
      : config_(config), blocks_(blocks) {}

  // Gives running `seq` up to `want` tokens, preempting younger running
  // sequences, youngest first, while the pool has no room for even one.
  // False when no younger one is left and it still has no room.
  bool Grow(Sequence *seq, int64_t want, Step &step, int64_t &budget);
  // Admits waiting sequences in order while budget, slots and blocks allow.
  void Admit(Step &step, int64_t &budget);
  // Recompute preemption of the youngest running sequence: drops its KV and
  // any chunk it has in `step`, and puts it at the front of the queue.
  void PreemptYoungest(Step &step, int64_t &budget);
  void AddChunk(Step &step, Sequence *seq, int64_t n, int64_t &budget);
  void FinishSequence(Sequence *seq, FinishReason reason);

  SchedulerConfig config_;
  BlockManager &blocks_;
  std::unordered_map<int64_t, std::unique_ptr<Sequence>> seqs_; // not yet taken
  // Invariant: every running sequence was admitted before every waiting
  // one, and running_ is in admission order, so its back is the youngest.
  std::deque<Sequence *> waiting_;
  std::vector<Sequence *> running_;
  std::vector<int64_t> finished_;
  int64_t next_arrival_ = 0;
  uint64_t next_step_id_ = 1;
  uint64_t pending_step_ = 0; // the step awaiting Update; 0 for none
};

} // namespace kiln::engine
