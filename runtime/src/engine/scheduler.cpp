// Scheduler: token-budgeted steps over the waiting queue and the running set.
//
// Each step, in order: one token for every running sequence in decode
// (oldest first), then the next chunk of every running sequence still
// computing its prompt (or re-computing it after preemption), then new
// sequences in arrival order. The oldest running sequence is never preempted
// and always gets a token, so every request finishes.
#include "engine/scheduler.h"

#include <algorithm>
#include <string>

namespace kiln::engine {

Status ValidateSchedulerConfig(const SchedulerConfig &c) {
  if (c.max_batched_tokens < 1)
    return InvalidArgument("max_batched_tokens must be >= 1, got " +
                           std::to_string(c.max_batched_tokens));
  if (c.max_seqs_per_step < 1)
    return InvalidArgument("max_seqs_per_step must be >= 1, got " +
                           std::to_string(c.max_seqs_per_step));
  if (c.max_tracked_seqs < 1)
    return InvalidArgument("max_tracked_seqs must be >= 1, got " +
                           std::to_string(c.max_tracked_seqs));
  if (c.max_batched_tokens < c.max_seqs_per_step)
    return InvalidArgument("max_batched_tokens (" + std::to_string(c.max_batched_tokens) +
                           ") must be >= max_seqs_per_step (" +
                           std::to_string(c.max_seqs_per_step) +
                           "), or decodes alone could fill every step and starve prompts");
  return Status::Ok();
}

int64_t Step::NumSampling() const {
  return std::count_if(chunks.begin(), chunks.end(),
                       [](const ScheduledChunk &c) { return c.samples; });
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerConfig &config,
                                                       BlockManager &blocks) {
  KILN_RETURN_IF_ERROR(ValidateSchedulerConfig(config));
  return std::unique_ptr<Scheduler>(new Scheduler(config, blocks));
}

Status Scheduler::Add(Sequence seq) {
  const std::string name = "request " + std::to_string(seq.id);
  if (seq.prompt.empty())
    return InvalidArgument(name + ": the prompt is empty");
  if (std::any_of(seq.prompt.begin(), seq.prompt.end(), [](int32_t t) { return t < 0; }))
    return InvalidArgument(name + ": the prompt has a negative token id");
  if (seq.max_new_tokens < 1)
    return InvalidArgument(name + ": max_new_tokens must be >= 1, got " +
                           std::to_string(seq.max_new_tokens));
  if (!seq.output.empty())
    return InvalidArgument(name + ": output must be empty when it is added");
  if (seqs_.count(seq.id))
    return InvalidArgument(name + ": the id is already in use");
  const int64_t tokens = static_cast<int64_t>(seq.prompt.size()) + seq.max_new_tokens;
  // Behind a sliding window a sequence holds at most the blocks of its
  // window and one step's chunk at a time, however long it grows.
  int64_t need = blocks_.BlocksFor(tokens);
  if (blocks_.window() > 0)
    need = std::min(need, blocks_.BlocksFor(blocks_.window() - 1 + config_.max_batched_tokens) + 1);
  if (need > blocks_.num_blocks())
    return InvalidArgument(name + ": " + std::to_string(seq.prompt.size()) +
                           " prompt tokens + max_new_tokens " + std::to_string(seq.max_new_tokens) +
                           " need " + std::to_string(need) + " KV blocks of " +
                           std::to_string(blocks_.block_size()) + " tokens; the cache has " +
                           std::to_string(blocks_.num_blocks()));
  if (NumWaiting() + NumRunning() >= config_.max_tracked_seqs)
    return Status(StatusCode::kResourceExhausted,
                  name + ": " + std::to_string(config_.max_tracked_seqs) +
                      " requests (max_tracked_seqs) are already waiting or running");

  auto owned = std::make_unique<Sequence>(std::move(seq));
  Sequence *s = owned.get();
  s->status = SequenceStatus::kWaiting;
  s->finish_reason = FinishReason::kNone;
  s->num_computed_tokens = 0;
  s->block_table.clear();
  s->num_hashed_blocks = 0;
  s->chain_hash = 0;
  s->num_released_blocks = 0;
  s->arrival = next_arrival_++;
  s->num_preemptions = 0;
  seqs_.emplace(s->id, std::move(owned));
  waiting_.push_back(s);
  return Status::Ok();
}

Step Scheduler::Schedule() {
  Step step;
  step.id = next_step_id_++;
  pending_step_ = step.id;
  int64_t budget = config_.max_batched_tokens;
  // Grow may preempt from the back of running_, never before index i.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    if (running_[i]->NumUncomputed() == 1)
      Grow(running_[i], 1, step, budget);
  }
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence *seq = running_[i];
    if (seq->NumUncomputed() > 1)
      Grow(seq, std::min(seq->NumUncomputed(), budget), step, budget);
  }
  // Memory just ran out: admitting now would only preempt again next step.
  if (step.preempted.empty())
    Admit(step, budget);
  return step;
}

bool Scheduler::Grow(Sequence *seq, int64_t want, Step &step, int64_t &budget) {
  for (;;) {
    // A prompt chunk shrinks to the free blocks rather than evict anyone;
    // only a sequence that cannot take a single token preempts.
    const int64_t fit = std::min(want, blocks_.AppendableTokens(*seq));
    if (fit > 0) {
      AddChunk(step, seq, fit, budget);
      return true;
    }
    // The youngest has no one younger to take blocks from, and freeing its
    // own helps no one this step: it waits with its KV, until it fits or an
    // older sequence that needs the blocks preempts it.
    if (running_.back() == seq)
      return false;
    PreemptYoungest(step, budget);
  }
}

void Scheduler::Admit(Step &step, int64_t &budget) {
  while (!waiting_.empty() && budget > 0 &&
         NumRunning() < static_cast<int64_t>(config_.max_seqs_per_step)) {
    Sequence *seq = waiting_.front();
    const int64_t matched = blocks_.Match(*seq);
    const int64_t n = std::min(seq->NumUncomputed(), budget);
    if (!blocks_.CanAppend(*seq, n)) {
      blocks_.Free(*seq); // gives back the matched prefix; it waits, and so do those behind it
      return;
    }
    seq->num_prefix_hit_tokens += matched;
    waiting_.pop_front();
    seq->status = SequenceStatus::kRunning;
    running_.push_back(seq);
    AddChunk(step, seq, n, budget);
  }
}

void Scheduler::PreemptYoungest(Step &step, int64_t &budget) {
  Sequence *victim = running_.back();
  running_.pop_back();
  // With every step updated, only the youngest running sequence can be
  // mid-prompt, so the passes' order means a victim has no chunk yet. Should
  // that change, the step must still not keep the victim or its tokens.
  auto chunk = std::find_if(step.chunks.begin(), step.chunks.end(),
                            [victim](const ScheduledChunk &c) { return c.seq == victim; });
  if (chunk != step.chunks.end()) {
    budget += chunk->num_tokens;
    step.num_tokens -= chunk->num_tokens;
    step.chunks.erase(chunk);
  }
  // Recompute, not swap: the KV is dropped and prompt + output are computed
  // again on readmission (sooner where the prefix cache still has them).
  blocks_.Free(*victim);
  victim->status = SequenceStatus::kWaiting;
  ++victim->num_preemptions;
  waiting_.push_front(victim);
  step.preempted.push_back(victim->id);
}

void Scheduler::AddChunk(Step &step, Sequence *seq, int64_t n, int64_t &budget) {
  // Invariant: a step never schedules more than max_batched_tokens tokens.
  // The budget starts there, every chunk is cut to what is left of it, and
  // only a chunk taken out of the step gives its tokens back.
  n = std::min(n, budget);
  if (n <= 0 || !blocks_.Append(*seq, n).ok())
    return; // callers checked both; the sequence simply waits for the next step
  budget -= n;
  const int64_t start = seq->num_computed_tokens;
  step.chunks.push_back({seq, seq->id, start, n, start + n == seq->NumTokens()});
  step.num_tokens += n;
}

Status Scheduler::Update(const Step &step, const std::vector<int32_t> &sampled) {
  if (step.id == 0 || step.id != pending_step_)
    return InvalidArgument("step " + std::to_string(step.id) +
                           " is not the last scheduled step awaiting its update");
  if (static_cast<int64_t>(sampled.size()) != step.NumSampling())
    return InvalidArgument("step " + std::to_string(step.id) + " samples " +
                           std::to_string(step.NumSampling()) + " sequences, got " +
                           std::to_string(sampled.size()) + " tokens");
  if (std::any_of(sampled.begin(), sampled.end(), [](int32_t t) { return t < 0; }))
    return InvalidArgument("a sampled token id is negative");
  pending_step_ = 0;
  size_t next = 0;
  for (const ScheduledChunk &c : step.chunks) {
    const int32_t token = c.samples ? sampled[next++] : -1;
    auto it = seqs_.find(c.seq_id);
    Sequence *seq = it == seqs_.end() ? nullptr : it->second.get();
    if (seq != c.seq || seq->status != SequenceStatus::kRunning ||
        seq->num_computed_tokens != c.start)
      continue; // finished or cancelled since Schedule
    seq->num_computed_tokens += c.num_tokens;
    blocks_.CacheFullBlocks(*seq);
    blocks_.ReleaseBehindWindow(*seq);
    if (!c.samples)
      continue;
    seq->output.push_back(token);
    if (static_cast<int64_t>(seq->output.size()) >= seq->max_new_tokens)
      FinishSequence(seq, FinishReason::kLength);
  }
  return Status::Ok();
}

Status Scheduler::Finish(int64_t id, FinishReason reason) {
  if (reason == FinishReason::kNone)
    return InvalidArgument("request " + std::to_string(id) + ": finish needs a reason");
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return NotFound("no request with id " + std::to_string(id));
  if (!it->second->finished())
    FinishSequence(it->second.get(), reason);
  return Status::Ok();
}

void Scheduler::FinishSequence(Sequence *seq, FinishReason reason) {
  if (seq->status == SequenceStatus::kRunning)
    running_.erase(std::find(running_.begin(), running_.end(), seq));
  else
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), seq));
  blocks_.Free(*seq);
  seq->status = SequenceStatus::kFinished;
  seq->finish_reason = reason;
  finished_.push_back(seq->id);
}

std::vector<Sequence> Scheduler::TakeFinished() {
  std::vector<Sequence> out;
  out.reserve(finished_.size());
  for (int64_t id : finished_) {
    auto it = seqs_.find(id);
    out.push_back(std::move(*it->second));
    seqs_.erase(it);
  }
  finished_.clear();
  return out;
}

const Sequence *Scheduler::Find(int64_t id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

} // namespace kiln::engine
