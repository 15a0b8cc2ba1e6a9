#include "serve/http_server.h"

#include "serve/api_error.h"
#include "serve/http_call.h"
#include "serve/http_common.h"
#include "serve/openai_response.h"

#include <httplib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

namespace kiln::serve {

namespace {

// A field of the access log: bytes outside printable ASCII (a URL's
// decoded control bytes, a newline that would forge a line) as \xNN.
std::string LogField(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    }
  }
  return out;
}

} // namespace

CallLog::~CallLog() {
  const auto now = std::chrono::steady_clock::now();
  if (quota_held && quotas != nullptr)
    quotas->Release(key, prompt_tokens + completion_tokens, now);
  if (metrics != nullptr)
    metrics->Add("kiln_http_requests_total", 1, std::to_string(status));
  if (access_log) {
    // Key ids and counts only: prompts and completions are never logged here.
    const double ms = std::chrono::duration<double, std::milli>(now - start).count();
    std::fprintf(stderr,
                 "kiln serve: key=%s %s %s %d %.1fms prompt_tokens=%lld "
                 "completion_tokens=%lld%s%s\n",
                 LogField(key_id).c_str(), LogField(method).c_str(), LogField(path).c_str(),
                 status, ms, static_cast<long long>(prompt_tokens),
                 static_cast<long long>(completion_tokens), note.empty() ? "" : " ",
                 LogField(note).c_str());
  }
}

HttpServer::HttpServer(const ServeSettings &settings, ServerDeps deps)
    : settings_(settings), deps_(std::move(deps)),
      http_(std::make_unique<HttpListener>(ListenerLimitsFrom(settings), ApiErrorResponder(),
                                           deps_.metrics)) {
  created_ = static_cast<int64_t>(std::time(nullptr));
  Routes();
}

HttpServer::~HttpServer() = default;

bool HttpServer::Authorize(const httplib::Request &req, httplib::Response &res, Call *call) {
  return serve::Authorize(deps_.keys, deps_.quotas, deps_.metrics, settings_.access_log, req, res,
                          call);
}

std::string HttpServer::ModelsBody(const ServedModel &model) const {
  nlohmann::ordered_json m = {
      {"id", model.name}, {"object", "model"}, {"created", created_}, {"owned_by", "kiln"}};
  return Dump({{"object", "list"}, {"data", nlohmann::ordered_json::array({m})}});
}

std::shared_ptr<const ServedModel> HttpServer::Model() const {
  std::lock_guard<std::mutex> l(model_mu_);
  return deps_.model;
}

StatusOr<std::shared_ptr<const ServedModel>> HttpServer::Reload(const std::string &plan_path,
                                                                bool rollback) {
  std::lock_guard<std::mutex> one(reload_mu_);
  if (!deps_.loader)
    return Status(StatusCode::kUnimplemented,
                  "this server cannot switch plans: " + deps_.no_reload_reason);
  if (draining_)
    return Status(StatusCode::kUnimplemented, "the server is draining");
  std::string path = plan_path;
  {
    std::lock_guard<std::mutex> l(model_mu_);
    if (rollback && previous_path_.empty())
      return Status(StatusCode::kUnimplemented, "no earlier plan to roll back to");
    if (rollback)
      path = previous_path_;
    else if (path.empty())
      path = deps_.model->plan_path;
  }
  if (path.empty())
    return InvalidArgument("give the plan to switch to");
  // Only a regular file, checked without blocking: opening a FIFO for
  // reading would wait for a writer, and hold every later reload and the
  // shutdown behind it.
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    const bool regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    const std::string why = fd < 0 ? std::string("cannot open the plan '") + path +
                                         "': " + std::strerror(errno)
                                   : "the plan '" + path + "' is not a regular file";
    if (fd >= 0)
      ::close(fd);
    if (!regular) {
      deps_.metrics->Add("kiln_reloads_total", 1, "failed");
      std::fprintf(stderr, "kiln serve: '%s' not switched to, the served plan stays: %s\n",
                   path.c_str(), why.c_str());
      return InvalidArgument(why);
    }
  }
  std::fprintf(stderr, "kiln serve: loading '%s' beside the served plan\n", path.c_str());
  auto next = deps_.loader(path);
  if (!next.ok()) {
    deps_.metrics->Add("kiln_reloads_total", 1, "failed");
    std::fprintf(stderr, "kiln serve: '%s' not switched to, the served plan stays: %s\n",
                 path.c_str(), next.status().message().c_str());
    return next.status();
  }
  std::shared_ptr<ServedModel> old;
  {
    std::lock_guard<std::mutex> l(model_mu_);
    old = deps_.model;
    deps_.model = *next;
    previous_path_ = old->plan_path;
  }
  deps_.metrics->Add("kiln_reloads_total", 1, "ok");
  std::fprintf(stderr, "kiln serve: now serving '%s' from '%s'; '%s' finishes its %d requests\n",
               (*next)->name.c_str(), path.c_str(), old->name.c_str(),
               old->engine ? old->engine->in_flight() : 0);
  return std::shared_ptr<const ServedModel>(*next);
}

bool HttpServer::RequireAdmin(httplib::Response &res, Call *call, const char *what) {
  if (deps_.keys == nullptr || deps_.keys->key(call->key).admin)
    return true;
  ApiError e;
  e.status = 403;
  e.type = "permission_error";
  e.code = "not_admin";
  e.message = "key '" + call->key_id + "' may not " + what + " (\"admin\": true in the keys file)";
  SendError(res, e, call);
  return false;
}

void HttpServer::ReloadRoute(const httplib::Request &req, httplib::Response &res) {
  Call call;
  if (!Authorize(req, res, &call))
    return;
  if (!RequireAdmin(res, &call, "switch plans"))
    return;
  nlohmann::json body = nlohmann::json::object();
  if (!req.body.empty()) {
    if (auto e = ParseBody(req.body, &body))
      return SendError(res, *e, &call);
  }
  if (!body.is_object())
    return SendError(res, BadRequest("the body must be a JSON object"), &call);
  for (auto it = body.begin(); it != body.end(); ++it)
    if (it.key() != "plan" && it.key() != "rollback")
      return SendError(res, BadRequest("unknown field '" + it.key() + "' (plan, rollback)", it.key()),
                       &call);
  if (body.contains("plan") && !body["plan"].is_string())
    return SendError(res, BadRequest("plan must be a file path", "plan"), &call);
  if (body.contains("rollback") && !body["rollback"].is_boolean())
    return SendError(res, BadRequest("rollback must be true or false", "rollback"), &call);
  const bool rollback = body.value("rollback", false);
  if (rollback && body.contains("plan"))
    return SendError(res, BadRequest("give plan or rollback, not both", "plan"), &call);
  auto switched = Reload(body.value("plan", std::string()), rollback);
  if (!switched.ok()) {
    ApiError e;
    const bool state = switched.status().code() == StatusCode::kUnimplemented;
    e.status = state ? 409 : 422;
    e.type = state ? "conflict" : "invalid_request_error";
    e.code = state ? "cannot_reload" : "plan_not_ready";
    e.message = switched.status().message() + (state ? "" : "; the served plan stays");
    return SendError(res, e, &call);
  }
  res.set_content(Dump({{"object", "reload"},
                        {"model", (*switched)->name},
                        {"plan", (*switched)->plan_path}}),
                  "application/json");
}

void HttpServer::CancelRoute(const httplib::Request &req, httplib::Response &res) {
  Call call;
  if (!Authorize(req, res, &call))
    return;
  if (!RequireAdmin(res, &call, "cancel requests"))
    return;
  nlohmann::json body;
  if (auto e = ParseBody(req.body, &body))
    return SendError(res, *e, &call);
  if (!body.is_object() || !body.contains("id") || !body["id"].is_string() || body.size() != 1)
    return SendError(res, BadRequest("the body must be {\"id\": STRING}", "id"), &call);
  Cancellable target;
  {
    std::lock_guard<std::mutex> l(cancel_mu_);
    auto it = cancellable_.find(body["id"].get<std::string>());
    if (it != cancellable_.end())
      target = it->second;
  }
  std::shared_ptr<RequestStream> stream = target.stream.lock();
  if (stream == nullptr) {
    ApiError e;
    e.status = 404;
    e.code = "not_found";
    e.message = "no stream with that id is running";
    return SendError(res, e, &call);
  }
  // The stream then ends as a finished one does, with its usage chunk.
  target.engine->Cancel(*stream, "disconnect");
  res.set_content("{\"cancelled\":true}", "application/json");
}

void HttpServer::Routes() {
  using httplib::Request;
  using httplib::Response;
  // Liveness: the process answers. The only route without a key; answered
  // on the listener's own thread, so it answers while every worker is busy.
  http_->Get(
      "/health",
      [](const Request &, Response &res) {
        res.set_content("{\"status\":\"ok\"}", "application/json");
      },
      /*run_inline=*/true);
  http_->Get("/ready", [this](const Request &req, Response &res) {
    Call call;
    if (!Authorize(req, res, &call))
      return;
    const auto model = Model();
    bool ready = !draining_ &&
                 (model->engine == nullptr || model->engine->Ready(std::chrono::milliseconds(10000)));
    deps_.metrics->Set("kiln_ready", ready ? 1 : 0);
    if (!ready) {
      ApiError e;
      e.status = 503;
      e.type = "service_unavailable";
      e.message = draining_ ? "the server is draining" : "the engine failed its readiness step";
      e.retry_after_s = 1;
      SendError(res, e, &call);
      return;
    }
    res.set_content("{\"status\":\"ready\"}", "application/json");
  });
  http_->Get("/metrics", [this](const Request &req, Response &res) {
    Call call;
    call.access_log = false; // scraped every few seconds
    if (!Authorize(req, res, &call))
      return;
    if (const auto model = Model(); model->engine)
      deps_.metrics->Set("kiln_requests_in_flight", model->engine->in_flight());
    res.set_content(deps_.metrics->Render(), "text/plain; version=0.0.4");
  });
  http_->Get("/v1/models", [this](const Request &req, Response &res) {
    Call call;
    if (!Authorize(req, res, &call))
      return;
    res.set_content(ModelsBody(*Model()), "application/json");
  });
  http_->Get(R"(/v1/models/(.+))", [this](const Request &req, Response &res) {
    Call call;
    if (!Authorize(req, res, &call))
      return;
    const auto model = Model();
    if (req.matches[1] != model->name) {
      ApiError e;
      e.status = 404;
      e.code = "model_not_found";
      e.message = "the model '" + std::string(req.matches[1]) + "' does not exist";
      SendError(res, e, &call);
      return;
    }
    res.set_content(Dump({{"id", model->name},
                          {"object", "model"},
                          {"created", created_},
                          {"owned_by", "kiln"}}),
                    "application/json");
  });
  http_->Post("/v1/completions", [this](const Request &req, Response &res) {
    Completions(req, res, Endpoint::kCompletions);
  });
  http_->Post("/v1/chat/completions", [this](const Request &req, Response &res) {
    Completions(req, res, Endpoint::kChat);
  });
  http_->Post("/v1/embeddings",
              [this](const Request &req, Response &res) { EmbeddingsRoute(req, res); });
  http_->Post("/tokenize", [this](const Request &req, Response &res) { TokenizeRoute(req, res); });
  http_->Post("/detokenize",
              [this](const Request &req, Response &res) { DetokenizeRoute(req, res); });
  http_->Post("/admin/reload", [this](const Request &req, Response &res) { ReloadRoute(req, res); });
  http_->Post("/admin/cancel", [this](const Request &req, Response &res) { CancelRoute(req, res); });
}

StatusOr<int> HttpServer::Bind() { return http_->Bind(settings_.host, settings_.port); }

void HttpServer::Listen() { http_->Run(); }

void HttpServer::Drain() {
  if (draining_.exchange(true))
    return;
  deps_.metrics->Set("kiln_draining", 1);
  const auto model = Model();
  EngineLoop *engine = model->engine;
  std::fprintf(stderr, "kiln serve: draining: no new requests; %d in flight, up to %gs\n",
               engine ? engine->in_flight() : 0, settings_.drain_timeout_s);
  // No new connections; idle ones and those still sending a request close
  // now. Accepted requests run to the deadline, then are cancelled; a
  // response whose client does not read it is cut a second later.
  http_->Stop();
  const DrainDeadlines d = DrainDeadlinesFrom(settings_);
  const auto end = d.end;
  const auto grace = d.end - d.cancel;
  auto busy = [&] { return (engine != nullptr && engine->in_flight() > 0) || http_->busy() > 0; };
  while (busy() && std::chrono::steady_clock::now() < end - grace)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (engine != nullptr && engine->in_flight() > 0) {
    std::fprintf(stderr, "kiln serve: drain deadline: cancelling %d requests\n",
                 engine->in_flight());
    engine->CancelAll("drain");
  }
  while (http_->busy() > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (http_->busy() > 0) {
    std::fprintf(stderr, "kiln serve: drain deadline: cutting %d connections off\n",
                 http_->busy());
    http_->Abort();
  }
}

} // namespace kiln::serve
