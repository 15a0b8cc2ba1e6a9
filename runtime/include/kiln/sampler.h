// Token sampling from one position's logits for one request: penalties over
// the request's tokens, greedy or temperature with top-k, top-p and min-p,
// and log-probabilities. Reproducible for a given seed on every platform, and
// independent of other requests: each Sampler owns its RNG.
#pragma once

#include "kiln/status.h"

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace kiln {

// The largest SamplingParams::logprobs (OpenAI's limit on top_logprobs).
inline constexpr int kMaxLogprobs = 20;

struct SamplingParams {
  float temperature = 0.0f; // 0: greedy (argmax)
  int top_k = 0;            // 0: no limit
  float top_p = 1.0f;       // nucleus mass in (0, 1]
  uint64_t seed = 0;        // seeds this request's own RNG
  float min_p = 0.0f;       // drop tokens less likely than min_p * p(best); in [0, 1]
  // Hugging Face semantics: every distinct token of the prompt and output has
  // its logit divided by this when positive, multiplied when negative. 1: off.
  float repetition_penalty = 1.0f;
  // OpenAI semantics, over generated tokens only, in [-2, 2]: a token's logit
  // loses presence_penalty once if it was generated, plus frequency_penalty
  // times the number of times it was generated.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int logprobs = 0; // 0: none; N in [1, 20]: the chosen token's and the N best
  // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to that token's
  // logit after the penalties; ids past the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// InvalidArgument naming the field, its valid range and the value given.
Status ValidateSamplingParams(const SamplingParams &params);

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// A sampled token and, when SamplingParams::logprobs > 0, log-probabilities
// from the log-softmax of the processed logits: penalties and suppression
// applied, divided by the temperature (1 when greedy), before top-k, top-p
// and min-p cut the candidates. So every token has a finite logprob unless
// its logit is -inf, and the numbers do not depend on the truncation knobs.
struct SampledToken {
  int32_t token = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top; // the `logprobs` most likely, best first, ties by lower id
};

class Sampler {
public:
  // Validates `params` (see ValidateSamplingParams).
  static StatusOr<std::unique_ptr<Sampler>> Create(const SamplingParams &params);

  // Picks a token id from `vocab` logits, with no history: the penalties have
  // nothing to act on. Greedy (and top_k == 1) returns the lowest index of
  // the maximum. NaN logits never win and are never drawn.
  int32_t Sample(const float *logits, int64_t vocab);

  // Picks a token after applying the penalties over `history` (the prompt's
  // `prompt_len` tokens, then those generated so far) and forbidding the
  // `suppressed` ids for this step (e.g. EOS before min_new_tokens). Ids
  // outside [0, vocab) in either list are ignored. Draws at most one random
  // number per call, so a request's tokens depend only on its own seed and
  // logits.
  SampledToken Sample(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                      size_t prompt_len, const std::vector<int32_t> &suppressed = {});

  const SamplingParams &params() const { return params_; }

  // For a sampler on a device that makes the same choice (the engine's
  // on-device sampling): the 53 bits of the uniform the next draw would use
  // (u = bits * 2^-53), without drawing it; ConsumeUniform then draws it,
  // when the device's choice did. The sequence of draws is the same as when
  // Sample draws on the host.
  uint64_t PeekUniformBits();
  void ConsumeUniform();

private:
  explicit Sampler(const SamplingParams &params) : params_(params), rng_(params.seed) {}
  // Uniform in [0, 1) from the engine's raw bits; std::uniform_real_distribution
  // differs between standard libraries, which would break reproducibility.
  double Uniform();
  // Writes the penalized and suppressed logits to processed_; false when
  // nothing would change them, so the caller can use the logits as they are.
  bool Process(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
               size_t prompt_len, const std::vector<int32_t> &suppressed);
  // Greedy, or temperature then top-k, top-p and min-p, then one draw.
  int32_t Choose(const float *logits, int64_t vocab);
  void FillLogprobs(const float *logits, int64_t vocab, SampledToken *out);

  SamplingParams params_;
  std::mt19937_64 rng_;
  bool has_pending_ = false; // pending_bits_ is the next draw's raw bits
  uint64_t pending_bits_ = 0;
  std::vector<std::pair<float, int32_t>> candidates_; // reused across calls
  std::vector<double> probs_;
  std::vector<float> processed_;
  std::vector<int32_t> scratch_;
};

} // namespace kiln
