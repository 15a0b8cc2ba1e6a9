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

#include "kiln/request.h"
#include "kiln/response.h"
#include "kiln/sampler.h"
#include "kiln/status.h"
#include "kiln/tokenizer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

class Communicator; // runtime/src/comm/communicator.h

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
  std::string backend = "cpu";      // what runs the plan: "cpu", "cuda" or "cuda:N"
  // On a device backend, when kv_cache_bytes is 0: size the KV cache as this
  // fraction, in (0, 1], of the device memory free after the weights and a
  // largest step's activations. 0: off (the kv_cache_bytes default applies).
  double gpu_memory_utilization = 0;
  // CUDA graphs for decode steps on a backend that can capture them
  // (docs/gpu.md); false, or KILN_CUDA_GRAPHS=0 in the environment, runs
  // every step eagerly.
  bool cuda_graphs = true;
  // Tensor parallelism (docs/tp-runtime.md): the communicator of this
  // process's rank, which must outlive the pipeline; null for one rank. Rank
  // 0 opens the pipeline and every other rank calls RunFollower with the
  // same options and its own rank's plan.
  Communicator *comm = nullptr;
};

// A prompt and how to continue it.
struct Request {
  std::string prompt;              // encoded with the plan's tokenizer, special tokens added
  std::vector<int32_t> prompt_ids; // used instead of `prompt` when not empty
  RequestParams params;
};

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
  using LogitsHook = kiln::LogitsHook;
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
    // Now: completions running and waiting, KV blocks free (0 for a dense plan).
    int64_t running = 0, waiting = 0, kv_blocks_free = 0;
  };
  Stats stats() const;

  struct Impl;

private:
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A rank other than 0 of a tensor-parallel run: builds the same model runner
// as rank 0's pipeline and executes the steps rank 0 broadcasts until rank 0
// stops (Ok) or a rank fails (the error, naming it when known).
// Runs until rank 0 calls EndFollowers; rank 0 may open several pipelines
// one after another (each pipeline's steps end when it is destroyed).
Status RunFollower(const Plan &plan, const PipelineOptions &options);
// Rank 0, once its last pipeline is gone: ends the followers' RunFollower.
// A no-op without tensor parallelism.
Status EndFollowers(Communicator *comm);

} // namespace kiln
