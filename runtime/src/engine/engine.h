// What the Pipeline drives: an engine that takes requests, runs steps and
// hands back responses. BatchedEngine runs a ragged plan with continuous
// batching; SerialEngine runs a dense plan one request at a time.
#pragma once

#include "kiln/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::engine {

using Clock = std::chrono::steady_clock;

// A request after the Pipeline checked it: tokenized, validated, given an id.
struct Admitted {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  RequestParams params;
  std::vector<int64_t> eos_ids;
  StreamCallback on_token;
  Clock::time_point submitted;
};

// Request ids to cancel, filled by any thread (Pipeline::Cancel) and drained
// by the engine's thread at the start of a step.
class CancelList {
public:
  void Add(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.push_back(id);
  }
  std::vector<int64_t> Drain() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> out;
    out.swap(ids_);
    return out;
  }
  bool Contains(int64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  }

private:
  mutable std::mutex mu_;
  std::vector<int64_t> ids_;
};

class Engine {
public:
  virtual ~Engine() = default;
  // InvalidArgument / ResourceExhausted when the request cannot be queued.
  virtual Status Submit(Admitted request) = 0;
  virtual Status Step() = 0;
  virtual bool HasUnfinished() const = 0;
  virtual std::vector<Response> TakeFinished() = 0;
  // Cancels every completion of the request; unknown ids are ignored.
  virtual void Cancel(int64_t request_id) = 0;
  virtual Pipeline::Stats stats() const = 0;
  void set_logits_hook(Pipeline::LogitsHook hook) { hook_ = std::move(hook); }
  // Lets a long step notice a cancel before the next one drains it.
  void set_cancel_list(const CancelList *cancels) { cancels_ = cancels; }

protected:
  Pipeline::LogitsHook hook_;
  const CancelList *cancels_ = nullptr;
};

// Seconds from `since` to `to`.
inline double SecondsBetween(Clock::time_point since, Clock::time_point to) {
  return std::chrono::duration<double>(to - since).count();
}

// Coarse reason of a detailed one.
ResponseFinish CoarseFinish(kiln::FinishReason r);

class ModelRunner;

// KV blocks of `bytes_per_block` that options.kv_cache_bytes holds (0: room
// for max_seqs sequences of the full context, capped); InvalidArgument when
// not even one fits.
StatusOr<int64_t> KvCacheBlocks(const PipelineOptions &options, int64_t bytes_per_block,
                                int64_t context_length);

// Continuous batching over `runner`, whose KV cache geometry sizes the
// block manager. `tokenizer` may be null and must outlive the engine.
StatusOr<std::unique_ptr<Engine>> CreateBatchedEngine(std::unique_ptr<ModelRunner> runner,
                                                      const Tokenizer *tokenizer,
                                                      const PipelineOptions &options,
                                                      int64_t context_length);
// One request at a time through DecoderSession, for dense plans.
StatusOr<std::unique_ptr<Engine>> CreateSerialEngine(const Plan &plan, const Tokenizer *tokenizer);

} // namespace kiln::engine
