// Sampler: temperature scaling, then top-k, then top-p over the softmax, in
// that order (the order Hugging Face's generate applies its warpers).
#include "kiln/sampler.h"

#include <algorithm>
#include <cmath>

namespace kiln {

Status ValidateSamplingParams(const SamplingParams &p) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
    return InvalidArgument("temperature must be a finite number >= 0, got " +
                           std::to_string(p.temperature));
  if (p.top_k < 0)
    return InvalidArgument("top_k must be >= 0, got " + std::to_string(p.top_k));
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return InvalidArgument("top_p must be in (0, 1], got " + std::to_string(p.top_p));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Sampler>> Sampler::Create(const SamplingParams &params) {
  KILN_RETURN_IF_ERROR(ValidateSamplingParams(params));
  return std::unique_ptr<Sampler>(new Sampler(params));
}

double Sampler::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::Sample(const float *logits, int64_t vocab) {
  if (vocab <= 0)
    return 0;
  // Candidates ordered by logit, ties by lower id: this order makes greedy,
  // top_k == 1 and the sort below agree on which token is "the best".
  auto better = [](const std::pair<float, int32_t> &a, const std::pair<float, int32_t> &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
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
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), better);
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

} // namespace kiln
