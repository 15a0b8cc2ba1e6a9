// Autoregressive generation over a plan's decoder interface (Plan.decoder):
// a prefill step over the prompt, then one decode step per new token, with
// the model's own KV tensors carried between steps (present of step t is
// past of step t+1). A plan without KV pairs re-runs the whole sequence each
// step. Batch size is 1. Each token is sampled with the request's history
// (for the penalties), and StopChecker decides when the completion ends.
#pragma once

#include "kiln/executor.h"
#include "kiln/request.h"
#include "kiln/sampler.h"
#include "kiln/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

// A request as DecoderSession runs it: the request's parameters plus the
// model's EOS ids. n must be 1 here; run completion i of a request with
// n > 1 by setting sampling = CompletionSampling(params, i).
struct GenerateOptions : RequestParams {
  std::vector<int64_t> eos_token_ids; // end a completion unless ignore_eos

  // The plan's generation defaults and EOS ids.
  static GenerateOptions FromPlan(const Plan &plan);
};

struct GenerateResult {
  std::vector<int32_t> tokens; // new tokens, EOS or stop id included when it ended the run
  // The output text (with a tokenizer; see set_tokenizer): special tokens
  // skipped, cut before a stop string, without the text of an EOS or stop id.
  std::string text;
  std::vector<SampledToken> logprobs;          // one per token when sampling.logprobs > 0
  FinishReason finish = FinishReason::kLength; // kCancelled when the callback stopped it
  int prompt_tokens = 0;
  double prefill_seconds = 0; // first step: prompt through the model, first sample
  int decode_steps = 0;       // steps after the first
  double decode_seconds = 0;
};

// What a streaming caller sees of one step.
struct GenerateStep {
  int32_t token = 0;
  // Text this token releases: "" without a tokenizer, while a character is
  // incomplete, or while the text could still begin a stop string. The last
  // step's text includes everything held back, so the steps' texts add up to
  // GenerateResult::text, unless the callback itself stopped the run.
  std::string text;
  const SampledToken *sample = nullptr; // the token, with logprobs when requested
};

class DecoderSession {
public:
  // Checks that the plan has a usable decoder interface: input_ids and
  // logits (f32), every graph input a known role, past/present pairs of one
  // dtype. `plan` must outlive the session.
  static StatusOr<std::unique_ptr<DecoderSession>> Create(const Plan &plan);

  // Called with each new token; return false to stop after it.
  using TokenCallback = std::function<bool(int32_t token)>;
  // Called with each step's token and released text; return false to stop.
  using StepCallback = std::function<bool(const GenerateStep &step)>;
  // Called with every step's last-position logits (prefill included), before
  // sampling. For tests and `kiln run --dump-logits`.
  using LogitsHook = std::function<void(const float *logits, int64_t vocab)>;
  void set_logits_hook(LogitsHook hook) { logits_hook_ = std::move(hook); }
  // Detokenizes the output (GenerateResult::text, GenerateStep::text) and
  // enables stop strings. `tokenizer` may be null; it must outlive the session.
  void set_tokenizer(const Tokenizer *tokenizer) { tokenizer_ = tokenizer; }

  // InvalidArgument for an empty prompt, a prompt longer than the context
  // length, bad request parameters (ValidateRequestParams), n != 1, or stop
  // strings without a tokenizer; op errors from the executor otherwise.
  StatusOr<GenerateResult> Generate(const std::vector<int32_t> &prompt,
                                    const GenerateOptions &options,
                                    const TokenCallback &on_token = nullptr);
  // Generate, streaming each step's text and logprobs to `on_step`.
  StatusOr<GenerateResult> GenerateStreaming(const std::vector<int32_t> &prompt,
                                             const GenerateOptions &options,
                                             const StepCallback &on_step);

  // Runs `tokens` as one prefill from an empty past and puts the logits of
  // every position in `logits`: tokens.size() rows of the vocabulary,
  // row-major (scoring a text: kiln eval ppl). InvalidArgument for no
  // tokens, more than the context length, or a plan whose logits hold only
  // some positions' rows.
  Status AllLogits(const std::vector<int32_t> &tokens, std::vector<float> &logits);

  int64_t context_length() const { return context_length_; } // 0: unknown

private:
  struct KV {
    int past_input = -1;             // position in plan.inputs()
    int present_output = -1;         // position in plan.outputs()
    Shape initial_shape;             // the past before any token: sequence dim 0
    std::vector<uint8_t> buffers[2]; // ping-pong: past of this step, present copy
    Shape shape;
    int current = 0;
  };
  explicit DecoderSession(const Plan &plan) : plan_(plan) {}
  Status Init();
  // One model step over tokens[past_len, end); leaves logits of the last
  // position in `last_logits_`.
  Status Step(const std::vector<int32_t> &tokens, int64_t past_len);
  // Binds and runs tokens[past_len, end) over the current past.
  Status RunModel(const std::vector<int32_t> &tokens, int64_t past_len);
  // Empties the past: the next step starts a sequence.
  void ResetPast();

  const Plan &plan_;
  std::unique_ptr<Executor> executor_;
  int input_ids_ = -1, attention_mask_ = -1, position_ids_ = -1; // input positions
  int logits_ = -1;                                              // output position
  std::vector<KV> kv_;
  int64_t context_length_ = 0;
  LogitsHook logits_hook_;
  const Tokenizer *tokenizer_ = nullptr;
  std::vector<float> last_logits_;
  // Input buffers kept across steps so Bind's views stay valid through Run.
  std::vector<uint8_t> ids_buf_, mask_buf_, pos_buf_;
};

} // namespace kiln
