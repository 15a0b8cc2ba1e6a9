// Sampler: penalties (repetition, then presence and frequency) and
// suppression, then temperature, top-k, top-p and min-p, in that order (the
// order Hugging Face's generate applies its processors and warpers).
#include "kiln/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace kiln {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool InRange(double v, double lo, double hi) { return v >= lo && v <= hi; } // false for NaN

// Candidates ordered by logit, ties by lower id: this order makes greedy,
// top_k == 1, the sort and the logprobs' top list agree on "the best".
bool Better(const std::pair<float, int32_t> &a, const std::pair<float, int32_t> &b) {
  return a.first != b.first ? a.first > b.first : a.second < b.second;
}

} // namespace

Status ValidateSamplingParams(const SamplingParams &p) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
    return InvalidArgument("temperature must be a finite number >= 0, got " + Num(p.temperature));
  if (p.top_k < 0)
    return InvalidArgument("top_k must be >= 0, got " + std::to_string(p.top_k));
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return InvalidArgument("top_p must be in (0, 1], got " + Num(p.top_p));
  if (!InRange(p.min_p, 0, 1))
    return InvalidArgument("min_p must be in [0, 1], got " + Num(p.min_p));
  if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty))
    return InvalidArgument("repetition_penalty must be a finite number > 0, got " +
                           Num(p.repetition_penalty));
  if (!InRange(p.presence_penalty, -2, 2))
    return InvalidArgument("presence_penalty must be in [-2, 2], got " + Num(p.presence_penalty));
  if (!InRange(p.frequency_penalty, -2, 2))
    return InvalidArgument("frequency_penalty must be in [-2, 2], got " + Num(p.frequency_penalty));
  for (const auto &[id, bias] : p.logit_bias)
    if (id < 0 || !InRange(bias, -100, 100))
      return InvalidArgument("logit_bias needs token ids >= 0 and biases in [-100, 100], got " +
                             std::to_string(id) + ": " + Num(bias));
  if (p.logprobs < 0 || p.logprobs > kMaxLogprobs)
    return InvalidArgument("logprobs must be in [0, " + std::to_string(kMaxLogprobs) + "], got " +
                           std::to_string(p.logprobs));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Sampler>> Sampler::Create(const SamplingParams &params) {
  KILN_RETURN_IF_ERROR(ValidateSamplingParams(params));
  return std::unique_ptr<Sampler>(new Sampler(params));
}

double Sampler::Uniform() {
  uint64_t bits = has_pending_ ? pending_bits_ : rng_();
  has_pending_ = false;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

uint64_t Sampler::PeekUniformBits() {
  if (!has_pending_) {
    pending_bits_ = rng_();
    has_pending_ = true;
  }
  return pending_bits_ >> 11;
}

void Sampler::ConsumeUniform() { (void)Uniform(); }

int32_t Sampler::Sample(const float *logits, int64_t vocab) {
  return Sample(logits, vocab, {}, 0).token;
}

SampledToken Sampler::Sample(const float *logits, int64_t vocab,
                             const std::vector<int32_t> &history, size_t prompt_len,
                             const std::vector<int32_t> &suppressed) {
  SampledToken out;
  if (vocab <= 0)
    return out;
  if (Process(logits, vocab, history, prompt_len, suppressed))
    logits = processed_.data();
  out.token = Choose(logits, vocab);
  if (params_.logprobs > 0)
    FillLogprobs(logits, vocab, &out);
  return out;
}

bool Sampler::Process(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                      size_t prompt_len, const std::vector<int32_t> &suppressed) {
  prompt_len = std::min(prompt_len, history.size());
  bool repetition = params_.repetition_penalty != 1.0f && !history.empty();
  bool counted = (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) &&
                 history.size() > prompt_len;
  if (!repetition && !counted && suppressed.empty() && params_.logit_bias.empty())
    return false;
  processed_.assign(logits, logits + vocab);
  auto valid = [vocab](int32_t id) { return id >= 0 && id < vocab; };
  if (repetition) {
    // Once per distinct token, however often it occurs.
    scratch_.assign(history.begin(), history.end());
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
    for (int32_t id : scratch_) {
      if (!valid(id))
        continue;
      float &l = processed_[id];
      l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
  }
  if (counted) {
    scratch_.assign(history.begin() + static_cast<std::ptrdiff_t>(prompt_len), history.end());
    std::sort(scratch_.begin(), scratch_.end());
    for (size_t i = 0; i < scratch_.size();) {
      size_t j = i;
      while (j < scratch_.size() && scratch_[j] == scratch_[i])
        ++j;
      if (valid(scratch_[i]))
        processed_[scratch_[i]] -=
            params_.presence_penalty + params_.frequency_penalty * static_cast<float>(j - i);
      i = j;
    }
  }
  for (const auto &[id, bias] : params_.logit_bias)
    if (valid(id))
      processed_[id] += bias;
  for (int32_t id : suppressed)
    if (valid(id))
      processed_[id] = -std::numeric_limits<float>::infinity();
  return true;
}

int32_t Sampler::Choose(const float *logits, int64_t vocab) {
  if (params_.temperature == 0.0f || params_.top_k == 1) {
    int32_t best = -1;
    for (int64_t i = 0; i < vocab; ++i) {
      if (std::isnan(logits[i]))
        continue;
      if (best < 0 || logits[i] > logits[best])
        best = static_cast<int32_t>(i);
    }
    return best < 0 ? 0 : best;
  }

  candidates_.clear();
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isnan(logits[i]))
      candidates_.push_back({logits[i], static_cast<int32_t>(i)});
  if (candidates_.empty())
    return 0;
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), Better);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), Better);
  }
  candidates_.resize(keep);

  // Softmax in double, stable against large logits; -inf logits get 0.
  probs_.resize(keep);
  double max_logit = candidates_[0].first, total = 0;
  // All -inf, or a +inf that would make every softmax term NaN: the best wins.
  if (std::isinf(max_logit))
    return candidates_[0].second;
  for (size_t i = 0; i < keep; ++i) {
    double z = (candidates_[i].first - max_logit) / params_.temperature;
    probs_[i] = std::exp(z);
    total += probs_[i];
  }
  // Nucleus: the smallest prefix whose mass reaches top_p (at least one).
  if (params_.top_p < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < keep) {
      mass += probs_[n++] / total;
      if (mass >= params_.top_p)
        break;
    }
    keep = n;
  }
  // min-p: probs_[0] is the best's (unnormalized) probability, and the
  // survivors are sorted, so the cut keeps a prefix.
  if (params_.min_p > 0.0f) {
    double floor = params_.min_p * probs_[0];
    size_t n = 1;
    while (n < keep && probs_[n] >= floor)
      ++n;
    keep = n;
  }
  if (keep < candidates_.size()) {
    total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += probs_[i];
  }
  double u = Uniform() * total, acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (u < acc)
      return candidates_[i].second;
  }
  return candidates_[keep - 1].second; // rounding left u at the very top
}

void Sampler::FillLogprobs(const float *logits, int64_t vocab, SampledToken *out) {
  const float inf = std::numeric_limits<float>::infinity();
  double t = params_.temperature > 0.0f ? params_.temperature : 1.0;
  double max_logit = -inf;
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isnan(logits[i]))
      max_logit = std::max<double>(max_logit, logits[i]);
  // log-softmax(x / t) = (x - max) / t - log(sum exp((x - max) / t)). With an
  // infinite max the limit is uniform over the tokens that hold it.
  double log_total = 0;
  if (std::isinf(max_logit)) {
    int64_t holders = 0;
    for (int64_t i = 0; i < vocab; ++i)
      holders += logits[i] == max_logit;
    log_total = std::log(static_cast<double>(std::max<int64_t>(holders, 1)));
  } else {
    double total = 0;
    for (int64_t i = 0; i < vocab; ++i)
      if (!std::isnan(logits[i]))
        total += std::exp((logits[i] - max_logit) / t);
    log_total = std::log(total);
  }
  auto logprob = [&](float l) -> float {
    if (std::isnan(l))
      return -inf;
    if (std::isinf(max_logit))
      return l == max_logit ? static_cast<float>(-log_total) : -inf;
    return static_cast<float>((l - max_logit) / t - log_total);
  };
  out->logprob = logprob(logits[out->token]);

  candidates_.clear();
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isnan(logits[i]))
      candidates_.push_back({logits[i], static_cast<int32_t>(i)});
  size_t n = std::min(candidates_.size(), static_cast<size_t>(params_.logprobs));
  std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), Better);
  out->top.clear();
  for (size_t i = 0; i < n; ++i)
    out->top.push_back({candidates_[i].second, logprob(candidates_[i].first)});
}

} // namespace kiln
