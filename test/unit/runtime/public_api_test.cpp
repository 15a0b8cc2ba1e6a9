// The public API the kiln tool's commands call (docs/architecture.md,
// dependency rules): typed plan metadata, inspect's report, devices by
// name, a plan's chat template, the embedder, and opening a rank.
#include "kiln/chat_template.h"
#include "kiln/device.h"
#include "kiln/embedder.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "kiln/plan_report.h"
#include "kiln/rank.h"
#include "kiln/tokenizer.h"
#include "test_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace kiln {
namespace {

using test::TempPath;
using test::TestPlan;

std::string WritePlan(const TestPlan &p, const std::string &name) {
  const std::string path = TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  return path;
}

std::unique_ptr<Plan> Load(const TestPlan &p, const std::string &name) {
  auto plan = LoadPlan(WritePlan(p, name));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

// An encoder: input_ids [batch, sequence] -> rows of E [vocab, hidden] as
// last_hidden_state, so a mean-pooled vector is the mean of its tokens' rows.
constexpr int kVocab = 4, kHidden = 3;
float E(int token, int h) { return static_cast<float>(token * 10 + h + 1); }

TestPlan Encoder() {
  TestPlan p;
  int ids = p.Input("input_ids", DType::kI64, {"batch", "sequence"});
  std::vector<float> table;
  for (int t = 0; t < kVocab; ++t)
    for (int h = 0; h < kHidden; ++h)
      table.push_back(E(t, h));
  int e = p.Weight("E", DType::kF32, {kVocab, kHidden}, table);
  int states = p.Act("last_hidden_state", DType::kF32, {"batch", "sequence", kHidden});
  p.Op("gather", {e, ids}, {states}, {test::AInt("axis", 0)});
  p.Output(states);
  p.tokenizer_json = test::LetterTokenizerJson(kVocab);
  p.context_length = 3;
  return p;
}

TEST(PlanInfo, DescribesTheModelWideFieldsAndTheInterface) {
  TestPlan p = test::BuildBigramDecoder(std::vector<float>(16, 0.f), 4);
  p.eos = {2, 3};
  p.bos = 1;
  p.context_length = 64;
  p.tokenizer_json = test::LetterTokenizerJson(4);
  auto plan = Load(p, "plan_info_bigram.plan");
  ASSERT_TRUE(plan);
  const PlanInfo info = DescribePlan(*plan);
  EXPECT_TRUE(info.model.present);
  EXPECT_EQ(info.model.architecture, "toy");
  EXPECT_EQ(info.model.context_length, 64);
  EXPECT_EQ(info.model.bos_token_id, 1);
  EXPECT_EQ(info.model.eos_token_ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(info.tokenizer_json, p.tokenizer_json);
  EXPECT_TRUE(info.chat_template.empty());
  EXPECT_FALSE(info.pooling.present);
  EXPECT_EQ(info.tp_size, 1);
  EXPECT_EQ(info.sections.size(), 1u);
  EXPECT_EQ(info.interface, PlanInterface::kDecoder);
  EXPECT_STREQ(PlanInterfaceName(info.interface), "dense");

  auto encoder = Load(Encoder(), "plan_info_encoder.plan");
  ASSERT_TRUE(encoder);
  EXPECT_EQ(GraphInterface(*encoder), PlanInterface::kEncoder);
  // A plan without provenance cannot say its source.
  const SourceCheck check = CheckPlanSource(*encoder, "/nonexistent.onnx");
  EXPECT_EQ(check.result, SourceCheck::kNoProvenance);
  EXPECT_NE(check.message.find("provenance"), std::string::npos) << check.message;
}

TEST(PlanReport, HoldsInspectsFields) {
  auto plan = Load(Encoder(), "plan_report_encoder.plan");
  ASSERT_TRUE(plan);
  const nlohmann::ordered_json r = PlanReport(*plan, /*with_ops=*/true);
  EXPECT_EQ(r.at("interface"), "dense");
  EXPECT_EQ(r.at("num_ops"), 1);
  EXPECT_EQ(r.at("op_counts").at("gather"), 1);
  EXPECT_EQ(r.at("ops").at(0).at("outputs").at(0), "last_hidden_state");
  EXPECT_EQ(r.at("inputs").at(0).at("shape"), nlohmann::ordered_json::array({"batch", "sequence"}));
  EXPECT_EQ(r.at("weight_dtypes").at("f32").at("tensors"), 1);
  EXPECT_EQ(r.at("backends").at(0).at("name"), "cpu");
  EXPECT_EQ(r.at("backends").at(0).at("runs"), true);
  EXPECT_FALSE(PlanReport(*plan, false).contains("ops"));
}

TEST(Device, NamesAreCheckedAndCpuOpens) {
  EXPECT_TRUE(CheckDeviceName("cpu", "--device").ok());
  Status bad = CheckDeviceName("tpu", "--device");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--device: unknown backend 'tpu'"), std::string::npos)
      << bad.message();
  EXPECT_NE(bad.message().find("cpu"), std::string::npos) << bad.message();
  EXPECT_FALSE(CheckDeviceName("cuda:x", "--backend").ok());
  EXPECT_FALSE(CheckDeviceName("cpu:0", "--device").ok());

  auto device = Device::Open("cpu");
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ((*device)->name(), "cpu");
  auto plan = Load(Encoder(), "device_encoder.plan");
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan, (*device)->backend());
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  EXPECT_TRUE((*exec)->Wait().ok());
  auto missing = MissingKernels(*plan, "cpu");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());
  EXPECT_TRUE(CheckPlanRunsOn(*plan, "cpu").ok());
  EXPECT_EQ(MissingKernels(*plan, "nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Device::Open("nope").status().code(), StatusCode::kNotFound);
}

TEST(PlanChatTemplate, RendersWithThePlansBosAndEos) {
  auto tokenizer = Tokenizer::FromJson(test::LetterTokenizerJson(4));
  ASSERT_TRUE(tokenizer.ok());
  TestPlan p = test::BuildBigramDecoder(std::vector<float>(16, 0.f), 4);
  auto none = Load(p, "chat_none.plan");
  ASSERT_TRUE(none);
  auto empty = PlanChatTemplate::ForPlan(*none, tokenizer->get());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(empty->Render(nlohmann::json::array(), true).status().code(),
            StatusCode::kInvalidArgument);

  p.chat_template =
      "{{ bos_token }}{% for m in messages %}[{{ m['content'] }}]{% endfor %}{{ eos_token }}";
  p.bos = 1;
  p.eos = {3};
  auto plan = Load(p, "chat_template.plan");
  ASSERT_TRUE(plan);
  auto chat = PlanChatTemplate::ForPlan(*plan, tokenizer->get());
  ASSERT_TRUE(chat.ok()) << chat.status().message();
  const nlohmann::json messages = {{{"role", "user"}, {"content", "hi"}}};
  auto text = chat->Render(messages, true);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "b[hi]d");
  // The caller's own variables win.
  nlohmann::ordered_json om = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}});
  auto own = chat->Render(om, true, nlohmann::ordered_json{{"bos_token", "<s>"}});
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(*own, "<s>[x]d");
  // Without a tokenizer neither variable is set.
  auto bare = PlanChatTemplate::ForPlan(*plan, nullptr);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(*bare->Render(messages, true), "[hi]");

  p.chat_template = "{% for m in messages %}";
  auto broken = Load(p, "chat_broken.plan");
  ASSERT_TRUE(broken);
  auto refused = PlanChatTemplate::ForPlan(*broken, tokenizer->get());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("the plan's chat template"), std::string::npos);
}

TEST(Embedder, MeanPoolsEachInputOverItsOwnTokensWhateverItIsBatchedWith) {
  auto plan = Load(Encoder(), "embedder_encoder.plan");
  ASSERT_TRUE(plan);
  EmbedderOptions o;
  o.batch_size = 2;
  auto embedder = Embedder::Create(*plan, o);
  ASSERT_TRUE(embedder.ok()) << embedder.status().message();
  EXPECT_STREQ((*embedder)->pooling(), "mean");
  EXPECT_FALSE((*embedder)->pooling_from_plan());
  EXPECT_EQ((*embedder)->context_length(), 3);
  // "cab" = [2, 0, 1], "d" = [3] padded in one batch; "ab" in the next, by ids.
  auto out = (*embedder)->Embed({"cab", "d"}, {{0, 1}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->vectors.size(), 3u);
  EXPECT_EQ(out->token_counts, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(out->tokens, 6);
  for (int h = 0; h < kHidden; ++h) {
    EXPECT_FLOAT_EQ(out->vectors[0][h], (E(2, h) + E(0, h) + E(1, h)) / 3);
    EXPECT_FLOAT_EQ(out->vectors[1][h], E(3, h));
    EXPECT_FLOAT_EQ(out->vectors[2][h], (E(0, h) + E(1, h)) / 2);
  }
  // Alone, "d" gets the same vector.
  auto alone = (*embedder)->Embed({"d"});
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->vectors[0], out->vectors[1]);
  // Longer than the model's positions, or empty: refused, naming the input.
  Status st = (*embedder)->Embed({"a", "abcd"}).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("input 1 is 4 tokens"), std::string::npos) << st.message();
  EXPECT_NE((*embedder)->Embed({}, {{}}).status().message().find("has no tokens"),
            std::string::npos);

  o.normalize = true;
  auto unit = Embedder::Create(*plan, o);
  ASSERT_TRUE(unit.ok());
  auto v = (*unit)->Embed({"d"});
  ASSERT_TRUE(v.ok());
  double norm = 0;
  for (float x : v->vectors[0])
    norm += double{x} * x;
  EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-6);

  // A decoder is not an encoder kiln can fill.
  auto decoder = Load(test::BuildSumDecoder(false, 4), "embedder_decoder.plan");
  ASSERT_TRUE(decoder);
  EXPECT_EQ(Embedder::Create(*decoder, {}).status().code(), StatusCode::kInvalidArgument);
  o.batch_size = 0;
  EXPECT_EQ(Embedder::Create(*plan, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(Rank, OneRankOpensWithoutACommunicator) {
  ASSERT_EQ(std::getenv("KILN_RANK"), nullptr);
  ASSERT_EQ(std::getenv("KILN_WORLD_SIZE"), nullptr);
  const std::string path = WritePlan(Encoder(), "rank_encoder.plan");
  RankOptions o;
  auto rank = OpenRank(path, o);
  ASSERT_TRUE(rank.ok()) << rank.status().message();
  EXPECT_EQ(rank->comm(), nullptr);
  EXPECT_EQ(rank->device(), "cpu");
  EXPECT_EQ(rank->rank(), 0);
  EXPECT_EQ(rank->size(), 1);
  EXPECT_FALSE(rank->follower());
  EXPECT_EQ(rank->plan().num_ops(), 1);
  std::unique_ptr<Plan> owned = rank->TakePlan();
  EXPECT_TRUE(owned);

  // Checked before any wait: a rank outside the run, a bad timeout, a
  // tensor-parallel request for a plan built without it.
  o.tp_size = 2;
  o.rank = 2;
  EXPECT_EQ(OpenRank(path, o).status().code(), StatusCode::kInvalidArgument);
  o.rank = 0;
  o.timeout_seconds = 0;
  EXPECT_EQ(OpenRank(path, o).status().code(), StatusCode::kInvalidArgument);
  o.tp_size = 1;
  o.timeout_seconds = 60;
  o.rank = -1;
  EXPECT_TRUE(OpenRank(path, o).ok());
  EXPECT_FALSE(OpenRank("/nonexistent.plan", o).ok());

  RankOptions launch;
  launch.tp_size = 2;
  EXPECT_TRUE(IsRankLauncher(launch));
  launch.rank = 1;
  EXPECT_FALSE(IsRankLauncher(launch));
  launch.rank = -1;
  launch.tp_size = 1;
  EXPECT_FALSE(IsRankLauncher(launch));
  EXPECT_EQ(InRankContext(InvalidArgument("x")).message(), "x");
}

// A const StatusOr reads its value through * and ->, as a const optional does.
TEST(StatusOr, ReadsThroughAConstReference) {
  const StatusOr<std::string> ok = std::string("plan");
  const StatusOr<std::string> &ref = ok;
  EXPECT_EQ(*ref, "plan");
  EXPECT_EQ(ref->size(), 4u);
  const StatusOr<std::string> bad = NotFound("no plan");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "no plan");
}

} // namespace
} // namespace kiln
