// The sampler with a token history: repetition, presence and frequency
// penalties against hand-computed logits, and logprobs against a naive
// log-softmax. The logprobs show the processed logits directly: with every
// token listed, logprob differences are logit differences.
#include "kiln/sampler.h"
#include "sampler_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace kiln {
namespace {

// log-softmax(x / t) in double, the obvious way.
std::vector<double> NaiveLogSoftmax(const std::vector<float> &x, double t) {
  double total = 0;
  for (float v : x)
    total += std::exp(v / t);
  std::vector<double> out;
  for (float v : x)
    out.push_back(v / t - std::log(total));
  return out;
}

// The logprob of every token, by id, from one greedy step over `logits`.
std::vector<double> ProcessedLogprobs(SamplingParams p, const std::vector<float> &logits,
                                      const std::vector<int32_t> &history, size_t prompt_len) {
  p.logprobs = static_cast<int>(logits.size());
  SampledToken t = MakeSampler(p)->Sample(logits.data(), static_cast<int64_t>(logits.size()),
                                          history, prompt_len);
  std::vector<double> by_id(logits.size(), std::nan(""));
  for (const TokenLogprob &lp : t.top)
    by_id[lp.token] = lp.logprob;
  return by_id;
}

void ExpectProcessed(const SamplingParams &p, const std::vector<int32_t> &history,
                     size_t prompt_len, const std::vector<float> &want) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.0f, 3.0f};
  std::vector<double> got = ProcessedLogprobs(p, logits, history, prompt_len);
  std::vector<double> expect = NaiveLogSoftmax(want, 1.0);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], expect[i], 1e-5) << "token " << i;
}

// History: prompt {0, 0}, then generated {1, 3, 3}.
const std::vector<int32_t> kHistory = {0, 0, 1, 3, 3};
constexpr size_t kPromptLen = 2;

TEST(SamplerPenalties, RepetitionDividesPositiveAndMultipliesNegative) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  // 0: 2/2 (once, though seen twice); 1: -1*2; 3: 1/2; 2 and 4 unseen.
  ExpectProcessed(p, kHistory, kPromptLen, {1.0f, -2.0f, 0.5f, 0.5f, 3.0f});
  // Below 1 it rewards the seen tokens instead.
  p.repetition_penalty = 0.5f;
  ExpectProcessed(p, kHistory, kPromptLen, {4.0f, -0.5f, 0.5f, 2.0f, 3.0f});
  // The prompt counts: with no generated tokens, token 0 is still penalized.
  p.repetition_penalty = 2.0f;
  ExpectProcessed(p, {0}, 1, {1.0f, -1.0f, 0.5f, 1.0f, 3.0f});
}

TEST(SamplerPenalties, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams p;
  p.presence_penalty = 0.5f; // 1 and 3 generated; 0 only in the prompt
  ExpectProcessed(p, kHistory, kPromptLen, {2.0f, -1.5f, 0.5f, 0.5f, 3.0f});
  p = {};
  p.frequency_penalty = 0.25f; // 1 once, 3 twice
  ExpectProcessed(p, kHistory, kPromptLen, {2.0f, -1.25f, 0.5f, 0.5f, 3.0f});
  p.frequency_penalty = -1.0f; // negative values encourage repeats
  ExpectProcessed(p, kHistory, kPromptLen, {2.0f, 0.0f, 0.5f, 3.0f, 3.0f});
}

TEST(SamplerPenalties, AllThreeCompose) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  // Repetition first, then 1: -2 - 0.5 - 0.25; 3: 0.5 - 0.5 - 2 * 0.25.
  ExpectProcessed(p, kHistory, kPromptLen, {1.0f, -2.75f, 0.5f, -0.5f, 3.0f});
}

TEST(SamplerPenalties, ChangeTheGreedyChoice) {
  std::vector<float> logits = {3.0f, 2.9f, 0.0f};
  SamplingParams p;
  p.repetition_penalty = 1.2f; // 3 / 1.2 = 2.5 < 2.9
  auto s = MakeSampler(p);
  EXPECT_EQ(s->Sample(logits.data(), 3), 0); // no history, no penalty
  EXPECT_EQ(s->Sample(logits.data(), 3, {0}, 1).token, 1);
  // A tie made by the penalty goes to the lower id: 4 / 2 = 2.
  std::vector<float> tie = {2.0f, 4.0f, 2.0f};
  p.repetition_penalty = 2.0f;
  EXPECT_EQ(MakeSampler(p)->Sample(tie.data(), 3, {1}, 1).token, 0);
  // Out-of-range ids in the history are ignored, not a crash.
  EXPECT_EQ(MakeSampler(p)->Sample(tie.data(), 3, {-5, 7, 1}, 1).token, 0);
}

TEST(SamplerLogprobs, MatchANaiveLogSoftmaxAfterTemperature) {
  std::mt19937 gen(17);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(50);
  for (float &l : logits)
    l = normal(gen);
  // top-k and top-p restrict the draw but not the reported distribution.
  SamplingParams p{0.7f, 5, 0.9f, 3};
  p.logprobs = 20;
  auto s = MakeSampler(p);
  std::vector<double> naive = NaiveLogSoftmax(logits, 0.7);
  for (int trial = 0; trial < 20; ++trial) {
    SampledToken t = s->Sample(logits.data(), 50, {}, 0);
    EXPECT_NEAR(t.logprob, naive[t.token], 1e-5);
    ASSERT_EQ(t.top.size(), 20u);
    std::vector<int32_t> order(50);
    for (int i = 0; i < 50; ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return naive[a] > naive[b]; });
    for (size_t i = 0; i < 20; ++i) {
      EXPECT_EQ(t.top[i].token, order[i]) << "rank " << i;
      EXPECT_NEAR(t.top[i].logprob, naive[order[i]], 1e-5);
      if (i > 0)
        EXPECT_GE(t.top[i - 1].logprob, t.top[i].logprob);
    }
    // The chosen token is among the top 5 (top_k), so it is in the list.
    EXPECT_LT(std::find(order.begin(), order.end(), t.token) - order.begin(), 5);
  }
}

TEST(SamplerLogprobs, SumToOneAndBreakTiesByLowerId) {
  std::vector<float> logits(20);
  for (int i = 0; i < 20; ++i)
    logits[i] = static_cast<float>((i * 7) % 5); // many ties
  SamplingParams p;                              // greedy: logprobs at temperature 1
  p.logprobs = 20;
  SampledToken t = MakeSampler(p)->Sample(logits.data(), 20, {}, 0);
  double mass = 0;
  for (const TokenLogprob &lp : t.top)
    mass += std::exp(lp.logprob);
  EXPECT_NEAR(mass, 1.0, 1e-5);
  EXPECT_EQ(t.token, t.top[0].token); // greedy picks the first listed
  for (size_t i = 1; i < t.top.size(); ++i)
    if (t.top[i].logprob == t.top[i - 1].logprob)
      EXPECT_LT(t.top[i - 1].token, t.top[i].token);
  std::vector<double> naive = NaiveLogSoftmax(logits, 1.0);
  EXPECT_NEAR(t.logprob, naive[t.token], 1e-6);
}

TEST(SamplerLogprobs, FewerThanAskedAndSpecialValues) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {nan, 1.0f, -inf, 1.0f};
  SamplingParams p;
  p.logprobs = 5;
  SampledToken t = MakeSampler(p)->Sample(logits.data(), 4, {}, 0);
  ASSERT_EQ(t.top.size(), 3u); // NaN is not a candidate
  EXPECT_EQ(t.token, 1);
  EXPECT_NEAR(t.logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(t.top[0].token, 1);
  EXPECT_EQ(t.top[1].token, 3);
  EXPECT_EQ(t.top[2].token, 2);
  EXPECT_EQ(t.top[2].logprob, -inf);
  // Suppressed ids get logprob -inf: the distribution is the processed one.
  t = MakeSampler(p)->Sample(logits.data(), 4, {}, 0, {1});
  EXPECT_EQ(t.token, 3);
  EXPECT_NEAR(t.logprob, 0.0, 1e-6);
  // No logprobs asked: none computed.
  t = MakeSampler({})->Sample(logits.data(), 4, {}, 0);
  EXPECT_TRUE(t.top.empty());
}

} // namespace
} // namespace kiln
