// Token sampling from one position's logits: greedy, temperature, top-k and
// top-p, reproducible for a given seed on every platform.
#pragma once

#include "kiln/status.h"

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace kiln {

struct SamplingParams {
  float temperature = 0.0f; // 0: greedy (argmax)
  int top_k = 0;            // 0: no limit
  float top_p = 1.0f;       // nucleus mass in (0, 1]
  uint64_t seed = 0;
};

// InvalidArgument for a negative or non-finite temperature, a negative
// top_k, or top_p outside (0, 1].
Status ValidateSamplingParams(const SamplingParams &params);

class Sampler {
public:
  static StatusOr<std::unique_ptr<Sampler>> Create(const SamplingParams &params);

  // Picks a token id from `vocab` logits. Greedy (and top_k == 1) returns
  // the lowest index of the maximum. NaN logits never win and are never
  // drawn.
  int32_t Sample(const float *logits, int64_t vocab);

private:
  explicit Sampler(const SamplingParams &params) : params_(params), rng_(params.seed) {}
  // Uniform in [0, 1) from the engine's raw bits; std::uniform_real_distribution
  // differs between standard libraries, which would break reproducibility.
  double Uniform();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_; // reused across calls
  std::vector<double> probs_;
};

} // namespace kiln
