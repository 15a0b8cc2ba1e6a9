// The pipeline's batching must not change what a request generates. Each
// test runs real plans (built by the test harness from the fixtures; paths in
// KILN_TEST_PLANS as "name=path,name=path") and compares a request's output
// inside a batch with the same request alone: concurrency, chunked prompts,
// prefix-cache hits, forced preemption, seeded sampling, cancellation. Every
// test runs on the cpu and on the device under test (test/support/
// test_device.h: the "gpu" instances skip where no device is visible).
#include "engine/plan_runner.h"
#include "kiln/pipeline.h"
#include "test/support/test_device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

namespace kiln {
namespace {

struct NamedPlan {
  std::string name, path;
};

std::vector<NamedPlan> Plans() {
  std::vector<NamedPlan> out;
  const char *env = std::getenv("KILN_TEST_PLANS");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string::npos)
      out.push_back({item.substr(0, eq), item.substr(eq + 1)});
  }
  return out;
}

// The plan of fixture `name`, from KILN_TEST_PLANS. The names are fixed at
// compile time (test discovery runs without the environment); a missing
// path fails the test.
std::unique_ptr<Plan> Load(const std::string &name) {
  for (const NamedPlan &p : Plans())
    if (p.name == name) {
      auto plan = LoadPlan(p.path);
      EXPECT_TRUE(plan.ok()) << name << ": " << plan.status().message();
      return plan.ok() ? std::move(*plan) : nullptr;
    }
  ADD_FAILURE() << "KILN_TEST_PLANS has no plan named " << name;
  return nullptr;
}

std::unique_ptr<Pipeline> Make(const Plan &plan, const PipelineOptions &o) {
  auto p = Pipeline::Create(plan, o);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(*p) : nullptr;
}

int64_t Vocab(const Plan &plan) { return plan.tensors()[plan.FindTensor("logits")].dims[2].value; }

// Greedy, EOS ignored, so every request runs its full length.
Request Greedy(std::vector<int32_t> ids, int new_tokens) {
  Request r;
  r.prompt_ids = std::move(ids);
  r.params.max_new_tokens = new_tokens;
  r.params.ignore_eos = true;
  return r;
}

std::vector<int32_t> RandomIds(std::mt19937 &rng, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i)
    ids.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
  return ids;
}

std::vector<int32_t> Alone(const Plan &plan, const Request &r, PipelineOptions o) {
  o.prefix_caching = false;
  auto pipe = Make(plan, o);
  if (!pipe)
    return {};
  auto out = pipe->Generate({r});
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() && out->size() == 1 ? (*out)[0].tokens : std::vector<int32_t>{};
}

// Parametrized by role (the backend) and plan.
class PipelineTest : public ::testing::TestWithParam<test::RoleAndPlan> {
protected:
  void SetUp() override { KILN_SKIP_UNLESS_ROLE_RUNS(GetParam().role); }
  const std::string &PlanName() const { return GetParam().plan; }
  // Default options on this test's backend.
  PipelineOptions Options() const {
    PipelineOptions o;
    o.backend = test::BackendOfRole(GetParam().role);
    return o;
  }
};

TEST_P(PipelineTest, PlanIsBatched) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  auto pipe = Make(*plan, Options());
  ASSERT_TRUE(pipe);
  EXPECT_TRUE(pipe->batched()) << PlanName() << " was built without the ragged interface";
}

// 32 requests of mixed prompt and output lengths, all at once, give each
// request's greedy tokens alone.
TEST_P(PipelineTest, ThirtyTwoConcurrentEqualAlone) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(7);
  std::vector<Request> requests;
  for (int i = 0; i < 32; ++i)
    requests.push_back(Greedy(RandomIds(rng, 1 + static_cast<int64_t>(rng() % 48), Vocab(*plan)),
                              4 + static_cast<int>(rng() % 13)));
  PipelineOptions o = Options();
  o.max_seqs = 32;
  o.max_batched_tokens = 256; // several prompts per step, some split
  o.prefix_caching = false;
  auto pipe = Make(*plan, o);
  ASSERT_TRUE(pipe);
  auto batch = pipe->Generate(requests);
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  ASSERT_EQ(batch->size(), requests.size());
  EXPECT_LT(pipe->stats().steps, 200) << "the requests did not share steps";
  for (size_t i = 0; i < requests.size(); ++i) {
    const Response &r = (*batch)[i];
    EXPECT_EQ(r.generated_length, requests[i].params.max_new_tokens);
    EXPECT_EQ(r.prompt_length, static_cast<int>(requests[i].prompt_ids.size()));
    EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    EXPECT_EQ(r.tokens, Alone(*plan, requests[i], Options())) << "request " << i;
  }
}

// A prompt longer than the token budget is computed in chunks; the logits of
// its first sampled token match the unchunked run.
TEST_P(PipelineTest, ChunkedPromptEqualsUnchunked) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(11);
  Request r = Greedy(RandomIds(rng, 100, Vocab(*plan)), 6);
  auto run = [&](int64_t budget, std::vector<std::vector<float>> *logits) {
    PipelineOptions o = Options();
    o.max_batched_tokens = budget;
    o.max_seqs = 1;
    auto pipe = Make(*plan, o);
    if (!pipe)
      return std::vector<int32_t>{};
    pipe->set_logits_hook(
        [&](int64_t, int, const float *l, int64_t v) { logits->emplace_back(l, l + v); });
    auto out = pipe->Generate({r});
    EXPECT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(pipe->stats().steps, budget >= 100 ? 6 : (100 + budget - 1) / budget + 5);
    return out.ok() ? (*out)[0].tokens : std::vector<int32_t>{};
  };
  std::vector<std::vector<float>> whole, chunked;
  auto a = run(512, &whole);
  auto b = run(16, &chunked);
  EXPECT_EQ(a, b);
  ASSERT_EQ(whole.size(), chunked.size());
  for (size_t s = 0; s < whole.size(); ++s) {
    float max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < whole[s].size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(whole[s][i] - chunked[s][i]));
      max_ref = std::max(max_ref, std::fabs(whole[s][i]));
    }
    EXPECT_LE(max_diff, 1e-4f * max_ref) << "step " << s;
  }
}

// Requests that share a prompt prefix reuse its cached KV blocks and still
// generate what they generate with nothing cached.
TEST_P(PipelineTest, PrefixHitsEqualMisses) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(13);
  std::vector<int32_t> shared = RandomIds(rng, 40, Vocab(*plan));
  std::vector<Request> requests;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> ids = shared;
    auto tail = RandomIds(rng, 3 + i, Vocab(*plan));
    ids.insert(ids.end(), tail.begin(), tail.end());
    requests.push_back(Greedy(ids, 8));
  }
  requests.push_back(requests[0]); // an exact repeat
  PipelineOptions o = Options();
  o.block_size = 16;
  o.max_seqs = 1; // one at a time, so later ones find the first one's blocks
  auto pipe = Make(*plan, o);
  ASSERT_TRUE(pipe);
  auto out = pipe->Generate(requests);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].prefix_hit_tokens, 0);
  for (size_t i = 1; i < requests.size(); ++i) {
    EXPECT_GE((*out)[i].prefix_hit_tokens, 32) << "request " << i << " missed the cache";
    EXPECT_EQ((*out)[i].tokens, Alone(*plan, requests[i], Options())) << "request " << i;
  }
}

// A pool far smaller than the requests need forces preemption by
// recompute; every request still completes with its greedy output alone.
TEST_P(PipelineTest, ForcedPreemptionCompletesEveryRequest) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  auto per_block = engine::PlanModelRunner::BytesPerBlock(*plan, 4);
  ASSERT_TRUE(per_block.ok()) << per_block.status().message();
  std::mt19937 rng(17);
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i)
    requests.push_back(Greedy(RandomIds(rng, 10 + i, Vocab(*plan)), 12));
  PipelineOptions o = Options();
  o.block_size = 4;
  o.kv_cache_bytes = *per_block * 12; // 48 tokens; each request needs up to 29
  o.max_seqs = 8;
  o.prefix_caching = false;
  auto pipe = Make(*plan, o);
  ASSERT_TRUE(pipe);
  ASSERT_EQ(pipe->stats().kv_blocks, 12);
  auto out = pipe->Generate(requests);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_GT(pipe->stats().preemptions, 0) << "the pool was not short";
  int preempted = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    preempted += (*out)[i].num_preemptions > 0;
    EXPECT_EQ((*out)[i].generated_length, 12);
    EXPECT_EQ((*out)[i].tokens, Alone(*plan, requests[i], Options())) << "request " << i;
  }
  EXPECT_GT(preempted, 0);
}

// A seeded sampled request draws the same tokens alone and in a batch of
// other sampled requests.
TEST_P(PipelineTest, SeededSamplingAloneEqualsInBatch) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(19);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    Request r = Greedy(RandomIds(rng, 5 + 3 * i, Vocab(*plan)), 12);
    r.params.sampling.temperature = 0.9f;
    r.params.sampling.top_p = 0.95f;
    r.params.sampling.top_k = 50;
    r.params.sampling.seed = 100 + i;
    requests.push_back(r);
  }
  PipelineOptions o = Options();
  o.max_seqs = 8;
  auto pipe = Make(*plan, o);
  ASSERT_TRUE(pipe);
  auto out = pipe->Generate(requests);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ((*out)[i].tokens, Alone(*plan, requests[i], Options())) << "request " << i;
  // A different seed gives another sequence (a sampler that ignored the
  // seed would pass the check above).
  Request other = requests[0];
  other.params.sampling.seed = 99999;
  EXPECT_NE(Alone(*plan, other, Options()), (*out)[0].tokens);
}

// Penalties read each request's own prompt and output: greedy requests with
// repetition, presence and frequency penalties give the same tokens alone
// and in a batch, and the penalties change what they generate.
TEST_P(PipelineTest, PenaltiesAloneEqualInBatch) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(31);
  std::vector<Request> requests;
  for (int i = 0; i < 5; ++i) {
    Request r = Greedy(RandomIds(rng, 4 + 2 * i, Vocab(*plan)), 24);
    r.params.sampling.repetition_penalty = 1.5f;
    r.params.sampling.presence_penalty = 1.0f;
    r.params.sampling.frequency_penalty = 0.5f;
    requests.push_back(r);
  }
  PipelineOptions o = Options();
  o.max_seqs = 8;
  auto pipe = Make(*plan, o);
  ASSERT_TRUE(pipe);
  auto out = pipe->Generate(requests);
  ASSERT_TRUE(out.ok()) << out.status().message();
  int changed = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ((*out)[i].tokens, Alone(*plan, requests[i], Options())) << "request " << i;
    Request plain = Greedy(requests[i].prompt_ids, 24);
    changed += Alone(*plan, plain, Options()) != (*out)[i].tokens;
  }
  EXPECT_GT(changed, 0) << "the penalties changed no request's tokens";
}

// n = 2: two completions, the first with the request's own seed.
TEST_P(PipelineTest, TwoCompletionsPerRequest) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(23);
  Request r = Greedy(RandomIds(rng, 9, Vocab(*plan)), 10);
  r.params.sampling.temperature = 1.0f;
  r.params.sampling.seed = 5;
  Request two = r;
  two.params.n = 2;
  auto pipe = Make(*plan, Options());
  ASSERT_TRUE(pipe);
  auto out = pipe->Generate({two});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].completion, 0);
  EXPECT_EQ((*out)[1].completion, 1);
  EXPECT_EQ((*out)[0].tokens, Alone(*plan, r, Options()));
  EXPECT_NE((*out)[0].tokens, (*out)[1].tokens);
}

// Cancel() and a callback returning false end requests as cancelled; the
// others finish untouched.
TEST_P(PipelineTest, CancelEndsOnlyThatRequest) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  std::mt19937 rng(29);
  std::vector<Request> requests;
  for (int i = 0; i < 4; ++i)
    requests.push_back(Greedy(RandomIds(rng, 6, Vocab(*plan)), 20));
  auto pipe = Make(*plan, Options());
  ASSERT_TRUE(pipe);
  std::vector<int64_t> ids;
  int streamed_by_third = 0;
  for (int i = 0; i < 4; ++i) {
    StreamCallback cb;
    if (i == 2)
      cb = [&](const StreamEvent &) { return ++streamed_by_third < 3; };
    auto id = pipe->Submit(requests[i], cb);
    ASSERT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }
  for (int s = 0; s < 4; ++s)
    ASSERT_TRUE(pipe->Step().ok());
  pipe->Cancel(ids[1]);
  std::vector<Response> done;
  while (pipe->HasUnfinished()) {
    ASSERT_TRUE(pipe->Step().ok());
    for (Response &r : pipe->TakeFinished())
      done.push_back(std::move(r));
  }
  for (Response &r : pipe->TakeFinished())
    done.push_back(std::move(r));
  ASSERT_EQ(done.size(), 4u);
  for (const Response &r : done) {
    if (r.request_id == ids[1]) {
      EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
      EXPECT_LT(r.generated_length, 20);
    } else if (r.request_id == ids[2]) {
      EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
      EXPECT_EQ(r.generated_length, 3);
    } else {
      EXPECT_EQ(r.finish_reason, FinishReason::kLength);
      EXPECT_EQ(r.generated_length, 20);
    }
  }
}

// Streamed text adds up to the response's text, in valid UTF-8 pieces.
TEST_P(PipelineTest, StreamedTextAddsUpToGeneratedText) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  auto pipe = Make(*plan, Options());
  ASSERT_TRUE(pipe);
  if (!pipe->tokenizer())
    GTEST_SKIP() << "the plan has no tokenizer";
  RequestParams p;
  p.max_new_tokens = 24;
  p.ignore_eos = true;
  std::map<int64_t, std::string> streamed;
  auto out =
      pipe->Generate({"The meaning of", "Once upon a time", "1 2 3"}, p, [&](const StreamEvent &e) {
        streamed[e.request_id] += e.text;
        return true;
      });
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (const Response &r : *out) {
    EXPECT_EQ(streamed[r.request_id], r.generated_text);
    EXPECT_FALSE(r.generated_text.empty());
  }
}

// Bad requests fail the call with a clear message before anything runs.
TEST_P(PipelineTest, BadRequestsAreRefused) {
  auto plan = Load(PlanName());
  ASSERT_TRUE(plan);
  auto pipe = Make(*plan, Options());
  ASSERT_TRUE(pipe);
  Request ok = Greedy({1, 2, 3}, 4);
  Request bad = ok;
  bad.params.sampling.temperature = -1;
  auto out = pipe->Generate({ok, bad});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("request 1"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("temperature"), std::string::npos);
  EXPECT_FALSE(pipe->HasUnfinished());
  bad = ok;
  bad.params.sampling.top_p = 0;
  EXPECT_FALSE(pipe->Submit(bad).ok());
  if (pipe->context_length() > 0) {
    Request long_prompt = Greedy(std::vector<int32_t>(pipe->context_length() + 1, 1), 1);
    auto refused = pipe->Submit(long_prompt);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("longer than the context"), std::string::npos)
        << refused.status().message();
  }
  Request unknown = Greedy({1, static_cast<int32_t>(Vocab(*plan)) + 5}, 2);
  auto s = pipe->Submit(unknown);
  ASSERT_FALSE(s.ok()) << "a token id past the vocabulary";
  EXPECT_NE(s.status().message().find("token id"), std::string::npos) << s.status().message();
  PipelineOptions o = Options();
  o.max_batched_tokens = 4;
  o.max_seqs = 8;
  EXPECT_FALSE(Pipeline::Create(*plan, o).ok());
  // Still usable after refusals.
  auto again = pipe->Generate({ok});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ((*again)[0].generated_length, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PipelineTest,
                         ::testing::ValuesIn(test::EveryRoleAndPlan(
                             {test::kCpuRole, test::kGpuRole}, {"demo", "llama", "gpt2"})),
                         test::RoleAndPlanName);

// The device under test against the cpu: a batch of greedy requests gives
// the cpu's tokens, and every sampled row's logits lie within 1e-4 of the
// cpu's (relative to the row's largest magnitude).
class PipelineOnDevice : public ::testing::TestWithParam<test::RoleAndPlan> {};

TEST_P(PipelineOnDevice, GreedyBatchEqualsTheCpu) {
  KILN_SKIP_UNLESS_ROLE_RUNS(GetParam().role);
  auto plan = Load(GetParam().plan);
  ASSERT_TRUE(plan);
  std::mt19937 rng(37);
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i)
    requests.push_back(Greedy(RandomIds(rng, 1 + 9 * i, Vocab(*plan)), 16));
  using Rows = std::map<int64_t, std::vector<std::vector<float>>>;
  auto run = [&](const std::string &backend, Rows *rows) {
    PipelineOptions o;
    o.backend = backend;
    o.max_seqs = 8;
    o.max_batched_tokens = 64; // the longer prompts are chunked
    auto pipe = Make(*plan, o);
    if (!pipe)
      return std::vector<Response>{};
    pipe->set_logits_hook(
        [&](int64_t id, int, const float *l, int64_t v) { (*rows)[id].emplace_back(l, l + v); });
    auto out = pipe->Generate(requests);
    EXPECT_TRUE(out.ok()) << backend << ": " << out.status().message();
    return out.ok() ? *out : std::vector<Response>{};
  };
  Rows want_rows, got_rows;
  const std::vector<Response> want = run("cpu", &want_rows);
  const std::vector<Response> got = run(test::BackendOfRole(GetParam().role), &got_rows);
  ASSERT_EQ(want.size(), requests.size());
  ASSERT_EQ(got.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
  ASSERT_EQ(got_rows.size(), want_rows.size());
  for (const auto &[id, rows] : want_rows) {
    const auto &other = got_rows[id];
    ASSERT_EQ(other.size(), rows.size()) << "request id " << id;
    for (size_t s = 0; s < rows.size(); ++s) {
      ASSERT_EQ(other[s].size(), rows[s].size());
      float max_diff = 0, max_ref = 0;
      for (size_t v = 0; v < rows[s].size(); ++v) {
        max_diff = std::max(max_diff, std::fabs(other[s][v] - rows[s][v]));
        max_ref = std::max(max_ref, std::fabs(rows[s][v]));
      }
      EXPECT_LE(max_diff, 1e-4f * max_ref) << "request id " << id << ", step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PipelineOnDevice,
                         ::testing::ValuesIn(test::EveryRoleAndPlan({test::kGpuRole},
                                                                    {"demo", "llama", "gpt2"})),
                         test::RoleAndPlanName);

} // namespace
} // namespace kiln

namespace kiln {
namespace {

// The harness must hand the tests their plans; without, the suite above
// would run nothing and pass.
TEST(PipelinePlans, AreGiven) { ASSERT_FALSE(Plans().empty()) << "KILN_TEST_PLANS is not set"; }

} // namespace
} // namespace kiln
