// The pipeline API: open a plan, generate for many prompts at once.
//
// With a plan built with the ragged interface (the default for injected
// decoders; docs/engine.md) every request shares one continuous-batching
// engine: a paged KV cache sized from a memory budget, Dynamic SplitFuse
// scheduling, prefix caching, preemption by recompute. A plan that kept the
// model's dense past/present interface runs its requests one at a time, with
// the same API and results.
//
//   auto pipe = kiln::Pipeline::Open("model.plan");          // StatusOr
//   kiln::RequestParams params = (*pipe)->DefaultParams();
//   params.max_new_tokens = 64;
//   auto responses = (*pipe)->Generate({"Hello", "The sky is"}, params,
//       [](const kiln::StreamEvent &e) { std::fputs(e.text.c_str(), stdout); return true; });
//
// Not thread-safe, except Cancel(), which any thread may call at any time.
#pragma once

#include "kiln/plan.h"
#include "kiln/request.h"
#include "kiln/sampler.h"
#include "kiln/status.h"
#include "kiln/tokenizer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct PipelineOptions {
  // KV cache memory, in bytes. 0: room for max_seqs sequences of the full
  // context length, capped at kDefaultKvCacheCap.
  int64_t kv_cache_bytes = 0;
  static constexpr int64_t kDefaultKvCacheCap = int64_t{1} << 30;
  int64_t block_size = 16;          // tokens per KV block
  int64_t max_batched_tokens = 512; // token budget of one step
  int max_seqs = 64;                // sequences in one step (the concurrency)
  int max_tracked = 1024;           // requests waiting + running; Submit refuses more
  bool prefix_caching = true;       // share the KV of common prompt prefixes
  std::string backend = "cpu";      // what runs the plan: a name from BackendNames()
};

// A prompt and how to continue it.
struct Request {
  std::string prompt;              // encoded with the plan's tokenizer, special tokens added
  std::vector<int32_t> prompt_ids; // used instead of `prompt` when not empty
  RequestParams params;
};

// The finish reason a client sees; `Response::detail` says which stop.
enum class ResponseFinish { kStop, kLength, kCancelled };
const char *ResponseFinishName(ResponseFinish f); // "stop", "length", "cancelled"

struct Response {
  int64_t request_id = 0; // Submit's id
  int completion = 0;     // which of the request's n completions
  std::string generated_text;
  std::vector<int32_t> tokens;        // generated ids, an ending EOS or stop id included
  std::vector<SampledToken> logprobs; // one per token when params.sampling.logprobs > 0
  int prompt_length = 0;
  int generated_length = 0;
  // stop: EOS, a stop id or a stop string; length: max_new_tokens or the
  // context is full; cancelled: Cancel() or a stream callback returned false.
  ResponseFinish finish_reason = ResponseFinish::kLength;
  FinishReason detail = FinishReason::kLength;
  double ttft_seconds = 0;  // Submit to first token
  double total_seconds = 0; // Submit to finish
  int num_preemptions = 0;
  int64_t prefix_hit_tokens = 0; // prompt tokens whose KV came from the prefix cache
};

// One generated token as it streams.
struct StreamEvent {
  int64_t request_id = 0;
  int completion = 0;
  int32_t token = 0;
  // Text this token releases. Never a broken UTF-8 sequence, never a piece
  // that could begin a stop string; the events' texts add up to the
  // response's generated_text.
  std::string text;
  const SampledToken *sample = nullptr; // with logprobs when requested
  bool finished = false;                // the last event of this completion
};
// Return false to cancel that completion (it finishes as cancelled).
using StreamCallback = std::function<bool(const StreamEvent &event)>;

class Pipeline {
public:
  // Loads and verifies the plan and sizes the KV cache. InvalidArgument for
  // a plan that is not a decoder or options out of range.
  static StatusOr<std::unique_ptr<Pipeline>> Open(const std::string &plan_path,
                                                  const PipelineOptions &options = {});
  // The same over a loaded plan, which must outlive the pipeline.
  static StatusOr<std::unique_ptr<Pipeline>> Create(const Plan &plan,
                                                    const PipelineOptions &options = {});
  ~Pipeline();
  Pipeline(const Pipeline &) = delete;
  Pipeline &operator=(const Pipeline &) = delete;

  // The plan's generation defaults (max_new_tokens, temperature, top_k, ...).
  RequestParams DefaultParams() const;

  // Runs every request to its end and returns the responses in request
  // order, a request's completions together. A bad request fails the call
  // before anything runs; `on_token` streams every completion's tokens.
  StatusOr<std::vector<Response>> Generate(const std::vector<std::string> &prompts,
                                           const RequestParams &params,
                                           const StreamCallback &on_token = nullptr);
  StatusOr<std::vector<Response>> Generate(const std::vector<Request> &requests,
                                           const StreamCallback &on_token = nullptr);

  // Incremental use, for servers and benchmarks: Submit queues a request
  // (InvalidArgument for bad parameters, an empty prompt or one longer than
  // the context; ResourceExhausted past max_tracked) and returns its id.
  // Step() runs one engine step and calls the callbacks; finished requests
  // wait in TakeFinished().
  StatusOr<int64_t> Submit(const Request &request, StreamCallback on_token = nullptr);
  Status Step();
  bool HasUnfinished() const;
  std::vector<Response> TakeFinished();
  // Cancels a request at the next step; unknown or finished ids are ignored.
  void Cancel(int64_t request_id);

  // Called with each sampled row's logits before sampling (tests, --dump-logits).
  using LogitsHook =
      std::function<void(int64_t request_id, int completion, const float *logits, int64_t vocab)>;
  void set_logits_hook(LogitsHook hook);

  // True when the plan has the ragged interface, so requests batch.
  bool batched() const;
  const Plan &plan() const;
  const Tokenizer *tokenizer() const; // null when the plan has none
  int64_t context_length() const;     // 0: unknown

  struct Stats {
    int64_t steps = 0;
    int64_t tokens_computed = 0; // through the model, prompt chunks and decodes
    int64_t preemptions = 0;
    int64_t kv_blocks = 0; // the pool (0 for a dense plan)
    int64_t block_size = 0;
  };
  Stats stats() const;

  struct Impl;

private:
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln
