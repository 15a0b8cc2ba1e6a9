// A generation request beyond the per-token sampler: how many tokens, when a
// completion ends, and how many completions. DecoderSession and the serving
// engine share these, so a request means the same thing in both.
#pragma once

#include "kiln/response.h"
#include "kiln/sampler.h"
#include "kiln/status.h"
#include "kiln/stop_matcher.h"
#include "kiln/tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct RequestParams {
  SamplingParams sampling;
  int max_new_tokens = 128;
  // EOS and stop ids are suppressed, and stop strings not looked for, until a
  // completion has this many tokens.
  int min_new_tokens = 0;
  // The text ends before the first stop string (which may span tokens); the
  // tokens that made it stay in the token list.
  std::vector<std::string> stop;
  // End a completion like EOS does; their text is not part of the output.
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false; // the model's EOS ids do not end a completion
  int n = 1;               // completions; completion i samples with CompletionSeed(seed, i)
};

// Every field (sampling included); InvalidArgument names the field, its valid
// range and the value given.
Status ValidateRequestParams(const RequestParams &params);

// InvalidArgument "prompt of N tokens is longer than the context length of M"
// when it is; a context length <= 0 means unknown and accepts any prompt.
Status CheckPromptLength(int64_t prompt_tokens, int64_t context_length);

// The seed of completion `index`: `seed` itself for index 0 (so n = 1 is the
// plain request), and well-mixed distinct seeds for the others.
uint64_t CompletionSeed(uint64_t seed, int index);

// `params.sampling` with completion `index`'s seed.
SamplingParams CompletionSampling(const RequestParams &params, int index);

// One completion's end conditions and output text. Fed each generated token,
// it detokenizes (UTF-8 safe), holds back text that could begin a stop
// string, and says when and why the completion ended. The per-request state
// a scheduler keeps next to the token list.
class StopChecker {
public:
  // `eos_ids` are the model's. `tokenizer` (may be null: no text) must
  // outlive the checker; stop strings need one. Validates `params`.
  static StatusOr<std::unique_ptr<StopChecker>> Create(const RequestParams &params,
                                                       const std::vector<int64_t> &eos_ids,
                                                       const Tokenizer *tokenizer);

  // Ids the sampler must not pick next: EOS and stop ids while the
  // completion is shorter than min_new_tokens, else none.
  const std::vector<int32_t> &Suppressed() const;

  // Records the next generated token and returns the text it releases. When
  // the token ends the completion, finished() turns true and the text
  // includes everything held back (cut before a stop string if one matched).
  std::string Append(int32_t token);
  // Ends the completion for a reason found elsewhere (context, a caller) and
  // returns the text still held back; "" when already flushed.
  std::string Flush();

  bool finished() const { return finished_; }
  // kEos, kStopToken, kStopString or kLength once finished(); kNone before.
  FinishReason finish_reason() const { return reason_; }
  int generated() const { return generated_; }

private:
  StopChecker(const RequestParams &params, const std::vector<int64_t> &eos_ids,
              const Tokenizer *tokenizer);
  std::string Finish(FinishReason reason, std::string text);

  int max_new_tokens_, min_new_tokens_;
  std::vector<int32_t> end_ids_; // EOS (unless ignored) then stop ids
  size_t eos_count_ = 0;         // how many of end_ids_ are EOS
  std::vector<int32_t> none_;
  std::unique_ptr<IncrementalDecoder> decoder_;
  StopMatcher matcher_;
  int generated_ = 0;
  bool finished_ = false, flushed_ = false;
  FinishReason reason_ = FinishReason::kNone;
};

} // namespace kiln
