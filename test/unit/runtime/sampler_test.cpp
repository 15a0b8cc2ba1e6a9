// The sampler: greedy is argmax, top-k 1 is greedy, top-k/top-p/min-p
// restrict the draw in that order, suppressed ids and NaN logits are never
// picked, seeds reproduce per request, and bad parameters are refused.
// Penalties and logprobs: sampler_penalties_test.cpp.
#include "kiln/sampler.h"
#include "sampler_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

namespace kiln {
namespace {

TEST(Sampler, GreedyIsArgmax) {
  auto s = MakeSampler({});
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 2.9f};
  EXPECT_EQ(s->Sample(logits.data(), 4), 1);
  // Ties go to the lowest id; NaN never wins.
  std::vector<float> tie = {std::nanf(""), 5.0f, 5.0f, 1.0f};
  EXPECT_EQ(s->Sample(tie.data(), 4), 1);
}

TEST(Sampler, TopK1IsGreedyAtAnyTemperature) {
  std::mt19937 gen(3);
  std::normal_distribution<float> n;
  auto s = MakeSampler({2.0f, 1, 1.0f, 42});
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(50);
    for (float &l : logits)
      l = n(gen);
    int best = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(s->Sample(logits.data(), 50), best);
  }
}

TEST(Sampler, SameSeedSameTokens) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i)
    logits[i] = std::sin(i * 0.37f) * 2;
  auto draw = [&](uint64_t seed) {
    auto s = MakeSampler({1.0f, 0, 0.9f, seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i)
      out.push_back(s->Sample(logits.data(), 100));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, TopKAndTopPRestrictTheDraw) {
  std::vector<float> logits = {4.0f, 3.9f, 3.8f, 0.0f, -1.0f, 1.0f};
  auto k = MakeSampler({1.0f, 3, 1.0f, 1});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i)
    ++seen[k->Sample(logits.data(), 6)];
  EXPECT_EQ(seen.size(), 3u); // only ids 0, 1, 2, and all of them
  EXPECT_TRUE(seen.count(0) && seen.count(1) && seen.count(2));

  // p(0) ~ 0.9: a nucleus of 0.5 holds only id 0.
  std::vector<float> peaked = {5.0f, 2.0f, 1.0f, 0.0f};
  auto p = MakeSampler({1.0f, 0, 0.5f, 1});
  for (int i = 0; i < 500; ++i)
    ASSERT_EQ(p->Sample(peaked.data(), 4), 0);
}

TEST(Sampler, TemperatureFollowsTheSoftmax) {
  // Two tokens with logits differing by ln(3): at T=1, p = 3/4 and 1/4.
  std::vector<float> logits = {std::log(3.0f), 0.0f};
  auto s = MakeSampler({1.0f, 0, 1.0f, 99});
  int first = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    first += s->Sample(logits.data(), 2) == 0;
  EXPECT_NEAR(first / double(n), 0.75, 0.02);
}

TEST(Sampler, InfiniteLogitsAreHandled) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> l = {-inf, inf, 0.0f};
  auto s = MakeSampler({1.0f, 0, 1.0f, 0});
  EXPECT_EQ(s->Sample(l.data(), 3), 1);
  std::vector<float> all_neg = {-inf, -inf};
  EXPECT_EQ(s->Sample(all_neg.data(), 2), 0);
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_EQ(Sampler::Create({-0.5f, 0, 1.0f, 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Sampler::Create({std::nanf(""), 0, 1.0f, 0}).ok());
  EXPECT_FALSE(Sampler::Create({1.0f, -1, 1.0f, 0}).ok());
  EXPECT_FALSE(Sampler::Create({1.0f, 0, 0.0f, 0}).ok());
  EXPECT_FALSE(Sampler::Create({1.0f, 0, 1.5f, 0}).ok());
  EXPECT_TRUE(Sampler::Create({0.0f, 0, 1.0f, 0}).ok());
  EXPECT_NE(Sampler::Create({1.0f, 0, 2.0f, 0}).status().message().find("top_p"),
            std::string::npos);
}

// How often each id is drawn in `n` draws, as a fraction.
std::map<int32_t, double> Frequencies(Sampler &s, const std::vector<float> &logits, int n) {
  std::map<int32_t, double> f;
  for (int i = 0; i < n; ++i)
    f[s.Sample(logits.data(), static_cast<int64_t>(logits.size()))] += 1.0 / n;
  return f;
}

std::vector<float> LogOf(const std::vector<double> &probs) {
  std::vector<float> l;
  for (double p : probs)
    l.push_back(static_cast<float>(std::log(p)));
  return l;
}

TEST(Sampler, MinPCutsRelativeToTheBest) {
  std::vector<float> logits = LogOf({0.5, 0.3, 0.15, 0.05});
  SamplingParams p{1.0f, 0, 1.0f, 5};
  p.min_p = 0.2f; // floor 0.1: id 3 (0.05) goes, the rest renormalize over 0.95
  auto s = MakeSampler(p);
  auto f = Frequencies(*s, logits, 4000);
  EXPECT_EQ(f.count(3), 0u);
  EXPECT_NEAR(f[0], 0.5 / 0.95, 0.03);
  EXPECT_NEAR(f[1], 0.3 / 0.95, 0.03);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.03);

  p.min_p = 0.5f; // floor 0.25: only ids 0 and 1
  f = Frequencies(*MakeSampler(p), logits, 2000);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[0], 0.5 / 0.8, 0.03);

  // After temperature 2 the probabilities go as sqrt(p): ratios to the best
  // 1, 0.77, 0.55, 0.32, so min_p 0.5 keeps three.
  p.temperature = 2.0f;
  f = Frequencies(*MakeSampler(p), logits, 2000);
  EXPECT_EQ(f.size(), 3u);
  EXPECT_EQ(f.count(3), 0u);

  p.min_p = 1.0f; // only the best survives
  p.temperature = 1.0f;
  f = Frequencies(*MakeSampler(p), logits, 200);
  EXPECT_EQ(f.size(), 1u);
  EXPECT_EQ(f.count(0), 1u);
}

TEST(Sampler, TopKCutsBeforeTopP) {
  // p = 0.4, 0.3, 0.2, 0.1. top_p 0.75 alone keeps 0..2 (0.4+0.3 < 0.75).
  // After top_k 3 the nucleus sees 0.44, 0.33, 0.22: two reach 0.75.
  std::vector<float> logits = LogOf({0.4, 0.3, 0.2, 0.1});
  auto f = Frequencies(*MakeSampler({1.0f, 0, 0.75f, 11}), logits, 4000);
  EXPECT_EQ(f.size(), 3u);
  EXPECT_NEAR(f[2], 0.2 / 0.9, 0.03);
  f = Frequencies(*MakeSampler({1.0f, 3, 0.75f, 11}), logits, 4000);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[0], 0.4 / 0.7, 0.03);
  // top_k 2 renormalizes to 0.57, 0.43: the nucleus needs both.
  f = Frequencies(*MakeSampler({1.0f, 2, 0.75f, 11}), logits, 4000);
  EXPECT_EQ(f.size(), 2u);
}

TEST(Sampler, NanLogitsAreNeverChosen) {
  const float nan = std::nanf("");
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {nan, 1.0f, nan, 1.0f, -inf};
  auto f = Frequencies(*MakeSampler({1.0f, 0, 1.0f, 3}), logits, 2000);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[1], 0.5, 0.05);
  EXPECT_NEAR(f[3], 0.5, 0.05);
  EXPECT_EQ(MakeSampler({})->Sample(logits.data(), 5), 1); // greedy: first of the tied maxima
  std::vector<float> all_nan = {nan, nan};
  EXPECT_EQ(MakeSampler({})->Sample(all_nan.data(), 2), 0);
  EXPECT_EQ(MakeSampler({1.0f, 0, 1.0f, 0})->Sample(all_nan.data(), 2), 0);
}

TEST(Sampler, SuppressedIdsAreNeverChosen) {
  std::vector<float> logits = {5.0f, 1.0f, 1.0f, -2.0f};
  std::vector<int32_t> none, eos = {0, 99}; // 99 is out of range: ignored
  auto greedy = MakeSampler({});
  EXPECT_EQ(greedy->Sample(logits.data(), 4, none, 0, eos).token, 1); // tie: lower id
  auto s = MakeSampler({1.0f, 0, 1.0f, 8});
  for (int i = 0; i < 500; ++i)
    ASSERT_NE(s->Sample(logits.data(), 4, none, 0, eos).token, 0);
}

TEST(Sampler, EachRequestHasItsOwnRandomStream) {
  // Steps with different logits and a growing history, as in a real run.
  auto run = [](Sampler &s, std::vector<int32_t> &history, int step) {
    std::vector<float> logits(64);
    for (int i = 0; i < 64; ++i)
      logits[i] = std::sin(i * 0.37f + step) * 2;
    int32_t t = s.Sample(logits.data(), 64, history, 2).token;
    history.push_back(t);
    return t;
  };
  SamplingParams a{0.9f, 20, 0.95f, 1234}, b{1.3f, 0, 1.0f, 99};
  a.repetition_penalty = b.repetition_penalty = 1.2f;
  a.min_p = 0.05f;
  auto alone = [&](const SamplingParams &p) {
    auto s = MakeSampler(p);
    std::vector<int32_t> history = {1, 2}, out;
    for (int step = 0; step < 40; ++step)
      out.push_back(run(*s, history, step));
    return out;
  };
  std::vector<int32_t> want_a = alone(a), want_b = alone(b);
  EXPECT_EQ(alone(a), want_a);
  EXPECT_NE(want_a, want_b);
  // Interleaved, as a batch would step them, each gives what it gave alone.
  auto sa = MakeSampler(a), sb = MakeSampler(b);
  std::vector<int32_t> ha = {1, 2}, hb = {1, 2}, got_a, got_b;
  for (int step = 0; step < 40; ++step) {
    got_b.push_back(run(*sb, hb, step));
    got_a.push_back(run(*sa, ha, step));
  }
  EXPECT_EQ(got_a, want_a);
  EXPECT_EQ(got_b, want_b);
  // However many draws its batch neighbour makes.
  auto sa2 = MakeSampler(a), busy = MakeSampler(b);
  std::vector<int32_t> ha2 = {1, 2}, hbusy = {1, 2}, got_a2;
  for (int step = 0; step < 40; ++step) {
    for (int extra = 0; extra < step % 4; ++extra)
      run(*busy, hbusy, step + extra);
    got_a2.push_back(run(*sa2, ha2, step));
  }
  EXPECT_EQ(got_a2, want_a);
}

TEST(Sampler, LogitBiasAddsToTheLogitAfterPenalties) {
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 2.9f};
  SamplingParams p;
  p.logit_bias = {{2, 4.5f}}; // -1 + 4.5 = 3.5 beats 3.0
  EXPECT_EQ(MakeSampler(p)->Sample(logits.data(), 4), 2);
  p.logit_bias = {{2, 3.9f}}; // the near miss: 2.9 stays below 3.0
  EXPECT_EQ(MakeSampler(p)->Sample(logits.data(), 4), 1);
  p.logit_bias = {{1, -100.0f}, {9, 100.0f}}; // id 9 is past the vocabulary: ignored
  EXPECT_EQ(MakeSampler(p)->Sample(logits.data(), 4), 3);
  // After the repetition penalty: 3.0 / 2 = 1.5, + 1 = 2.5 < 2.9.
  p.logit_bias = {{1, 1.0f}};
  p.repetition_penalty = 2.0f;
  EXPECT_EQ(MakeSampler(p)->Sample(logits.data(), 4, {1}, 1).token, 3);
  for (auto bad : {std::pair<int32_t, float>{-1, 1.0f}, {0, 100.5f}, {0, std::nanf("")}}) {
    SamplingParams q;
    q.logit_bias = {bad};
    EXPECT_FALSE(Sampler::Create(q).ok());
  }
}

} // namespace
} // namespace kiln
