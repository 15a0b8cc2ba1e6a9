// Request parameters: every validation message, the prompt-length check,
// per-completion seeds, and StopChecker's token-level end conditions
// (min_new_tokens masking, EOS, stop ids, ignore_eos, length). Its text side
// is in stop_matcher_test.cpp.
#include "kiln/request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

namespace kiln {
namespace {

// The message ValidateRequestParams gives after `change` ("" when valid).
std::string Message(const std::function<void(RequestParams &)> &change) {
  RequestParams p;
  change(p);
  Status s = ValidateRequestParams(p);
  if (!s.ok())
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return s.message();
}

TEST(RequestParams, EveryValidationMessage) {
  using P = RequestParams;
  EXPECT_EQ(Message([](P &p) { p.sampling.temperature = -0.5f; }),
            "temperature must be a finite number >= 0, got -0.5");
  EXPECT_EQ(Message([](P &p) { p.sampling.temperature = INFINITY; }),
            "temperature must be a finite number >= 0, got inf");
  EXPECT_EQ(Message([](P &p) { p.sampling.temperature = NAN; }).substr(0, 11), "temperature");
  EXPECT_EQ(Message([](P &p) { p.sampling.top_k = -1; }), "top_k must be >= 0, got -1");
  EXPECT_EQ(Message([](P &p) { p.sampling.top_p = 0; }), "top_p must be in (0, 1], got 0");
  EXPECT_EQ(Message([](P &p) { p.sampling.top_p = 1.5f; }), "top_p must be in (0, 1], got 1.5");
  EXPECT_EQ(Message([](P &p) { p.sampling.min_p = -0.1f; }), "min_p must be in [0, 1], got -0.1");
  EXPECT_EQ(Message([](P &p) { p.sampling.min_p = 1.5f; }), "min_p must be in [0, 1], got 1.5");
  EXPECT_EQ(Message([](P &p) { p.sampling.min_p = NAN; }), "min_p must be in [0, 1], got nan");
  EXPECT_EQ(Message([](P &p) { p.sampling.repetition_penalty = 0; }),
            "repetition_penalty must be a finite number > 0, got 0");
  EXPECT_EQ(Message([](P &p) { p.sampling.repetition_penalty = -1.2f; }),
            "repetition_penalty must be a finite number > 0, got -1.2");
  EXPECT_EQ(Message([](P &p) { p.sampling.presence_penalty = 2.5f; }),
            "presence_penalty must be in [-2, 2], got 2.5");
  EXPECT_EQ(Message([](P &p) { p.sampling.frequency_penalty = -3; }),
            "frequency_penalty must be in [-2, 2], got -3");
  EXPECT_EQ(Message([](P &p) { p.sampling.logprobs = 21; }), "logprobs must be in [0, 20], got 21");
  EXPECT_EQ(Message([](P &p) { p.sampling.logprobs = -1; }), "logprobs must be in [0, 20], got -1");
  EXPECT_EQ(Message([](P &p) { p.max_new_tokens = -1; }), "max_new_tokens must be >= 0, got -1");
  EXPECT_EQ(Message([](P &p) { p.min_new_tokens = -2; }), "min_new_tokens must be >= 0, got -2");
  EXPECT_EQ(Message([](P &p) {
              p.max_new_tokens = 4;
              p.min_new_tokens = 5;
            }),
            "min_new_tokens (5) must not exceed max_new_tokens (4)");
  EXPECT_EQ(Message([](P &p) { p.stop = {"\n", ""}; }), "stop string 1 is empty");
  EXPECT_EQ(Message([](P &p) {
              p.stop_token_ids = {2, -3};
            }),
            "stop_token_ids[1] must be >= 0, got -3");
  EXPECT_EQ(Message([](P &p) { p.n = 0; }), "n must be >= 1, got 0");
}

TEST(RequestParams, BoundariesAreValid) {
  using P = RequestParams;
  EXPECT_EQ(Message([](P &) {}), "");
  EXPECT_EQ(Message([](P &p) {
              p.sampling.temperature = 0;
              p.sampling.top_p = 1;
              p.sampling.min_p = 1;
              p.sampling.presence_penalty = -2;
              p.sampling.frequency_penalty = 2;
              p.sampling.logprobs = 20;
              p.max_new_tokens = 3;
              p.min_new_tokens = 3;
              p.n = 4;
            }),
            "");
  EXPECT_EQ(Message([](P &p) { p.max_new_tokens = 0; }), "");
  // The sampler refuses the same values on its own.
  SamplingParams s;
  s.min_p = 2;
  EXPECT_EQ(Sampler::Create(s).status().message(), "min_p must be in [0, 1], got 2");
}

TEST(RequestParams, PromptLengthAgainstTheContext) {
  Status s = CheckPromptLength(9, 8);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "prompt of 9 tokens is longer than the context length of 8");
  EXPECT_TRUE(CheckPromptLength(8, 8).ok());
  EXPECT_TRUE(CheckPromptLength(100000, 0).ok()); // unknown context length
}

TEST(RequestParams, CompletionSeedsAreDistinctAndStable) {
  EXPECT_EQ(CompletionSeed(42, 0), 42u);
  std::set<uint64_t> seen;
  for (uint64_t seed : {0ull, 1ull, 42ull})
    for (int i = 0; i < 100; ++i)
      seen.insert(CompletionSeed(seed, i));
  EXPECT_EQ(seen.size(), 300u);
  EXPECT_EQ(CompletionSeed(7, 3), CompletionSeed(7, 3));
  RequestParams p;
  p.sampling.seed = 7;
  p.sampling.top_k = 3;
  SamplingParams s = CompletionSampling(p, 2);
  EXPECT_EQ(s.seed, CompletionSeed(7, 2));
  EXPECT_EQ(s.top_k, 3);
  // Different completions of one request draw different tokens.
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i)
    logits[i] = std::cos(i * 0.7f);
  p.sampling = {1.0f, 0, 1.0f, 7};
  auto draws = [&](int index) {
    auto sampler = Sampler::Create(CompletionSampling(p, index));
    std::vector<int32_t> out;
    for (int i = 0; i < 32; ++i)
      out.push_back((*sampler)->Sample(logits.data(), 100));
    return out;
  };
  EXPECT_NE(draws(0), draws(1));
  EXPECT_EQ(draws(1), draws(1));
}

std::unique_ptr<StopChecker> Checker(const RequestParams &p, std::vector<int64_t> eos = {7}) {
  auto c = StopChecker::Create(p, eos, nullptr);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(StopChecker, MinNewTokensSuppressesEosAndStopIds) {
  RequestParams p;
  p.min_new_tokens = 2;
  p.stop_token_ids = {9};
  auto c = Checker(p);
  EXPECT_EQ(c->Suppressed(), (std::vector<int32_t>{7, 9}));
  c->Append(3);
  EXPECT_EQ(c->Suppressed(), (std::vector<int32_t>{7, 9}));
  c->Append(4);
  EXPECT_TRUE(c->Suppressed().empty()); // two tokens: EOS allowed from the third
  EXPECT_FALSE(c->finished());
  c->Append(7);
  EXPECT_TRUE(c->finished());
  EXPECT_EQ(c->finish_reason(), FinishReason::kEos);
  EXPECT_EQ(c->generated(), 3);
  EXPECT_EQ(c->Append(8), ""); // nothing after the end
  EXPECT_EQ(c->generated(), 3);

  // Through a sampler: greedy would pick EOS (id 7) at once, but cannot
  // until min_new_tokens tokens exist.
  std::vector<float> logits(10, 0.0f);
  logits[7] = 5.0f;
  auto sampler = Sampler::Create({});
  auto masked = Checker(p);
  std::vector<int32_t> history = {1}, got;
  while (!masked->finished() && got.size() < 10) {
    int32_t t = (*sampler)->Sample(logits.data(), 10, history, 1, masked->Suppressed()).token;
    history.push_back(t);
    got.push_back(t);
    masked->Append(t);
  }
  EXPECT_EQ(got, (std::vector<int32_t>{0, 0, 7}));
  EXPECT_EQ(masked->finish_reason(), FinishReason::kEos);
}

TEST(StopChecker, StopIdsIgnoreEosAndLength) {
  RequestParams p;
  p.stop_token_ids = {9};
  p.max_new_tokens = 3;
  auto c = Checker(p);
  c->Append(9);
  EXPECT_EQ(c->finish_reason(), FinishReason::kStopToken);
  EXPECT_STREQ(FinishReasonName(c->finish_reason()), "stop_token");

  p.ignore_eos = true;
  c = Checker(p);
  EXPECT_TRUE(c->Suppressed().empty());
  c->Append(7);
  EXPECT_FALSE(c->finished()); // EOS ignored
  c->Append(1);
  c->Append(2);
  EXPECT_TRUE(c->finished());
  EXPECT_EQ(c->finish_reason(), FinishReason::kLength);

  // Stop strings need text.
  p.stop = {"x"};
  auto no_text = StopChecker::Create(p, {}, nullptr);
  EXPECT_EQ(no_text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_text.status().message().find("stop strings need a tokenizer"), std::string::npos);
  p.stop = {};
  p.n = 0;
  EXPECT_EQ(StopChecker::Create(p, {}, nullptr).status().message(), "n must be >= 1, got 0");
}

// The detailed names (kiln run's finish line, the JSONL "detail") and the
// coarse API reason ("finish_reason") of every reason, as the e2e tests read them.
TEST(FinishReason, DetailedAndApiNames) {
  struct Want {
    FinishReason reason;
    const char *name, *api;
  };
  const Want wants[] = {{FinishReason::kNone, "none", "none"},
                        {FinishReason::kEos, "eos", "stop"},
                        {FinishReason::kStopToken, "stop_token", "stop"},
                        {FinishReason::kStopString, "stop_string", "stop"},
                        {FinishReason::kLength, "length", "length"},
                        {FinishReason::kContext, "context", "length"},
                        {FinishReason::kCancelled, "cancelled", "cancelled"}};
  for (const Want &w : wants) {
    EXPECT_STREQ(FinishReasonName(w.reason), w.name);
    EXPECT_STREQ(ApiFinishReason(w.reason), w.api) << w.name;
  }
  EXPECT_FALSE(Checker(RequestParams())->finished());
  EXPECT_EQ(Checker(RequestParams())->finish_reason(), FinishReason::kNone);
}

} // namespace
} // namespace kiln
