// What generation hands back: why a completion ended, the streamed tokens and
// the finished response. The engine produces these and the pipeline passes
// them on, so they live here, below both (pipeline -> engine -> this header).
#pragma once

#include "kiln/sampler.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

// Why a completion ended: the one reason the scheduler, the stop checker,
// DecoderSession and Response all record.
enum class FinishReason {
  kNone,       // not finished yet
  kEos,        // generated an EOS id
  kStopToken,  // generated one of stop_token_ids
  kStopString, // the text reached a stop string
  kLength,     // reached max_new_tokens
  kContext,    // the sequence filled the model's context length
  kCancelled,  // Pipeline::Cancel, or a stream callback returned false
};
// "none", "eos", "stop_token", "stop_string", "length", "context", "cancelled".
const char *FinishReasonName(FinishReason r);
// The coarse reason an OpenAI-style API reports: "stop" (EOS, a stop id or a
// stop string), "length" (max_new_tokens or the context), "cancelled", and
// "none" while unfinished.
const char *ApiFinishReason(FinishReason r);

struct Response {
  int64_t request_id = 0; // Submit's id
  int completion = 0;     // which of the request's n completions
  std::string generated_text;
  std::vector<int32_t> tokens;        // generated ids, an ending EOS or stop id included
  std::vector<SampledToken> logprobs; // one per token when params.sampling.logprobs > 0
  int prompt_length = 0;
  int generated_length = 0;
  FinishReason finish_reason = FinishReason::kLength; // ApiFinishReason gives the coarse one
  double ttft_seconds = 0;                            // Submit to first token
  double total_seconds = 0;                           // Submit to finish
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

// Called with each sampled row's logits before sampling (tests, --dump-logits).
using LogitsHook =
    std::function<void(int64_t request_id, int completion, const float *logits, int64_t vocab)>;

} // namespace kiln
