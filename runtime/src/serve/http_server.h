// The HTTP front end of `kiln serve` (HttpListener): routes, the auth
// boundary, quotas, admission, access log, and drain on shutdown. Request
// bodies are parsed by openai_request, responses built by openai_response,
// and generation runs on the EngineLoop's thread.
#pragma once

#include "kiln/pipeline.h"
#include "serve/api_error.h"
#include "serve/auth.h"
#include "serve/engine_loop.h"
#include "serve/http_call.h"
#include "serve/http_listener.h"
#include "serve/metrics.h"
#include "serve/openai_request.h"
#include "serve/settings.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

// Renders chat messages into a prompt with the plan's template;
// add_generation_prompt opens the assistant's turn (chat completions always
// do; /tokenize lets the client choose).
using ChatRenderer = std::function<StatusOr<std::string>(const nlohmann::json &messages,
                                                         bool add_generation_prompt)>;
// Embeds texts (or token-id lists) with an encoder plan: one vector each,
// and the tokens used.
struct Embeddings {
  std::vector<std::vector<float>> vectors;
  int64_t tokens = 0;
};
using Embedder = std::function<StatusOr<Embeddings>(const EmbeddingJob &job)>;

// One plan being served: what the routes need of it. A request takes the
// current one when it starts and keeps it to its end, so a plan switched
// away from (Reload) finishes what it accepted; `owner` holds the plan,
// pipeline, engine loop or embedder, and dropping the last reference stops
// its engine.
struct ServedModel {
  std::string name;             // the model id of responses and /v1/models
  std::string plan_path;        // "" when not loaded from a file
  EngineLoop *engine = nullptr; // null for an encoder plan
  // A decoder's, or an encoder's (for /tokenize); null: the plan has none.
  const Tokenizer *tokenizer = nullptr;
  RequestParams defaults;
  int64_t context_length = 0;
  ChatRenderer chat; // null: the plan has no chat template
  Embedder embed;    // null: not an encoder plan
  std::shared_ptr<void> owner;
};
// Loads `plan_path` beside the served plan: started, and past a readiness
// check of its own (a real engine step, or an embedding), or an error.
using ModelLoader =
    std::function<StatusOr<std::shared_ptr<ServedModel>>(const std::string &plan_path)>;

struct ServerDeps {
  std::shared_ptr<ServedModel> model;
  ModelLoader loader;             // null: the plan cannot be switched (e.g. --tp)
  std::string no_reload_reason;   // why, when loader is null
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
  // Switches to the plan at `plan_path` ("" : the served plan's file, read
  // again): it is loaded beside the served one and must pass its readiness
  // check before new requests go to it; requests already accepted finish on
  // the old one. On failure the old plan keeps serving and the error says
  // why. `rollback`: switch back to the plan served before the last switch.
  // One switch at a time; the admin route and SIGHUP both call this.
  StatusOr<std::shared_ptr<const ServedModel>> Reload(const std::string &plan_path,
                                                      bool rollback = false);
  // The plan new requests go to.
  std::shared_ptr<const ServedModel> Model() const;

private:
  using Call = CallLog; // one request's auth, quota and log state
  void Routes();
  bool Authorize(const httplib::Request &req, httplib::Response &res, Call *call);
  void Completions(const httplib::Request &req, httplib::Response &res, Endpoint endpoint);
  void EmbeddingsRoute(const httplib::Request &req, httplib::Response &res);
  // /tokenize and /detokenize (tokenize.cpp): the served plan's tokenizer,
  // on the request thread; the engine is not involved.
  void TokenizeRoute(const httplib::Request &req, httplib::Response &res);
  void DetokenizeRoute(const httplib::Request &req, httplib::Response &res);
  void ReloadRoute(const httplib::Request &req, httplib::Response &res);
  // 403 not_admin (naming `what` it may not do) unless the caller's key is
  // an admin key or the server has no keys.
  bool RequireAdmin(httplib::Response &res, Call *call, const char *what);
  void CancelRoute(const httplib::Request &req, httplib::Response &res);
  std::string ModelsBody(const ServedModel &m) const;

  ServeSettings settings_;
  ServerDeps deps_;
  mutable std::mutex model_mu_;              // guards deps_.model and previous_path_
  std::mutex reload_mu_;                     // one Reload at a time
  std::string previous_path_;                // the plan served before the last switch
  std::unique_ptr<HttpListener> http_;
  std::atomic<bool> draining_{false};
  std::atomic<int> active_{0}; // handlers and streams not finished
  // Streams an admin caller (the --replicas front end) named with
  // X-Kiln-Request-Id, so that /admin/cancel can end them.
  struct Cancellable {
    std::weak_ptr<RequestStream> stream;
    EngineLoop *engine = nullptr;
  };
  std::mutex cancel_mu_;
  std::map<std::string, Cancellable> cancellable_;
  int64_t created_ = 0;
};

} // namespace kiln::serve
