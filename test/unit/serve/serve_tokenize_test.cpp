// /tokenize and /detokenize over HTTP, in-process: a server whose model is
// only a tokenizer (test/tokenizer/llama3.json, whose ids Hugging Face's
// tokenizers gave in refs_llama3.json) and a chat template, with no engine
// (the routes never step a model, so no plan is built); then the same
// server as the one replica of a --replicas front end, which forwards them.
#include "kiln/chat_template.h"
#include "kiln/tokenizer.h"
#include "serve/auth.h"
#include "serve/front_end.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/replica_balancer.h"
#include "serve/replica_supervisor.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <httplib.h>
#include <iterator>
#include <thread>

namespace kiln::serve {
namespace {

// As in serve_http_test.cpp: a server that closes while httplib's client
// still sends must fail that call, not kill the test program.
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

using json = nlohmann::json;

constexpr int32_t kBos = 2503, kStartHeader = 2507, kEndHeader = 2508, kEot = 2510;
const char kKey[] = "kiln-test-key";
// A Llama-3-style template over the fixture's own header and turn tokens.
const char kTemplate[] =
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content }}"
    "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant"
    "<|end_header_id|>{% endif %}";

std::unique_ptr<Tokenizer> Llama3() {
  std::ifstream in(std::string(KILN_TOKENIZER_TESTDATA) + "/llama3.json", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto tok = Tokenizer::FromJson(text);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

ApiKey Key(const std::string &key, int64_t rpm) {
  ApiKey k;
  k.id = "alice";
  k.rpm = rpm;
  const std::string hex = HashApiKey(key);
  for (int i = 0; i < 32; ++i)
    k.hash[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return k;
}

class ServeTokenize : public ::testing::Test {
protected:
  // A server on a free loopback port; with `rpm` >= 0 it takes only kKey.
  void Start(bool with_template = true, int64_t rpm = -1) {
    tokenizer_ = Llama3();
    ASSERT_NE(tokenizer_, nullptr);
    auto model = std::make_shared<ServedModel>();
    model->name = "toy";
    model->tokenizer = tokenizer_.get();
    model->context_length = 48;
    if (with_template) {
      auto tmpl = ChatTemplate::Compile(kTemplate);
      ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
      auto shared = std::make_shared<ChatTemplate>(std::move(*tmpl));
      model->chat = [shared](const json &messages, bool add_generation_prompt) {
        return shared->Render(messages, add_generation_prompt);
      };
    }
    if (rpm >= 0)
      keys_ = KeyStore::FromKeys({Key(kKey, rpm)});
    ServeSettings s;
    s.allow_no_auth = rpm < 0;
    s.api_keys = rpm < 0 ? "" : "unused";
    s.access_log = false;
    s.port = 0;
    s.max_body_bytes = 8192;
    s.max_prompt_bytes = 512;
    s.http_threads = 8;
    ServerDeps deps;
    deps.model = model;
    deps.keys = keys_.get();
    deps.quotas = keys_.get();
    deps.metrics = &metrics_;
    server_ = std::make_unique<HttpServer>(s, std::move(deps));
    auto port = server_->Bind();
    ASSERT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    thread_ = std::thread([this] { server_->Listen(); });
  }

  void TearDown() override {
    if (server_) {
      server_->Drain();
      thread_.join();
    }
  }

  // POSTs `body` to `route`; the status, and the body parsed (or null).
  std::pair<int, json> Post(const std::string &route, const std::string &body,
                            const httplib::Headers &headers = {}, int port = 0) {
    httplib::Client c("127.0.0.1", port ? port : port_);
    c.set_read_timeout(10, 0);
    auto r = c.Post(route, headers, body, "application/json");
    if (!r)
      return {-1, nullptr};
    return {r->status, json::parse(r->body, nullptr, /*allow_exceptions=*/false)};
  }
  std::pair<int, json> PostJson(const std::string &route, const json &body) {
    return Post(route, body.dump());
  }

  std::vector<int32_t> Encode(const std::string &text, bool add_special) {
    auto ids = tokenizer_->Encode(text, add_special);
    EXPECT_TRUE(ids.ok());
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }

  Metrics metrics_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<KeyStore> keys_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ServeTokenize, PromptAsHuggingFaceEncodesIt) {
  ASSERT_NO_FATAL_FAILURE(Start());
  // refs_llama3.json, corpus line 12; BOS from the post-processor.
  auto [status, j] =
      PostJson("/tokenize", json{{"model", "toy"}, {"prompt", "new\n\nlines\n\n\n"}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_EQ(
      j,
      json({{"count", 6}, {"max_model_len", 48}, {"tokens", {kBos, 1767, 282, 1168, 282, 198}}}));
  std::tie(status, j) = PostJson("/tokenize", json{{"prompt", "new\n\nlines\n\n\n"},
                                                   {"add_special_tokens", false},
                                                   {"return_token_strs", true}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_EQ(j["tokens"], json({1767, 282, 1168, 282, 198}));
  EXPECT_EQ(j["token_strs"][0], "new");
  EXPECT_EQ(j["token_strs"][4], "\u010a");
  // Past the context: counted, not refused (that is what a client asks).
  std::string longer;
  for (int i = 0; i < 40; ++i)
    longer += "new lines ";
  std::tie(status, j) = PostJson("/tokenize", json{{"prompt", longer}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_GT(j["count"].get<int>(), 48);
  EXPECT_EQ(j["count"], j["tokens"].size());
}

TEST_F(ServeTokenize, MessagesThroughTheChatTemplate) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const json messages = json::array({{{"role", "user"}, {"content", "Hello"}}});
  const std::string turn = "<|start_header_id|>user<|end_header_id|>Hello<|eot_id|>";
  const std::string open = "<|start_header_id|>assistant<|end_header_id|>";
  auto [status, j] = PostJson("/tokenize", json{{"messages", messages}});
  ASSERT_EQ(status, 200) << j;
  // No special tokens added by default: the template wrote them (as chat
  // completions encode it), and the assistant's turn is open.
  EXPECT_EQ(j["tokens"], json(Encode(turn + open, false)));
  EXPECT_EQ(j["tokens"].front(), kStartHeader);
  EXPECT_EQ(j["tokens"].back(), kEndHeader);
  std::tie(status, j) = PostJson("/tokenize", json{{"messages", messages},
                                                   {"add_generation_prompt", false},
                                                   {"add_special_tokens", true},
                                                   {"continue_final_message", false}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_EQ(j["tokens"], json(Encode(turn, true)));
  EXPECT_EQ(j["tokens"].front(), kBos);
  EXPECT_EQ(j["tokens"].back(), kEot);
}

TEST_F(ServeTokenize, DetokenizeInvertsTokenize) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto [status, j] = PostJson("/detokenize", json{{"model", "toy"}, {"tokens", {kBos, 1708, 366}}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_EQ(j, json({{"prompt", "<|begin_of_text|>Hello"}}));
  std::tie(status, j) = PostJson("/detokenize", json{{"tokens", json::array()}});
  ASSERT_EQ(status, 200) << j;
  EXPECT_EQ(j["prompt"], "");
  // Byte-level BPE: text -> ids -> the same text, whatever it holds.
  for (const std::string text :
       {"  two spaces\r\nthen CRLF\n\n", "\u4e2d\u6587 \xf0\x9f\x98\x80 caf\u00e9",
        "<|eot_id|>special\tand tab "}) {
    std::tie(status, j) =
        PostJson("/tokenize", json{{"prompt", text}, {"add_special_tokens", false}});
    ASSERT_EQ(status, 200) << j;
    std::tie(status, j) = PostJson("/detokenize", json{{"tokens", j["tokens"]}});
    ASSERT_EQ(status, 200) << j;
    EXPECT_EQ(j["prompt"], text);
  }
}

TEST_F(ServeTokenize, BadRequestsAre400InOpenAiShape) {
  ASSERT_NO_FATAL_FAILURE(Start());
  struct Case {
    const char *route;
    std::string body;
    const char *param; // the error's param
    const char *message;
  };
  const std::vector<Case> cases = {
      {"/tokenize", "{\"prompt\": ", "", "not valid JSON"},
      {"/tokenize", std::string("{\"prompt\": \"\xff\"}"), "", "UTF-8"},
      {"/tokenize", R"({"prompt": "a", "bogus": 1})", "bogus", "unknown field 'bogus'"},
      {"/tokenize", R"({"prompt": ["a"]})", "prompt", "must be a string"},
      {"/tokenize", R"({"model": "toy"})", "prompt", "is required"},
      {"/tokenize", R"({"prompt": "a", "messages": []})", "messages", "give one"},
      {"/tokenize", R"({"prompt": "a", "add_generation_prompt": true})", "add_generation_prompt",
       "goes with 'messages'"},
      {"/tokenize", R"({"prompt": "a", "add_special_tokens": "yes"})", "add_special_tokens",
       "true or false"},
      {"/tokenize", R"({"messages": [{"content": "x"}]})", "messages[0].role", "is required"},
      {"/tokenize", R"({"messages": [{"role": "user"}], "continue_final_message": true})",
       "continue_final_message", "not supported"},
      {"/tokenize", json{{"prompt", std::string(600, 'a')}}.dump(), "prompt", "max_prompt_bytes"},
      {"/tokenize", R"([1, 2])", "", "JSON object"},
      {"/detokenize", R"({"tokens": [1, -1]})", "tokens", "list of token ids"},
      {"/detokenize", R"({"tokens": "1,2"})", "tokens", "list of token ids"},
      {"/detokenize", R"({"prompt": "a"})", "prompt", "unknown field"},
      {"/detokenize", R"({})", "tokens", "is required"},
      {"/detokenize", R"({"tokens": [1708, 2511]})", "tokens",
       "tokens[1] = 2511 is not an id of the plan's tokenizer (its ids are 0..2510)"},
  };
  for (const Case &c : cases) {
    auto [status, j] = Post(c.route, c.body);
    EXPECT_EQ(status, 400) << c.route << " " << c.body << " -> " << j;
    ASSERT_TRUE(j.contains("error")) << j;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << j;
    EXPECT_EQ(j["error"]["param"].is_null() ? "" : j["error"]["param"].get<std::string>(), c.param)
        << j;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.message), std::string::npos) << j;
  }
  auto [status, j] = PostJson("/tokenize", json{{"model", "other"}, {"prompt", "a"}});
  EXPECT_EQ(status, 404) << j;
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  std::tie(status, j) = PostJson("/detokenize", json{{"model", "other"}, {"tokens", {1}}});
  EXPECT_EQ(status, 404) << j;
  // Over max_body_bytes: the listener's 413, before the route.
  std::tie(status, j) = PostJson("/tokenize", json{{"prompt", std::string(9000, 'a')}});
  EXPECT_EQ(status, 413) << j;
}

TEST_F(ServeTokenize, MessagesNeedATemplate) {
  ASSERT_NO_FATAL_FAILURE(Start(/*with_template=*/false));
  auto [status, j] =
      PostJson("/tokenize", json{{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  EXPECT_EQ(status, 400) << j;
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("no chat template"), std::string::npos);
  std::tie(status, j) = PostJson("/tokenize", json{{"prompt", "x"}});
  EXPECT_EQ(status, 200) << j;
}

TEST_F(ServeTokenize, KeyRequiredAndRpmCounted) {
  ASSERT_NO_FATAL_FAILURE(Start(true, /*rpm=*/2));
  const std::string body = json{{"prompt", "a"}}.dump();
  EXPECT_EQ(Post("/tokenize", body).first, 401);
  EXPECT_EQ(Post("/detokenize", R"({"tokens": [1]})").first, 401);
  EXPECT_EQ(Post("/tokenize", body, {{"Authorization", "Bearer kiln-test-kez"}}).first, 401);
  const httplib::Headers good = {{"Authorization", std::string("Bearer ") + kKey}};
  auto [status, j] = Post("/tokenize", body, good);
  EXPECT_EQ(status, 200) << j;
  EXPECT_EQ(Post("/detokenize", R"({"tokens": [1]})", good).first, 200);
  // A 400 costs no quota; the third admitted request in a minute is refused.
  EXPECT_EQ(Post("/tokenize", R"({"prompt": 1})", good).first, 400);
  std::tie(status, j) = Post("/tokenize", body, good);
  EXPECT_EQ(status, 429) << j;
  EXPECT_EQ(j["error"]["code"], "rate_limit_rpm");
}

// --replicas: the front end forwards both routes to a replica (here the
// in-process server above, as a fake replica's port), under its own keys.
TEST_F(ServeTokenize, ForwardedByTheReplicasFrontEnd) {
  ASSERT_NO_FATAL_FAILURE(Start());
  LeastLoaded balancer(1);
  Metrics fe_metrics;
  FrontEnd::DeclareMetrics(&fe_metrics);
  ReplicaOptions ro;
  ro.exe = "/bin/sh";
  ro.argv = {"sh", "-c",
             "echo 'kiln serve: toy on http://127.0.0.1:" + std::to_string(port_) +
                 " (no auth)'; exec sleep 600",
             "fake-replica"};
  ro.count = 1;
  ro.start_timeout_s = 30;
  ReplicaSupervisor supervisor(ro, &balancer, &fe_metrics);
  ASSERT_TRUE(supervisor.Start().ok());
  auto keys = KeyStore::FromKeys({Key(kKey, 0)});
  ServeSettings s;
  s.api_keys = "unused";
  s.access_log = false;
  s.port = 0;
  FrontEndDeps deps;
  deps.keys = keys.get();
  deps.quotas = keys.get();
  deps.metrics = &fe_metrics;
  deps.balancer = &balancer;
  deps.supervisor = &supervisor;
  FrontEnd front(s, deps);
  auto port = front.Bind();
  ASSERT_TRUE(port.ok()) << port.status().message();
  std::thread listener([&] { front.Listen(); });
  const httplib::Headers good = {{"Authorization", std::string("Bearer ") + kKey}};
  const std::string body = json{{"prompt", "new\n\nlines\n\n\n"}}.dump();
  EXPECT_EQ(Post("/tokenize", body, {}, *port).first, 401);
  EXPECT_EQ(Post("/detokenize", R"({"tokens": [1]})", {}, *port).first, 401);
  auto [status, j] = Post("/tokenize", body, good, *port);
  EXPECT_EQ(status, 200) << j;
  EXPECT_EQ(j["tokens"], json({kBos, 1767, 282, 1168, 282, 198}));
  std::tie(status, j) = Post("/detokenize", R"({"tokens": [2503, 1708, 366]})", good, *port);
  EXPECT_EQ(status, 200) << j;
  EXPECT_EQ(j["prompt"], "<|begin_of_text|>Hello");
  // The replica's 400 comes back unchanged.
  std::tie(status, j) = Post("/detokenize", R"({"tokens": [99999]})", good, *port);
  EXPECT_EQ(status, 400) << j;
  EXPECT_EQ(j["error"]["param"], "tokens");
  front.Drain();
  listener.join();
  supervisor.Stop(5);
}

} // namespace
} // namespace kiln::serve
