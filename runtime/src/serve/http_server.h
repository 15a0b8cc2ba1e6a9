// The HTTP front end of `kiln serve` (cpp-httplib): routes, the auth
// boundary, quotas, admission, access log, and drain on shutdown. Request
// bodies are parsed by openai_request, responses built by openai_response,
// and generation runs on the EngineLoop's thread.
#pragma once

#include "kiln/pipeline.h"
#include "serve/api_error.h"
#include "serve/auth.h"
#include "serve/engine_loop.h"
#include "serve/http_call.h"
#include "serve/metrics.h"
#include "serve/openai_request.h"
#include "serve/settings.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

// Renders chat messages into a prompt with the plan's template.
using ChatRenderer = std::function<StatusOr<std::string>(const nlohmann::json &messages)>;
// Embeds texts (or token-id lists) with an encoder plan: one vector each,
// and the tokens used.
struct Embeddings {
  std::vector<std::vector<float>> vectors;
  int64_t tokens = 0;
};
using Embedder = std::function<StatusOr<Embeddings>(const EmbeddingJob &job)>;

struct ServerDeps {
  std::string model_name;
  EngineLoop *engine = nullptr; // null for an encoder plan
  const Tokenizer *tokenizer = nullptr;
  RequestParams defaults;
  int64_t context_length = 0;
  ChatRenderer chat;              // null: the plan has no chat template
  Embedder embed;                 // null: not an encoder plan
  const KeyStore *keys = nullptr; // null: no auth (allow_no_auth)
  KeyStore *quotas = nullptr;     // the same store, for quotas
  Metrics *metrics = nullptr;
};

class HttpServer {
public:
  HttpServer(const ServeSettings &settings, ServerDeps deps);
  ~HttpServer();

  // Binds the listening socket; returns the port (useful with port 0).
  StatusOr<int> Bind();
  // Serves until Drain finishes; returns when every accepted request ended.
  void Listen();
  // Stops accepting, lets accepted requests finish for drain_timeout_s,
  // then cancels the rest. Safe to call from any thread, once or more.
  void Drain();

private:
  using Call = CallLog; // one request's auth, quota and log state
  void Routes();
  bool Authorize(const httplib::Request &req, httplib::Response &res, Call *call);
  void SendError(httplib::Response &res, const ApiError &e, Call *call);
  void Completions(const httplib::Request &req, httplib::Response &res, Endpoint endpoint);
  void EmbeddingsRoute(const httplib::Request &req, httplib::Response &res);
  std::string ModelsBody() const;

  ServeSettings settings_;
  ServerDeps deps_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> listen_returned_{false};
  int listen_fd_ = -1;                      // the listening socket, once bound
  static constexpr int kListenBacklog = 1024; // the kernel caps it at somaxconn
  std::atomic<int> active_{0}; // handlers and streams not finished
  int64_t created_ = 0;
};

} // namespace kiln::serve
