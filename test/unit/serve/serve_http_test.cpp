// The HTTP server in-process, on a toy decoder plan (the runtime tests' sum
// decoder with a tokenizer whose token i reads "<i>"), driven by
// cpp-httplib's client: routes, auth, quotas, SSE, admission and errors. The
// runtime-only build has no plan builder, so this is its test of the server;
// test/e2e/serve.py runs the real `kiln serve` on a real model.
#include "serve/auth.h"
#include "serve/engine_loop.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "test/unit/runtime/test_models.h"
#include "test/unit/runtime/test_plan.h"

#include <gtest/gtest.h>

#include <csignal>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace kiln::serve {
namespace {

// httplib's client sends without MSG_NOSIGNAL: a server that closes while a
// test client still sends (an early 413) must fail that call, not kill the
// test program. kiln serve itself ignores SIGPIPE (serve/serve.cpp).
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

using json = nlohmann::json;
constexpr int kVocab = 64;

class ServeHttp : public ::testing::Test {
protected:
  // With listen false, the socket is bound but nothing accepts until Listen().
  void Start(ServeSettings settings, std::vector<ApiKey> keys = {}, bool listen = true) {
    test::TestPlan toy = test::BuildSumDecoder(/*with_kv=*/true, kVocab);
    toy.tokenizer_json = test::AngleTokenizerJson(kVocab);
    toy.context_length = 48;
    const std::string path = test::TempPath("serve_toy.plan");
    ASSERT_EQ(toy.Write(path), "");
    auto pipe = Pipeline::Open(path);
    ASSERT_TRUE(pipe.ok()) << pipe.status().message();
    pipe_ = std::move(*pipe);
    EngineLoop::Options eo;
    eo.max_queue = settings.max_queue;
    engine_ = std::make_unique<EngineLoop>(pipe_.get(), eo, &metrics_);
    engine_->Start();
    ASSERT_TRUE(engine_->Ready(std::chrono::milliseconds(30000)));
    if (!keys.empty())
      keys_ = KeyStore::FromKeys(keys);
    ServerDeps deps;
    auto model = std::make_shared<ServedModel>();
    model->name = "toy";
    model->engine = engine_.get();
    model->tokenizer = pipe_->tokenizer();
    model->defaults = pipe_->DefaultParams();
    model->context_length = pipe_->context_length();
    deps.model = model;
    deps.keys = keys_.get();
    deps.quotas = keys_.get();
    deps.metrics = &metrics_;
    settings.port = 0;
    server_ = std::make_unique<HttpServer>(settings, std::move(deps));
    auto port = server_->Bind();
    ASSERT_TRUE(port.ok());
    port_ = *port;
    if (listen)
      Listen();
  }

  void Listen() { thread_ = std::thread([this] { server_->Listen(); }); }

  void TearDown() override {
    if (server_) {
      server_->Drain();
      if (thread_.joinable())
        thread_.join();
    }
    if (engine_)
      engine_->Stop();
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c;
  }

  static ServeSettings Open() {
    ServeSettings s;
    s.allow_no_auth = true;
    s.access_log = false;
    return s;
  }

  Metrics metrics_;
  std::unique_ptr<Pipeline> pipe_;
  std::unique_ptr<EngineLoop> engine_;
  std::unique_ptr<KeyStore> keys_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ServeHttp, CompletionWholeAndStreamed) {
  ASSERT_NO_FATAL_FAILURE(Start(Open()));
  auto c = Client();
  // Greedy: the toy decoder's next token is the sum of what it has seen.
  const json body = {{"prompt", json::array({1, 2})}, {"max_tokens", 3}, {"temperature", 0},
                     {"ignore_eos", true}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  std::string want;
  for (int32_t id : test::SumDecoderReference({1, 2}, true, kVocab, 3))
    want += "<" + std::to_string(id) + ">";
  EXPECT_EQ(j["choices"][0]["text"], want);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);

  json sbody = body;
  sbody["stream"] = true;
  sbody["stream_options"] = {{"include_usage", true}};
  r = c.Post("/v1/completions", sbody.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::string text, finish;
  json usage;
  size_t pos = 0;
  int events = 0;
  bool done = false;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    ++events;
    if (data == "[DONE]") {
      done = true;
      break;
    }
    json e = json::parse(data);
    if (!e["choices"].empty()) {
      text += e["choices"][0]["text"].get<std::string>();
      if (!e["choices"][0]["finish_reason"].is_null())
        finish = e["choices"][0]["finish_reason"];
    }
    if (e.contains("usage"))
      usage = e["usage"];
  }
  EXPECT_TRUE(done);
  EXPECT_GE(events, 4);
  EXPECT_EQ(text, want);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 3);
}

TEST_F(ServeHttp, StopStringAcrossTokensAndN) {
  ASSERT_NO_FATAL_FAILURE(Start(Open()));
  auto c = Client();
  const auto ref = test::SumDecoderReference({1, 2}, true, kVocab, 6);
  std::string full;
  for (int32_t id : ref)
    full += "<" + std::to_string(id) + ">";
  // From inside the second token to inside the fourth.
  const std::string second = "<" + std::to_string(ref[1]) + ">";
  const size_t at = full.find(second) + 1;
  const std::string stop = full.substr(at, full.find('>', full.find('>', at) + 1) + 2 - at);
  json body = {{"prompt", json::array({1, 2})}, {"max_tokens", 6},  {"temperature", 0},
               {"ignore_eos", true},            {"stop", stop},     {"n", 2}};
  auto r = Client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["text"], full.substr(0, at)) << "stop " << stop;
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServeHttp, ErrorsInOpenAiShape) {
  ASSERT_NO_FATAL_FAILURE(Start(Open()));
  auto c = Client();
  auto r = c.Post("/v1/completions", R"({"prompt": [1], "bogus": 1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["param"], "bogus");
  EXPECT_EQ(e["type"], "invalid_request_error");
  r = c.Post("/v1/completions", R"({"prompt": )", "application/json");
  EXPECT_EQ(r->status, 400);
  r = c.Post("/v1/completions", std::string("{\"prompt\": \"\xff\"}"), "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("UTF-8"), std::string::npos) << r->body;
  // A prompt past the context: the engine refuses it, the client gets a 400.
  json longp = {{"prompt", std::vector<int>(60, 1)}, {"max_tokens", 1}};
  r = c.Post("/v1/completions", longp.dump(), "application/json");
  EXPECT_EQ(r->status, 400) << r->body;
  r = c.Post("/v1/completions", std::string(5 << 20, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(json::parse(r->body).contains("error"));
  r = c.Get("/nowhere");
  EXPECT_EQ(r->status, 404);
  r = c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})",
             "application/json");
  EXPECT_EQ(r->status, 400); // the toy plan has no template
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/ready")->status, 200);
  EXPECT_GT(metrics_.Get("kiln_rejections_total", "bad_request"), 0);
}

TEST_F(ServeHttp, KeysAndQuotas) {
  ApiKey k;
  k.id = "alice";
  const std::string key = "kiln-test-key";
  const std::string hex = HashApiKey(key);
  for (int i = 0; i < 32; ++i)
    k.hash[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  k.rpm = 2;
  ServeSettings s = Open();
  s.allow_no_auth = false;
  s.api_keys = "unused";
  ASSERT_NO_FATAL_FAILURE(Start(s, {k}));
  auto c = Client();
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  httplib::Headers wrong = {{"Authorization", "Bearer kiln-test-kez"}};
  EXPECT_EQ(c.Get("/v1/models", wrong)->status, 401);
  httplib::Headers good = {{"Authorization", "Bearer " + key}};
  auto r = c.Get("/v1/models", good);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "toy");
  EXPECT_EQ(c.Get("/metrics", good)->status, 200);
  const std::string body = R"({"prompt": [1], "max_tokens": 1})";
  EXPECT_EQ(c.Post("/v1/completions", good, body, "application/json")->status, 200);
  EXPECT_EQ(c.Post("/v1/completions", good, body, "application/json")->status, 200);
  r = c.Post("/v1/completions", good, body, "application/json");
  EXPECT_EQ(r->status, 429);
  EXPECT_GE(std::stoi(r->get_header_value("Retry-After")), 1);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "rate_limit_rpm");
}

// A request's place in the queue is free by the time its last response can
// be read: a client that reads one answer and sends the next at once is
// never refused as queue_full (the engine used to publish the final event
// first and free the place after, a window a loaded machine hit).
TEST_F(ServeHttp, QueuePlaceFreeWhenLastResponseIsRead) {
  ServeSettings s;
  s.max_queue = 1;
  Start(s);
  for (int i = 0; i < 200; ++i) {
    Request r;
    r.prompt_ids = {1, 2};
    r.params.max_new_tokens = 1 + i % 3;
    r.params.sampling.temperature = 0;
    std::vector<Request> prompts;
    prompts.push_back(r);
    auto stream = engine_->Submit(std::move(prompts), nullptr);
    ASSERT_TRUE(stream.ok()) << "request " << i << ": " << stream.status().message();
    ChoiceEvent ev;
    RequestStream::Next next;
    while ((next = (*stream)->Pop(Clock::now() + std::chrono::seconds(30), &ev)) ==
           RequestStream::Next::kEvent) {
      if (ev.final)
        ASSERT_EQ(engine_->in_flight(), 0) << "request " << i << ": final event read";
    }
    ASSERT_EQ(next, RequestStream::Next::kDone) << "request " << i;
  }
}

TEST_F(ServeHttp, QueueFullAndDisconnect) {
  ServeSettings s = Open();
  s.max_queue = 1;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  // A stream that stays open: its reader stops after the first event.
  std::atomic<bool> got_first{false};
  std::thread streamer([&] {
    auto c = Client();
    json body = {{"prompt", json::array({1})}, {"max_tokens", 40}, {"ignore_eos", true},
                 {"stream", true}, {"temperature", 0}};
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char *, size_t, uint64_t, uint64_t) {
      got_first = true;
      return false; // hang up
    };
    c.send(req);
  });
  for (int i = 0; i < 3000 && !got_first; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Its slot is taken until the engine sees the cancel; either way the
  // server answers at once, and the disconnect is counted.
  streamer.join();
  for (int i = 0; i < 3000 && engine_->in_flight() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(engine_->in_flight(), 0);
  // On a loaded machine the toy plan can finish all 40 tokens before the
  // server's next write sees the hang-up, so either end is counted here;
  // e2e_serve_overload checks the cancel itself on the demo plan.
  const double cancelled = metrics_.Get("kiln_requests_finished_total", "cancelled");
  const double finished = metrics_.Get("kiln_requests_finished_total", "length");
  EXPECT_GE(cancelled + finished, 1);
}


TEST_F(ServeHttp, PortInUseIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start(Open()));
  ServeSettings s = Open();
  s.port = port_;
  ServerDeps deps;
  deps.model = std::make_shared<ServedModel>();
  deps.model->name = "toy";
  deps.metrics = &metrics_;
  HttpServer second(s, std::move(deps));
  auto bound = second.Bind();
  ASSERT_FALSE(bound.ok()) << "a second server bound port " << port_;
  EXPECT_NE(bound.status().message().find("in use"), std::string::npos);
}

// A burst of connections, all queued before the server accepts any: every
// one is answered at once. With httplib's own listen backlog of 5, the kernel
// dropped the handshakes past it, and those clients waited for retransmits.
TEST_F(ServeHttp, BurstOfConnectionsAllAnswered) {
  ASSERT_NO_FATAL_FAILURE(Start(Open(), {}, /*listen=*/false));
  constexpr int kClients = 200;
  struct Sockets {
    std::vector<int> fds;
    ~Sockets() {
      for (int fd : fds)
        close(fd);
    }
  } sockets;
  std::vector<int> &fds = sockets.fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kClients; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    timeval limit{10, 0}; // connect waits at most this (a full backlog drops the SYN)
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    fds.push_back(fd);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0)
        << "connection " << i << " of " << kClients << ": " << std::strerror(errno);
  }
  const std::string get = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int fd : fds)
    ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  Listen();
  int answered = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int fd : fds) {
    std::string got;
    char buf[512];
    while (got.find("\r\n") == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0)
        break;
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0)
        break;
      got.append(buf, static_cast<size_t>(n));
    }
    answered += got.rfind("HTTP/1.1 200", 0) == 0;
  }
  EXPECT_EQ(answered, kClients);
}

} // namespace
} // namespace kiln::serve
