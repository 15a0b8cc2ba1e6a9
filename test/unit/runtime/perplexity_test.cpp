// Perplexity over sliding windows on a bigram model: logits[t] = E[ids[t]],
// so each token's log-likelihood depends only on the token before it, and
// the result has a closed form for any windows. What the windows change is
// which tokens are scored (a window's first token never is), their count and
// the number of windows; every case below pins those, and the bad options,
// texts and plans that must be refused.
#include "kiln/perplexity.h"
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kiln {
namespace {

constexpr int kVocab = 7;

// E[a][b], the logit of b after a; some -inf (a token the model rules out)
// to show those are allowed where they are not the target.
std::vector<float> Table() {
  std::vector<float> e(kVocab * kVocab);
  for (int a = 0; a < kVocab; ++a)
    for (int b = 0; b < kVocab; ++b)
      e[a * kVocab + b] = std::sin(1.7f * a + 0.3f * b * b) * 3.0f;
  e[0 * kVocab + 6] = -std::numeric_limits<float>::infinity();
  return e;
}

std::unique_ptr<Plan> Bigram(const std::string &name, const std::vector<float> &table,
                             int64_t context = 0) {
  test::TestPlan p = test::BuildBigramDecoder(table, kVocab);
  p.context_length = context;
  std::string path = test::TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

// 40 ids that never put 6 after 0 (its logit is -inf).
std::vector<int32_t> Text() {
  std::vector<int32_t> ids;
  uint32_t x = 12345;
  while (ids.size() < 40) {
    x = x * 1103515245u + 12345u;
    const int32_t id = static_cast<int32_t>((x >> 16) % kVocab);
    if (!ids.empty() && ids.back() == 0 && id == 6)
      continue;
    ids.push_back(id);
  }
  return ids;
}

// -log softmax(E[a])[b], in double.
double Nll(const std::vector<float> &e, int a, int b) {
  double sum = 0;
  for (int v = 0; v < kVocab; ++v)
    sum += std::exp(static_cast<double>(e[a * kVocab + v]));
  return std::log(sum) - e[a * kVocab + b];
}

struct Case {
  int64_t window, stride, max_tokens;
  int64_t tokens, windows, scored; // worked out by hand for the 40-token text
};

TEST(Perplexity, BigramClosedFormOverWindows) {
  const std::vector<float> e = Table();
  auto plan = Bigram("ppl_bigram.plan", e, 64);
  ASSERT_TRUE(plan);
  const std::vector<int32_t> ids = Text();
  const Case cases[] = {
      // Overlapping windows score every token but the first, once:
      // 1 + ceil((40 - 8) / 4) windows.
      {8, 4, 0, 40, 9, 39},
      // Disjoint windows never score a window's first token.
      {8, 8, 0, 40, 5, 35},
      {2, 1, 0, 40, 39, 39},
      {2, 2, 0, 40, 20, 20},
      // Disjoint windows whose last holds one token: nothing left to score.
      {3, 3, 0, 40, 14, 26},
      // A window longer than the text: one window.
      {64, 32, 0, 40, 1, 39},
      {8, 4, 10, 10, 2, 9},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE("window " + std::to_string(c.window) + " stride " + std::to_string(c.stride) +
                 " max_tokens " + std::to_string(c.max_tokens));
    PerplexityOptions o;
    o.window = c.window;
    o.stride = c.stride;
    o.max_tokens = c.max_tokens;
    int calls = 0;
    PerplexityProgress last;
    auto r = Perplexity(*plan, ids, o, [&](const PerplexityProgress &p) {
      ++calls;
      EXPECT_LE(p.windows_done, p.windows);
      last = p;
    });
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->tokens, c.tokens);
    EXPECT_EQ(r->windows, c.windows);
    EXPECT_EQ(r->scored, c.scored);
    EXPECT_EQ(r->window, c.window);
    EXPECT_EQ(r->stride, c.stride);
    // Scored: every token but the first, less the first of each window when
    // windows do not overlap.
    double want = 0;
    for (int64_t t = 1; t < c.tokens; ++t)
      if (c.stride < c.window || t % c.window != 0)
        want += Nll(e, ids[t - 1], ids[t]);
    EXPECT_NEAR(r->nll, want, 1e-9 * want);
    EXPECT_NEAR(r->nll_per_token, want / c.scored, 1e-9);
    EXPECT_NEAR(r->perplexity, std::exp(want / c.scored), 1e-9 * r->perplexity);
    EXPECT_GE(calls, 1);
    EXPECT_EQ(last.windows_done, c.windows);
    EXPECT_EQ(last.scored, c.scored);
  }
}

TEST(Perplexity, DefaultsFollowTheContextLength) {
  const std::vector<float> e = Table();
  const std::vector<int32_t> ids = Text();
  auto small = Bigram("ppl_bigram_ctx16.plan", e, 16);
  ASSERT_TRUE(small);
  auto r = Perplexity(*small, ids, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->window, 16);
  EXPECT_EQ(r->stride, 8);
  EXPECT_EQ(r->windows, 4); // [0,16) [8,24) [16,32) [24,40)
  auto unknown = Bigram("ppl_bigram_ctx0.plan", e, 0);
  ASSERT_TRUE(unknown);
  r = Perplexity(*unknown, ids, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->window, kDefaultMaxPerplexityWindow);
  EXPECT_EQ(r->windows, 1);
}

TEST(Perplexity, RefusesBadOptionsTextsAndPlans) {
  const std::vector<float> e = Table();
  auto plan = Bigram("ppl_bigram_bad.plan", e, 16);
  ASSERT_TRUE(plan);
  const std::vector<int32_t> ids = Text();
  auto refused = [&](const Plan &p, const std::vector<int32_t> &text, PerplexityOptions o,
                     const std::string &says) {
    auto r = Perplexity(p, text, o);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  PerplexityOptions o;
  o.window = 1;
  refused(*plan, ids, o, "at least 2 tokens");
  o.window = 17;
  refused(*plan, ids, o, "longer than the plan's context length, 16");
  o.window = 8;
  o.stride = 9;
  refused(*plan, ids, o, "stride must be in [1, window = 8]");
  o.stride = -1;
  refused(*plan, ids, o, "stride must be in");
  o.stride = 0;
  o.max_tokens = 1;
  refused(*plan, ids, o, "max_tokens must be at least 2");
  refused(*plan, {3}, {}, "the text is 1 token(s)");
  refused(*plan, {}, {}, "the text is 0 token(s)");
  refused(*plan, {1, 2, kVocab}, {}, "id 7, is outside the model's vocabulary of 7");
  PerplexityOptions cuda;
  cuda.device = "cuda";
  refused(*plan, ids, cuda, "this plan is dense");

  // A plan without a tokenizer cannot read a text.
  auto text = TextPerplexity(*plan, "hello", {});
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("no tokenizer"), std::string::npos);

  // An encoder-like plan: no logits.
  test::Mlp mlp;
  std::string mlp_path = test::TempPath("ppl_mlp.plan");
  ASSERT_EQ(mlp.Build().Write(mlp_path), "");
  auto encoder = LoadPlan(mlp_path);
  ASSERT_TRUE(encoder.ok());
  refused(**encoder, ids, {}, "no logits output");

  // A decoder whose logits hold one row, whatever the tokens.
  test::TestPlan sum = test::BuildSumDecoder(false, 16);
  std::string sum_path = test::TempPath("ppl_sum.plan");
  ASSERT_EQ(sum.Write(sum_path), "");
  auto last_only = LoadPlan(sum_path);
  ASSERT_TRUE(last_only.ok());
  refused(**last_only, {1, 2, 3}, {}, "needs a row for every position");
}

TEST(Perplexity, NonFiniteLogitsAreTheModelsFailure) {
  std::vector<float> e = Table();
  e[3 * kVocab + 1] = std::numeric_limits<float>::quiet_NaN();
  auto plan = Bigram("ppl_bigram_nan.plan", e, 16);
  ASSERT_TRUE(plan);
  auto r = Perplexity(*plan, {2, 3, 4}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("the logits before token 2"), std::string::npos)
      << r.status().message();
  // Rows that are not read stay out of it.
  EXPECT_TRUE(Perplexity(*plan, {2, 4, 5}, {}).ok());
}

} // namespace
} // namespace kiln
