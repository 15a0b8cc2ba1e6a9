// Autoregressive generation over a plan's decoder interface (Plan.decoder):
// a prefill step over the prompt, then one decode step per new token, with
// the model's own KV tensors carried between steps (present of step t is
// past of step t+1). A plan without KV pairs re-runs the whole sequence each
// step. Batch size is 1.
#pragma once

#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/sampler.h"
#include "kiln/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace kiln {

struct GenerateOptions {
  SamplingParams sampling;
  int max_new_tokens = 128;
  std::vector<int64_t> eos_token_ids; // stop after generating any of these

  // The plan's generation defaults and EOS ids.
  static GenerateOptions FromPlan(const Plan &plan);
};

enum class FinishReason {
  kEos,      // generated an EOS id
  kLength,   // reached max_new_tokens
  kContext,  // the sequence filled the model's context length
  kCallback, // the token callback asked to stop
};
const char *FinishReasonName(FinishReason r);

struct GenerateResult {
  std::vector<int32_t> tokens; // new tokens, EOS included when it ended the run
  FinishReason finish = FinishReason::kLength;
  int prompt_tokens = 0;
  double prefill_seconds = 0; // first step: prompt through the model, first sample
  int decode_steps = 0;       // steps after the first
  double decode_seconds = 0;
};

class DecoderSession {
public:
  // Checks that the plan has a usable decoder interface: input_ids and
  // logits (f32), every graph input a known role, past/present pairs of one
  // dtype. `plan` must outlive the session.
  static StatusOr<std::unique_ptr<DecoderSession>> Create(const Plan &plan);

  // Called with each new token; return false to stop after it.
  using TokenCallback = std::function<bool(int32_t token)>;
  // Called with every step's last-position logits (prefill included), before
  // sampling. For tests and `kiln run --dump-logits`.
  using LogitsHook = std::function<void(const float *logits, int64_t vocab)>;
  void set_logits_hook(LogitsHook hook) { logits_hook_ = std::move(hook); }

  // InvalidArgument for an empty prompt, a prompt longer than the context
  // length, negative max_new_tokens or bad sampling parameters; op errors
  // from the executor otherwise.
  StatusOr<GenerateResult> Generate(const std::vector<int32_t> &prompt,
                                    const GenerateOptions &options,
                                    const TokenCallback &on_token = nullptr);

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

  const Plan &plan_;
  std::unique_ptr<Executor> executor_;
  int input_ids_ = -1, attention_mask_ = -1, position_ids_ = -1; // input positions
  int logits_ = -1;                                              // output position
  std::vector<KV> kv_;
  int64_t context_length_ = 0;
  LogitsHook logits_hook_;
  std::vector<float> last_logits_;
  // Input buffers kept across steps so Bind's views stay valid through Run.
  std::vector<uint8_t> ids_buf_, mask_buf_, pos_buf_;
};

} // namespace kiln
