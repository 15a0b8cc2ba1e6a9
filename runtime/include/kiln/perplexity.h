// The perplexity of a plan's model over a text, by sliding windows (`kiln
// eval ppl`, docs/eval.md). The definition is Hugging Face's "perplexity of
// fixed-length models", so the numbers compare with what users compute in
// Python:
//   - windows of `window` tokens start every `stride` tokens; window k covers
//     [begin, end = min(begin + window, N)), and the last is the first whose
//     end is N;
//   - a window scores only its tokens past the previous window's end, each
//     token t by the log-softmax (in double precision) of the logits at t - 1
//     in that window, so a window's first token is never scored;
//   - perplexity = exp(summed negative log-likelihood / scored tokens).
// Plans with the ragged interface run each window through PlanModelRunner
// (several steps over the same KV blocks when the window is longer than a
// step); dense plans run each window as one prefill of DecoderSession.
#pragma once

#include "kiln/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

// The default window when the plan's context length is longer or unknown.
inline constexpr int64_t kDefaultMaxPerplexityWindow = 1024;

struct PerplexityOptions {
  // Tokens of one window, at least 2 and at most the plan's context length;
  // 0: the context length, capped at kDefaultMaxPerplexityWindow.
  int64_t window = 0;
  // Tokens from one window's start to the next, in [1, window]; 0: window / 2.
  int64_t stride = 0;
  // Scores only the first max_tokens tokens of the text (at least 2); 0: all.
  int64_t max_tokens = 0;
  // What runs the plan: "cpu", "cuda" or "cuda:N". Dense plans run only on the cpu.
  std::string device = "cpu";
  // Caps the CPU threads of matrix products (SetCpuThreads: process-wide);
  // 0 leaves the setting as it is.
  int threads = 0;
  // Ragged plans: the most tokens one step runs (the activations' size).
  int64_t step_tokens = 512;
};

struct PerplexityProgress {
  int64_t windows_done = 0, windows = 0;
  int64_t tokens_run = 0; // through the model so far: overlapping windows rerun tokens
  int64_t scored = 0;
  double seconds = 0; // since the first window started
};
// Called after each step of the model (a window or a part of one).
using PerplexityCallback = std::function<void(const PerplexityProgress &)>;

struct PerplexityResult {
  double perplexity = 0;    // exp(nll_per_token)
  double nll = 0;           // summed over the scored tokens, in nats
  double nll_per_token = 0; // nll / scored
  int64_t tokens = 0;       // tokens of the text evaluated (after max_tokens)
  int64_t scored = 0;       // tokens whose log-likelihood counts
  int64_t windows = 0;
  int64_t window = 0, stride = 0; // as resolved from the options
  double seconds = 0;             // the windows' wall time, loading not included
};

// Scores the token ids `ids`. InvalidArgument for bad options (window < 2 or
// past the context length, stride outside [1, window]), fewer than 2 tokens,
// an id outside the model's vocabulary, a plan without logits (an encoder), or
// a dense plan on another device than the cpu; Internal when the model's
// logits are NaN or +inf.
StatusOr<PerplexityResult> Perplexity(const Plan &plan, const std::vector<int32_t> &ids,
                                      const PerplexityOptions &options,
                                      const PerplexityCallback &progress = nullptr);

// Encodes `text` with the plan's tokenizer, special tokens added (the
// post-processor's BOS, as Hugging Face's tokenizer(text) does), then
// Perplexity. InvalidArgument also for a plan without a tokenizer, an empty
// text, and text that is not UTF-8.
StatusOr<PerplexityResult> TextPerplexity(const Plan &plan, std::string_view text,
                                          const PerplexityOptions &options,
                                          const PerplexityCallback &progress = nullptr);

} // namespace kiln
