// The sampler: greedy is argmax, top-k 1 is greedy, top-k/top-p restrict
// the draw, seeds reproduce, and bad parameters are refused.
#include "kiln/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

namespace kiln {
namespace {

std::unique_ptr<Sampler> Make(SamplingParams p) {
  auto s = Sampler::Create(p);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(Sampler, GreedyIsArgmax) {
  auto s = Make({});
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 2.9f};
  EXPECT_EQ(s->Sample(logits.data(), 4), 1);
  // Ties go to the lowest id; NaN never wins.
  std::vector<float> tie = {std::nanf(""), 5.0f, 5.0f, 1.0f};
  EXPECT_EQ(s->Sample(tie.data(), 4), 1);
}

TEST(Sampler, TopK1IsGreedyAtAnyTemperature) {
  std::mt19937 gen(3);
  std::normal_distribution<float> n;
  auto s = Make({2.0f, 1, 1.0f, 42});
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
    auto s = Make({1.0f, 0, 0.9f, seed});
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
  auto k = Make({1.0f, 3, 1.0f, 1});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i)
    ++seen[k->Sample(logits.data(), 6)];
  EXPECT_EQ(seen.size(), 3u); // only ids 0, 1, 2, and all of them
  EXPECT_TRUE(seen.count(0) && seen.count(1) && seen.count(2));

  // p(0) ~ 0.9: a nucleus of 0.5 holds only id 0.
  std::vector<float> peaked = {5.0f, 2.0f, 1.0f, 0.0f};
  auto p = Make({1.0f, 0, 0.5f, 1});
  for (int i = 0; i < 500; ++i)
    ASSERT_EQ(p->Sample(peaked.data(), 4), 0);
}

TEST(Sampler, TemperatureFollowsTheSoftmax) {
  // Two tokens with logits differing by ln(3): at T=1, p = 3/4 and 1/4.
  std::vector<float> logits = {std::log(3.0f), 0.0f};
  auto s = Make({1.0f, 0, 1.0f, 99});
  int first = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    first += s->Sample(logits.data(), 2) == 0;
  EXPECT_NEAR(first / double(n), 0.75, 0.02);
}

TEST(Sampler, InfiniteLogitsAreHandled) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> l = {-inf, inf, 0.0f};
  auto s = Make({1.0f, 0, 1.0f, 0});
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

} // namespace
} // namespace kiln
