// BatchedEngine: Scheduler + BlockManager + a ModelRunner + a sampler and
// stop checker per completion. One Step() is one model step over a flat batch.
#include "engine/engine.h"

#include "engine/block_manager.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln::engine {
namespace {

// One completion of a request: a scheduler sequence plus what the sampler and
// the stop checker keep for it.
struct Completion {
  int64_t request_id = 0;
  int index = 0;
  int prompt_length = 0;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StopChecker> stop;
  const StreamCallback *on_token = nullptr; // owned by the request entry
  Clock::time_point submitted, first_token;
  bool has_first_token = false;
  bool ended = false; // the finish reason below is decided
  FinishReason reason = FinishReason::kLength;
  std::string text;
  std::vector<SampledToken> logprobs;
  bool want_logprobs = false;
  bool uses_history = false; // a penalty is on, so the sampler reads prompt + output
};

class BatchedEngine : public Engine {
public:
  BatchedEngine(std::unique_ptr<ModelRunner> runner, const Tokenizer *tokenizer,
                int64_t context_length)
      : runner_(std::move(runner)), tokenizer_(tokenizer), context_length_(context_length) {}

  Status Init(const EngineOptions &options) {
    const int64_t blocks = runner_->num_blocks(), block_size = runner_->block_size();
    KILN_ASSIGN_OR_RETURN(blocks_,
                          BlockManager::Create(blocks, block_size, options.prefix_caching));
    blocks_->SetWindow(runner_->kv_window());
    SchedulerConfig config;
    config.max_batched_tokens = options.max_batched_tokens;
    config.max_seqs_per_step = options.max_seqs;
    config.max_tracked_seqs = options.max_tracked;
    KILN_ASSIGN_OR_RETURN(scheduler_, Scheduler::Create(config, *blocks_));
    stats_.kv_blocks = blocks;
    stats_.block_size = block_size;
    return Status::Ok();
  }

  Status Submit(Admitted request) override {
    Collect(); // so the scheduler's finished list holds only what this call adds
    const RequestParams &params = request.params;
    // The context caps the output as well as max_new_tokens does.
    int max_new = params.max_new_tokens;
    if (context_length_ > 0)
      max_new = static_cast<int>(std::min<int64_t>(
          max_new, context_length_ - static_cast<int64_t>(request.prompt.size())));
    std::vector<std::unique_ptr<Completion>> made;
    for (int i = 0; i < params.n; ++i) {
      auto c = std::make_unique<Completion>();
      c->request_id = request.id;
      c->index = i;
      c->prompt_length = static_cast<int>(request.prompt.size());
      c->submitted = request.submitted;
      c->want_logprobs = params.sampling.logprobs > 0;
      const SamplingParams &sp = params.sampling;
      c->uses_history = sp.repetition_penalty != 1.0f || sp.presence_penalty != 0.0f ||
                        sp.frequency_penalty != 0.0f;
      KILN_ASSIGN_OR_RETURN(c->sampler, Sampler::Create(CompletionSampling(params, i)));
      KILN_ASSIGN_OR_RETURN(c->stop, StopChecker::Create(params, request.eos_ids, tokenizer_));
      made.push_back(std::move(c));
    }
    if (scheduler_->NumWaiting() + scheduler_->NumRunning() + params.n >
        scheduler_->config().max_tracked_seqs)
      return Status(StatusCode::kResourceExhausted,
                    "the engine already tracks " +
                        std::to_string(scheduler_->NumWaiting() + scheduler_->NumRunning()) +
                        " sequences (max_tracked " +
                        std::to_string(scheduler_->config().max_tracked_seqs) + ")");
    auto entry = std::make_unique<StreamCallback>(std::move(request.on_token));
    std::vector<int64_t> ids;
    for (auto &c : made) {
      c->on_token = entry.get();
      if (max_new < 1) { // nothing to generate: finished at once
        Finish(*c, FinishReason::kLength, {});
        continue;
      }
      Sequence seq;
      seq.id = next_seq_id_++;
      seq.prompt = request.prompt;
      seq.max_new_tokens = max_new;
      Status added = scheduler_->Add(std::move(seq));
      if (!added.ok()) {
        for (int64_t id : ids) { // undo the completions already queued
          (void)scheduler_->Cancel(id);
          completions_.erase(id);
        }
        (void)scheduler_->TakeFinished();
        return added;
      }
      ids.push_back(next_seq_id_ - 1);
      completions_[next_seq_id_ - 1] = std::move(c);
    }
    if (ids.empty()) // every completion finished at once
      return Status::Ok();
    request_ids_[request.id] = ids;
    callbacks_[request.id] = std::move(entry);
    return Status::Ok();
  }

  Status Step() override {
    kiln::engine::Step step = scheduler_->Schedule();
    if (step.empty()) {
      Collect();
      return Status::Ok();
    }
    sampled_.clear();
    samples_.clear();
    // A logits hook reads every row on the host, and the device sampler has
    // no logit_bias: both keep host sampling.
    if (runner_->SamplesOnDevice() && !hook_ && !AnyLogitBias(step))
      KILN_RETURN_IF_ERROR(SampleOnDevice(step));
    else
      KILN_RETURN_IF_ERROR(SampleOnHost(step));
    KILN_RETURN_IF_ERROR(scheduler_->Update(step, sampled_));
    ++stats_.steps;
    stats_.tokens_computed += step.num_tokens;
    stats_.preemptions += static_cast<int64_t>(step.preempted.size());
    size_t i = 0;
    for (const ScheduledChunk &chunk : step.chunks)
      if (chunk.samples)
        Deliver(chunk.seq_id, samples_[i++]);
    Collect();
    return Status::Ok();
  }

  bool AnyLogitBias(const kiln::engine::Step &step) const {
    for (const ScheduledChunk &chunk : step.chunks)
      if (chunk.samples && !completions_.at(chunk.seq_id)->sampler->params().logit_bias.empty())
        return true;
    return false;
  }

  // Runs `step` and samples its rows from the logits copied to the host.
  Status SampleOnHost(const kiln::engine::Step &step) {
    KILN_RETURN_IF_ERROR(runner_->Run(step, logits_));
    const int64_t vocab = runner_->vocab_size();
    int64_t row = 0;
    for (const ScheduledChunk &chunk : step.chunks) {
      if (!chunk.samples)
        continue;
      Completion &c = *completions_.at(chunk.seq_id);
      const float *l = logits_.data() + row++ * vocab;
      if (hook_)
        hook_(c.request_id, c.index, l, vocab);
      const Sequence &seq = *chunk.seq;
      // Only the penalties read the history; skip the copy without them.
      history_.clear();
      if (c.uses_history) {
        history_.assign(seq.prompt.begin(), seq.prompt.end());
        history_.insert(history_.end(), seq.output.begin(), seq.output.end());
      }
      samples_.push_back(
          c.sampler->Sample(l, vocab, history_, seq.prompt.size(), c.stop->Suppressed()));
      sampled_.push_back(samples_.back().token);
    }
    return Status::Ok();
  }

  // Runs `step` and samples on the runner's device, each row with the draw
  // its host sampler would make next; a row that drew consumes it.
  Status SampleOnDevice(const kiln::engine::Step &step) {
    device_rows_.clear();
    std::vector<Completion *> sampling;
    for (const ScheduledChunk &chunk : step.chunks) {
      if (!chunk.samples)
        continue;
      Completion &c = *completions_.at(chunk.seq_id);
      const SamplingParams &p = c.sampler->params();
      RowSampling row;
      row.params = &p;
      row.seq = chunk.seq;
      row.suppressed = &c.stop->Suppressed();
      if (p.temperature != 0.0f && p.top_k != 1)
        row.uniform_bits = c.sampler->PeekUniformBits();
      device_rows_.push_back(row);
      sampling.push_back(&c);
    }
    KILN_RETURN_IF_ERROR(runner_->RunAndSample(step, device_rows_, device_out_));
    if (device_out_.size() != sampling.size())
      return Internal("the runner sampled " + std::to_string(device_out_.size()) + " of " +
                      std::to_string(sampling.size()) + " rows");
    for (size_t i = 0; i < sampling.size(); ++i) {
      if (device_out_[i].drew)
        sampling[i]->sampler->ConsumeUniform();
      samples_.push_back(std::move(device_out_[i].sample));
      sampled_.push_back(samples_.back().token);
    }
    return Status::Ok();
  }

  bool HasUnfinished() const override { return scheduler_->HasUnfinished(); }

  std::vector<Response> TakeFinished() override {
    Collect();
    std::vector<Response> out = std::move(finished_);
    finished_.clear();
    return out;
  }

  void Cancel(int64_t request_id) override {
    auto it = request_ids_.find(request_id);
    if (it == request_ids_.end())
      return;
    for (int64_t id : it->second) {
      auto c = completions_.find(id);
      if (c == completions_.end() || c->second->ended)
        continue;
      c->second->ended = true;
      c->second->reason = FinishReason::kCancelled;
      (void)scheduler_->Cancel(id);
    }
    Collect();
  }

  EngineStats stats() const override {
    EngineStats s = stats_;
    s.running = scheduler_->NumRunning();
    s.waiting = scheduler_->NumWaiting();
    s.kv_blocks_free = blocks_->NumFreeBlocks();
    return s;
  }

private:
  // Streams the sampled token of sequence `id` and decides whether it ended.
  void Deliver(int64_t id, SampledToken &sample) {
    Completion &c = *completions_.at(id);
    if (c.ended) // cancelled by its callback earlier in this step
      return;
    const Sequence *seq = scheduler_->Find(id);
    if (!c.has_first_token) {
      c.has_first_token = true;
      c.first_token = Clock::now();
    }
    StreamEvent event;
    event.request_id = c.request_id;
    event.completion = c.index;
    event.token = sample.token;
    event.text = c.stop->Append(sample.token);
    const bool context_full =
        !c.stop->finished() && context_length_ > 0 && seq && seq->NumTokens() >= context_length_;
    if (context_full)
      event.text += c.stop->Flush();
    event.sample = &sample;
    const bool ends = c.stop->finished() || context_full;
    event.finished = ends;
    c.text += event.text;
    bool keep = true;
    if (*c.on_token)
      keep = (*c.on_token)(event);
    if (c.want_logprobs)
      c.logprobs.push_back(std::move(sample));
    // Reasons in DecoderSession's order: the token's own, the caller, length, context.
    if (c.stop->finished() && c.stop->finish_reason() != FinishReason::kLength)
      End(c, id, c.stop->finish_reason());
    else if (!keep)
      End(c, id, FinishReason::kCancelled);
    else if (c.stop->finished())
      End(c, id, FinishReason::kLength);
    else if (context_full)
      End(c, id, FinishReason::kContext);
  }

  void End(Completion &c, int64_t id, FinishReason reason) {
    c.ended = true;
    c.reason = reason;
    // Ok when the scheduler already finished it (it reached max_new_tokens).
    (void)scheduler_->Finish(id, reason);
  }

  // Turns the scheduler's finished sequences into responses.
  void Collect() {
    for (Sequence &seq : scheduler_->TakeFinished()) {
      auto it = completions_.find(seq.id);
      if (it == completions_.end())
        continue;
      Completion &c = *it->second;
      if (!c.ended) // finished by the scheduler at max_new_tokens
        c.reason = FinishReason::kLength;
      if (c.reason == FinishReason::kCancelled)
        c.text += c.stop->Flush();
      Finish(c, c.reason, seq);
      const int64_t request = c.request_id;
      completions_.erase(it);
      // The request's entries go with its last completion.
      auto ids = request_ids_.find(request);
      if (ids != request_ids_.end() &&
          std::none_of(ids->second.begin(), ids->second.end(),
                       [&](int64_t s) { return completions_.count(s) != 0; })) {
        request_ids_.erase(ids);
        callbacks_.erase(request);
      }
    }
  }

  void Finish(Completion &c, FinishReason reason, const Sequence &seq) {
    Response r;
    r.request_id = c.request_id;
    r.completion = c.index;
    r.generated_text = std::move(c.text);
    r.tokens = seq.output;
    r.logprobs = std::move(c.logprobs);
    r.prompt_length = c.prompt_length;
    r.generated_length = static_cast<int>(seq.output.size());
    r.finish_reason = reason;
    const Clock::time_point now = Clock::now();
    r.ttft_seconds = c.has_first_token ? SecondsBetween(c.submitted, c.first_token) : 0;
    r.total_seconds = SecondsBetween(c.submitted, now);
    r.num_preemptions = seq.num_preemptions;
    r.prefix_hit_tokens = seq.num_prefix_hit_tokens;
    finished_.push_back(std::move(r));
  }

  std::unique_ptr<ModelRunner> runner_;
  const Tokenizer *tokenizer_;
  int64_t context_length_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unordered_map<int64_t, std::unique_ptr<Completion>> completions_; // by sequence id
  std::unordered_map<int64_t, std::vector<int64_t>> request_ids_;        // request -> sequences
  std::unordered_map<int64_t, std::unique_ptr<StreamCallback>> callbacks_;
  std::vector<Response> finished_;
  int64_t next_seq_id_ = 1;
  EngineStats stats_;
  std::vector<float> logits_;
  std::vector<int32_t> sampled_, history_;
  std::vector<SampledToken> samples_;
  std::vector<RowSampling> device_rows_;
  std::vector<RowSample> device_out_;
};

} // namespace

StatusOr<int64_t> KvCacheBlocks(const EngineOptions &options, int64_t bytes_per_block,
                                int64_t context_length) {
  int64_t budget = options.kv_cache_bytes;
  if (budget == 0) {
    // Room for every sequence of a step at the full context, within the cap.
    int64_t ctx = context_length > 0 ? context_length : 4096;
    int64_t want = (ctx + options.block_size - 1) / options.block_size * options.max_seqs;
    budget = std::min(options.kv_cache_cap, want > options.kv_cache_cap / bytes_per_block
                                                ? options.kv_cache_cap
                                                : want * bytes_per_block);
  }
  auto blocks = BlocksForBudget(budget, bytes_per_block);
  if (!blocks.ok())
    return InvalidArgument("kv_cache_bytes " + std::to_string(budget) + " holds no KV block of " +
                           std::to_string(bytes_per_block) + " bytes (" +
                           std::to_string(options.block_size) + " tokens over every layer)");
  return *blocks;
}

StatusOr<std::unique_ptr<Engine>> CreateBatchedEngine(std::unique_ptr<ModelRunner> runner,
                                                      const Tokenizer *tokenizer,
                                                      const EngineOptions &options,
                                                      int64_t context_length) {
  if (!runner)
    return InvalidArgument("the batched engine needs a model runner");
  auto engine = std::make_unique<BatchedEngine>(std::move(runner), tokenizer, context_length);
  KILN_RETURN_IF_ERROR(engine->Init(options));
  return std::unique_ptr<Engine>(std::move(engine));
}

} // namespace kiln::engine
