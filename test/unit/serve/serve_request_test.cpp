// Settings, request parsing and response encoding of kiln serve.
#include "serve/metrics.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/settings.h"

#include <gtest/gtest.h>

namespace kiln::serve {
namespace {

using json = nlohmann::json;

std::optional<ApiError> Parse(const std::string &body, Endpoint ep, CompletionJob *job) {
  ParseLimits limits;
  limits.context_length = 256;
  return ParseCompletionJob(json::parse(body), ep, RequestParams(), limits, job);
}

TEST(ServeSettings, FileKeysFlagsAndUnknownKeys) {
  ServeSettings s;
  ASSERT_TRUE(ApplySettingsJson(json{{"max_queue", 7}, {"host", "0.0.0.0"}}, &s).ok());
  EXPECT_EQ(s.max_queue, 7);
  EXPECT_EQ(s.host, "0.0.0.0");
  ASSERT_TRUE(ApplySettingText("max_queue", "9", &s).ok()); // a flag overrides the file
  EXPECT_EQ(s.max_queue, 9);
  Status bad = ApplySettingsJson(json{{"max_qeue", 7}}, &s);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("max_qeue"), std::string::npos);
  EXPECT_FALSE(ApplySettingsJson(json{{"max_queue", "7"}}, &s).ok()); // wrong type
  EXPECT_FALSE(ApplySettingsJson(json{{"max_queue", 0}}, &s).ok());   // out of range
  EXPECT_FALSE(ApplySettingText("request_timeout_s", "soon", &s).ok());
  EXPECT_FALSE(CheckSettings(ServeSettings()).ok()); // no keys and no allow_no_auth
  // Every key has help text in the usage.
  const std::string usage = SettingsUsage();
  for (const SettingKey &k : SettingKeys()) {
    std::string flag = std::string("--") + k.name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
    EXPECT_GT(std::string(k.help).size(), 10u) << k.name;
  }
}

TEST(ServeRequest, CompletionFields) {
  CompletionJob job;
  auto e = Parse(R"({"model": "m", "prompt": ["a", "b"], "max_tokens": 5, "temperature": 0,
                     "top_p": 0.5, "top_k": 3, "min_p": 0.1, "n": 2, "stop": "xy z",
                     "seed": 42, "logprobs": 3, "presence_penalty": 1, "frequency_penalty": -1,
                     "repetition_penalty": 1.2, "stream": true,
                     "stream_options": {"include_usage": true}, "user": "u1"})",
                 Endpoint::kCompletions, &job);
  ASSERT_FALSE(e) << e->message;
  ASSERT_EQ(job.prompts.size(), 2u);
  const RequestParams &p = job.prompts[1].params;
  EXPECT_EQ(p.max_new_tokens, 5);
  EXPECT_EQ(p.sampling.temperature, 0.0f); // 0 is greedy, never refused
  EXPECT_EQ(p.sampling.top_k, 3);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(p.stop, std::vector<std::string>{"xy z"});
  EXPECT_EQ(p.sampling.seed, 42u);
  EXPECT_EQ(p.sampling.logprobs, 3);
  EXPECT_TRUE(job.stream && job.include_usage && job.logprobs);
}

TEST(ServeRequest, DefaultMaxTokensIsTheContext) {
  CompletionJob job;
  ASSERT_FALSE(Parse(R"({"prompt": "a"})", Endpoint::kCompletions, &job));
  EXPECT_EQ(job.prompts[0].params.max_new_tokens, 256);
  EXPECT_EQ(job.prompts[0].params.sampling.temperature, 1.0f);
}

TEST(ServeRequest, PromptForms) {
  CompletionJob job;
  ASSERT_FALSE(Parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, &job));
  EXPECT_EQ(job.prompts[0].prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(Parse(R"({"prompt": [[1], [2, 3]]})", Endpoint::kCompletions, &job));
  EXPECT_EQ(job.prompts.size(), 2u);
  EXPECT_TRUE(Parse(R"({"prompt": [1, "a"]})", Endpoint::kCompletions, &job));
  EXPECT_TRUE(Parse(R"({"prompt": ""})", Endpoint::kCompletions, &job));
  EXPECT_TRUE(Parse(R"({"prompt": [-1]})", Endpoint::kCompletions, &job));
}

TEST(ServeRequest, ErrorsNameTheField) {
  CompletionJob job;
  auto e = Parse(R"({"prompt": "a", "bogus": 1})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "bogus");
  // A near miss: a chat field on the completions endpoint.
  e = Parse(R"({"prompt": "a", "top_logprobs": 2})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "top_logprobs");
  e = Parse(R"({"prompt": "a", "top_p": 2})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "top_p");
  e = Parse(R"({"prompt": "a", "max_tokens": "5"})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_tokens");
  e = Parse(R"({"prompt": "a", "stop": ["", "x"]})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "stop");
  e = Parse(R"({"prompt": "a", "stream_options": {"include_usage": true}})", Endpoint::kCompletions,
            &job);
  ASSERT_TRUE(e); // stream_options without stream
  e = Parse(R"({"prompt": "a", "n": 17})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "n");
  EXPECT_TRUE(Parse(R"([1])", Endpoint::kCompletions, &job));
}

TEST(ServeRequest, Chat) {
  CompletionJob job;
  auto e = Parse(R"({"messages": [{"role": "system", "content": "be brief"},
                                  {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                     "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 7})",
                 Endpoint::kChat, &job);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(job.messages[1]["content"], "hi");
  EXPECT_EQ(job.prompts[0].params.max_new_tokens, 7);
  EXPECT_EQ(job.prompts[0].params.sampling.logprobs, 2);
  // Chat logprobs without alternatives still ask the engine for the chosen token's.
  ASSERT_FALSE(Parse(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})",
                     Endpoint::kChat, &job));
  EXPECT_EQ(job.prompts[0].params.sampling.logprobs, 1);
  EXPECT_EQ(job.top_logprobs, 0);
  EXPECT_TRUE(Parse(R"({"messages": []})", Endpoint::kChat, &job));
  EXPECT_TRUE(Parse(R"({"messages": [{"content": "x"}]})", Endpoint::kChat, &job));
  EXPECT_TRUE(Parse(R"({"messages": [{"role": "user", "content": "x"}], "prompt": "x"})",
                    Endpoint::kChat, &job));
  EXPECT_TRUE(Parse(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
                    Endpoint::kChat, &job));
}

TEST(ServeRequest, BodiesThatAreNotJson) {
  json body;
  for (const char *text : {"{", "{\"a\": 1e999}", "\xff", "", "[1,]"}) {
    auto e = ParseBody(text, &body);
    ASSERT_TRUE(e) << text;
    EXPECT_EQ(e->status, 400) << text;
    EXPECT_EQ(e->code, "invalid_json") << text;
  }
  EXPECT_FALSE(ParseBody("{\"a\": 1e308}", &body));
  // The bytes the parser quotes come back escaped: the message is valid UTF-8.
  auto e = ParseBody("{\"prompt\": \"\xff\xfe\"", &body);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("\\xff"), std::string::npos) << e->message;
  EXPECT_EQ(e->message.find('\xff'), std::string::npos);
}

TEST(ServeRequest, Embeddings) {
  EmbeddingJob job;
  EXPECT_FALSE(ParseEmbeddingJob(json::parse(R"({"input": ["a", "b"]})"), 8, &job));
  EXPECT_EQ(job.texts.size(), 2u);
  EmbeddingJob ids;
  EXPECT_FALSE(ParseEmbeddingJob(json::parse(R"({"input": [[1, 2], [3]]})"), 8, &ids));
  EXPECT_EQ(ids.ids.size(), 2u);
  EmbeddingJob bad;
  EXPECT_TRUE(ParseEmbeddingJob(json::parse(R"({"input": "a", "dimensions": 3})"), 8, &bad));
  EXPECT_TRUE(
      ParseEmbeddingJob(json::parse(R"({"input": "a", "encoding_format": "hex"})"), 8, &bad));
  EmbeddingJob b64;
  EXPECT_FALSE(
      ParseEmbeddingJob(json::parse(R"({"input": "a", "encoding_format": "base64"})"), 8, &b64));
  EXPECT_TRUE(b64.base64);
  EXPECT_FALSE(job.base64);
}

TEST(ServeResponse, ShapesOfBodiesAndChunks) {
  ResponseContext ctx;
  ctx.id = "cmpl-1";
  ctx.model = "m";
  Response r;
  r.generated_text = "hello";
  r.finish_reason = FinishReason::kStopString;
  json body = json::parse(CompletionBody(ctx, {r}, Usage{3, 2}));
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "hello");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["total_tokens"], 5);
  ctx.endpoint = Endpoint::kChat;
  const std::string chunk = StreamChunk(ctx, 0, "hi", {}, true, nullptr);
  ASSERT_EQ(chunk.rfind("data: ", 0), 0u);
  ASSERT_EQ(chunk.substr(chunk.size() - 2), "\n\n");
  json c = json::parse(chunk.substr(6));
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  json u = json::parse(UsageChunk(ctx, Usage{1, 1}).substr(6));
  EXPECT_TRUE(u["choices"].empty());
  json err = json::parse(ErrorBody(BadRequest("bad", "x")));
  EXPECT_EQ(err["error"]["param"], "x");
  EXPECT_TRUE(err["error"]["code"].is_null());
}

TEST(ServeMetrics, PrometheusText) {
  Metrics m;
  m.Add("kiln_rejections_total", 2, "queue_full");
  m.Observe("kiln_time_to_first_token_seconds", 0.02);
  m.Observe("kiln_time_to_first_token_seconds", 500);
  const std::string text = m.Render();
  EXPECT_NE(text.find("kiln_rejections_total{reason=\"queue_full\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE kiln_time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("kiln_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("kiln_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("kiln_time_to_first_token_seconds_count 2\n"), std::string::npos);
  EXPECT_NE(text.find("kiln_generation_tokens_total 0\n"), std::string::npos);
}

TEST(ServeRequest, LogitBiasEchoAndResponseFormat) {
  CompletionJob job;
  ASSERT_FALSE(Parse(R"({"prompt": "a", "logit_bias": {"5": 10, "7": -100}, "echo": true,
                         "response_format": {"type": "text"}})",
                     Endpoint::kCompletions, &job));
  const auto &bias = job.prompts[0].params.sampling.logit_bias;
  ASSERT_EQ(bias.size(), 2u);
  EXPECT_EQ(bias[0], (std::pair<int32_t, float>{5, 10.0f}));
  EXPECT_EQ(bias[1], (std::pair<int32_t, float>{7, -100.0f}));
  EXPECT_TRUE(job.echo);
  for (const char *bad : {R"({"prompt": "a", "logit_bias": {"x": 1}})",
                          R"({"prompt": "a", "logit_bias": {"5": 101}})",
                          R"({"prompt": "a", "logit_bias": {"5": "1"}})",
                          R"({"prompt": "a", "logit_bias": [1]})",
                          R"({"prompt": "a", "echo": true, "logprobs": 1})",
                          R"({"prompt": "a", "echo": 1})",
                          R"({"prompt": "a", "response_format": {"type": "json_object"}})",
                          R"({"prompt": "a", "response_format": {"type": "text", "x": 1}})",
                          R"({"prompt": "a", "response_format": "text"})"}) {
    auto e = Parse(bad, Endpoint::kCompletions, &job);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 400) << bad;
    EXPECT_FALSE(e->param.empty()) << bad;
  }
  // echo is a completions field; chat refuses it by name.
  auto e = Parse(R"({"messages": [{"role": "user", "content": "hi"}], "echo": true})",
                 Endpoint::kChat, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "echo");
  // The response bound: 64 prompts x n 16 = 1024 streams.
  std::string many = R"({"prompt": [)";
  for (int i = 0; i < 64; ++i)
    many += std::string(i ? "," : "") + R"("p")";
  e = Parse(many + R"(], "n": 16})", Endpoint::kCompletions, &job);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "n");
  EXPECT_FALSE(Parse(many + R"(], "n": 4})", Endpoint::kCompletions, &job)); // 256: at the bound
}

} // namespace
} // namespace kiln::serve
