// Generation over a toy decoder whose next token is the sum of everything it
// has seen: it only comes out right when the runtime feeds each step's
// present back as the next past, and sets mask and positions correctly.
// Then the request's end conditions and text through a tokenizer whose token
// i reads "<i>".
#include "kiln/generate.h"
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

constexpr int kVocab = 512;

std::unique_ptr<Plan> LoadDecoder(bool with_kv, const std::string &name, int64_t context = 0,
                                  std::vector<int64_t> eos = {}) {
  test::TestPlan p = test::BuildSumDecoder(with_kv, kVocab);
  p.context_length = context;
  p.eos = std::move(eos);
  std::string path = test::TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

GenerateOptions Greedy(int n) {
  GenerateOptions o;
  o.max_new_tokens = n;
  return o;
}

TEST(Generate, CarriesKvBetweenSteps) {
  auto plan = LoadDecoder(true, "gen_kv.plan");
  ASSERT_TRUE(plan);
  auto session = DecoderSession::Create(*plan);
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<int32_t> prompt = {1, 2};
  int steps = 0;
  (*session)->set_logits_hook([&](const float *, int64_t vocab) {
    EXPECT_EQ(vocab, kVocab);
    ++steps;
  });
  std::vector<int32_t> streamed;
  auto r = (*session)->Generate(prompt, Greedy(6), [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int32_t> want = test::SumDecoderReference(prompt, true, kVocab, 6);
  EXPECT_EQ(r->tokens, want);
  EXPECT_EQ(want[0], 6); // 1+2 tokens, +2 mask, +0+1 positions
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(r->finish, FinishReason::kLength);
  EXPECT_EQ(r->decode_steps, 5);

  // A second generation starts from an empty past again.
  auto again = (*session)->Generate(prompt, Greedy(6));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens, want);
}

TEST(Generate, WithoutKvRerunsTheWholeSequence) {
  auto plan = LoadDecoder(false, "gen_nokv.plan");
  ASSERT_TRUE(plan);
  auto session = DecoderSession::Create(*plan);
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::vector<int32_t> prompt = {3, 1, 4};
  auto r = (*session)->Generate(prompt, Greedy(5));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tokens, test::SumDecoderReference(prompt, false, kVocab, 5));
  // The two modes differ in their position sums, so this tells them apart.
  EXPECT_NE(r->tokens, test::SumDecoderReference(prompt, true, kVocab, 5));
}

TEST(Generate, LogitsHookSeesEveryStep) {
  auto plan = LoadDecoder(true, "gen_hook.plan");
  ASSERT_TRUE(plan);
  auto session = DecoderSession::Create(*plan);
  std::vector<std::vector<float>> seen;
  (*session)->set_logits_hook([&](const float *l, int64_t v) { seen.emplace_back(l, l + v); });
  auto r = (*session)->Generate({1, 2}, Greedy(3));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    int32_t tok = r->tokens[i];
    EXPECT_EQ(seen[i][tok], 0.0f); // -|t - v| peaks at the chosen token
    EXPECT_EQ(seen[i][tok + 1], -1.0f);
  }
}

TEST(Generate, StopsAtEosAndContext) {
  std::vector<int32_t> prompt = {1, 2};
  auto want = test::SumDecoderReference(prompt, true, kVocab, 4);
  auto plan = LoadDecoder(true, "gen_eos.plan", 0, {want[1]});
  ASSERT_TRUE(plan);
  auto session = DecoderSession::Create(*plan);
  auto r = (*session)->Generate(prompt, GenerateOptions::FromPlan(*plan));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::kEos);
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{want[0], want[1]}));

  auto ctx_plan = LoadDecoder(true, "gen_ctx.plan", 5);
  auto ctx = DecoderSession::Create(*ctx_plan);
  r = (*ctx)->Generate(prompt, Greedy(100));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::kContext);
  EXPECT_EQ(r->tokens.size(), 3u); // 2 + 3 fills a context of 5

  r = (*ctx)->Generate({1, 2, 3, 4, 5, 6}, Greedy(1));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("context length of 5"), std::string::npos);
}

TEST(Generate, CallbackCanStop) {
  auto plan = LoadDecoder(true, "gen_cb.plan");
  auto session = DecoderSession::Create(*plan);
  auto r = (*session)->Generate({1}, Greedy(10), [](int32_t) { return false; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::kCancelled);
  EXPECT_EQ(r->tokens.size(), 1u);
}

TEST(Generate, RejectsBadRequests) {
  auto plan = LoadDecoder(true, "gen_bad.plan");
  auto session = DecoderSession::Create(*plan);
  EXPECT_EQ((*session)->Generate({}, Greedy(1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE((*session)->Generate({1}, Greedy(-1)).ok());
  GenerateOptions o = Greedy(1);
  o.sampling.temperature = -1;
  EXPECT_EQ((*session)->Generate({1}, o).status().code(), StatusCode::kInvalidArgument);
  o = Greedy(1);
  o.sampling.top_p = 0;
  EXPECT_FALSE((*session)->Generate({1}, o).ok());
  // Zero new tokens is a valid, empty request.
  auto r = (*session)->Generate({1}, Greedy(0));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->tokens.empty());
}

TEST(Generate, PlanWithoutDecoderIsRefused) {
  test::Mlp m;
  std::string path = test::TempPath("gen_mlp.plan");
  ASSERT_EQ(m.Build().Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok());
  auto s = DecoderSession::Create(**plan);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("no decoder interface"), std::string::npos);
}

std::unique_ptr<Tokenizer> AngleTokenizer() {
  auto t = Tokenizer::FromJson(test::AngleTokenizerJson(kVocab));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(*t) : nullptr;
}

std::string AngleText(const std::vector<int32_t> &ids) {
  std::string s;
  for (int32_t id : ids)
    s += "<" + std::to_string(id) + ">";
  return s;
}

TEST(Generate, StopStringsCutTheTextAcrossTokens) {
  auto plan = LoadDecoder(true, "gen_stop.plan");
  auto session = DecoderSession::Create(*plan);
  auto tok = AngleTokenizer();
  ASSERT_TRUE(tok);
  std::vector<int32_t> prompt = {1, 2};
  auto want = test::SumDecoderReference(prompt, true, kVocab, 8); // 6, 14, 30, 62, ...
  GenerateOptions o = Greedy(8);
  o.stop = {"4><3"}; // spans the 2nd and 3rd tokens
  // Without a tokenizer, stop strings are refused.
  EXPECT_EQ((*session)->Generate(prompt, o).status().code(), StatusCode::kInvalidArgument);
  (*session)->set_tokenizer(tok.get());
  std::string streamed;
  auto r = (*session)->GenerateStreaming(prompt, o, [&](const GenerateStep &step) {
    EXPECT_EQ(step.text.find('4'), std::string::npos) << "a partial stop string leaked";
    streamed += step.text;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->finish, FinishReason::kStopString);
  EXPECT_EQ(r->tokens, std::vector<int32_t>(want.begin(), want.begin() + 3));
  EXPECT_EQ(r->text, "<" + std::to_string(want[0]) + "><1");
  EXPECT_EQ(streamed, r->text);

  // No stop: the text is every token's, streamed in full by the last step.
  o.stop = {"<9999>"};
  streamed.clear();
  r = (*session)->GenerateStreaming(prompt, o, [&](const GenerateStep &step) {
    streamed += step.text;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::kLength);
  EXPECT_EQ(r->text, AngleText(want));
  EXPECT_EQ(streamed, r->text);
}

TEST(Generate, MinNewTokensAndStopIds) {
  std::vector<int32_t> prompt = {1, 2};
  auto want = test::SumDecoderReference(prompt, true, kVocab, 4);
  auto plan = LoadDecoder(true, "gen_min.plan", 0, {want[0]});
  auto session = DecoderSession::Create(*plan);
  GenerateOptions o = GenerateOptions::FromPlan(*plan);
  auto r = (*session)->Generate(prompt, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{want[0]})); // EOS first
  // EOS is masked for the first token: logits -|t - v| then tie between
  // t - 1 and t + 1, and the lower id wins.
  o.min_new_tokens = 1;
  o.max_new_tokens = 3;
  r = (*session)->Generate(prompt, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->tokens.size(), 3u);
  EXPECT_EQ(r->tokens[0], want[0] - 1);
  EXPECT_EQ(r->finish, FinishReason::kLength);
  // A stop id ends the run like EOS.
  o = GenerateOptions::FromPlan(*plan);
  o.ignore_eos = true;
  o.stop_token_ids = {want[2]};
  r = (*session)->Generate(prompt, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens, std::vector<int32_t>(want.begin(), want.begin() + 3));
  EXPECT_EQ(r->finish, FinishReason::kStopToken);
}

TEST(Generate, LogprobsPerTokenAndOneCompletionPerCall) {
  auto plan = LoadDecoder(true, "gen_lp.plan");
  auto session = DecoderSession::Create(*plan);
  GenerateOptions o = Greedy(3);
  o.sampling.logprobs = 2;
  auto r = (*session)->Generate({1, 2}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->logprobs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r->logprobs[i].token, r->tokens[i]);
    ASSERT_EQ(r->logprobs[i].top.size(), 2u);
    EXPECT_EQ(r->logprobs[i].top[0].token, r->tokens[i]);
    // Logits -|t - v|: the runner-up is t - 1, one nat below.
    EXPECT_NEAR(r->logprobs[i].top[0].logprob - r->logprobs[i].top[1].logprob, 1.0, 1e-5);
  }
  o.n = 2;
  auto many = (*session)->Generate({1, 2}, o);
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("CompletionSampling"), std::string::npos);
  o.n = 1;
  o.min_new_tokens = 5; // more than max_new_tokens
  EXPECT_EQ((*session)->Generate({1, 2}, o).status().message(),
            "min_new_tokens (5) must not exceed max_new_tokens (3)");
}

} // namespace
} // namespace kiln
