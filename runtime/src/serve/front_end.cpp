#include "serve/front_end.h"

#include "serve/http_call.h"
#include "serve/http_common.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <thread>

namespace kiln::serve {
namespace {

// The families whose front-end samples /metrics shows, and those of the
// replicas' that it leaves out because the front end counts them for the
// whole server (every forwarded request is answered by both).
const std::vector<std::string> kOwnFamilies = {"kiln_http_requests_total",
                                               "kiln_rejections_total",
                                               "kiln_requests_in_flight",
                                               "kiln_ready",
                                               "kiln_draining",
                                               "kiln_replicas",
                                               "kiln_replica_in_flight",
                                               "kiln_replica_restarts_total",
                                               "kiln_replica_errors_total"};
const std::vector<std::string> kReplicaSkip = {
    "kiln_http_requests_total", "kiln_requests_in_flight", "kiln_draining", "kiln_reloads_total"};

std::string Who(const UpstreamCall &up) {
  return "replica " + std::to_string(up.index()) + " (pid " + std::to_string(up.pid()) + ")";
}

// What a client whose replica failed is told.
ApiError ReplicaFailed(const UpstreamCall &up, bool before_answer) {
  ApiError e;
  if (!up.aborted().empty()) {
    e = Unavailable("the request was cut off: " + up.aborted(), "draining");
    return e;
  }
  e.status = 502;
  e.type = "server_error";
  e.code = "replica_failed";
  e.message = Who(up) + " failed " + (before_answer ? "before it answered" : "while it answered") +
              " this request (" + up.error() +
              "); it is being restarted, and a retry goes to a replica that is up";
  e.retry_after_s = 1;
  return e;
}

// The client's body, asking the replica for the usage chunk of a stream
// when the client did not (the front end needs its token counts for the
// key's tpm quota and the access log; the relay then drops it). Sets
// *stream and *drop_usage.
std::string ForwardedBody(const std::string &body, nlohmann::json &j, bool *stream,
                          bool *drop_usage) {
  *stream = j.is_object() && j.contains("stream") && j["stream"] == true;
  *drop_usage = false;
  if (!*stream)
    return body;
  if (!j.contains("stream_options")) {
    j["stream_options"] = {{"include_usage", true}};
  } else {
    nlohmann::json &so = j["stream_options"];
    if (!so.is_object() || (so.contains("include_usage") && !so["include_usage"].is_boolean()))
      return body; // the replica refuses it, naming the field
    if (so.value("include_usage", false))
      return body;
    so["include_usage"] = true;
  }
  *drop_usage = true;
  return j.dump();
}

} // namespace

// Holds a forwarded request's admission (generation routes) and its
// replica's count in the balancer, until the response has been sent.
struct FrontEnd::Slot {
  FrontEnd *fe = nullptr;
  bool admitted = false;
  int replica = -1;
  std::shared_ptr<UpstreamCall> up;
  ~Slot() {
    if (up)
      fe->Unregister(up);
    if (replica >= 0)
      fe->deps_.balancer->Release(replica);
    if (admitted)
      --fe->in_flight_;
  }
};

void FrontEnd::DeclareMetrics(Metrics *m) {
  m->Declare("kiln_replicas", "gauge", "replicas of --replicas, by state: up or total", "state");
  m->Declare("kiln_replica_in_flight", "gauge", "requests forwarded to each replica, not finished",
             "replica");
  m->Declare("kiln_replica_restarts_total", "counter",
             "replicas restarted by the supervisor after they crashed", "replica");
  m->Declare("kiln_replica_errors_total", "counter",
             "requests that failed because their replica died while serving them", "replica");
}

FrontEnd::FrontEnd(const ServeSettings &settings, FrontEndDeps deps)
    : settings_(settings), deps_(deps),
      http_(std::make_unique<HttpListener>(ListenerLimitsFrom(settings), ApiErrorResponder(),
                                           deps.metrics)) {
  Routes();
}

FrontEnd::~FrontEnd() = default;

StatusOr<int> FrontEnd::Bind() { return http_->Bind(settings_.host, settings_.port); }

void FrontEnd::Listen() { http_->Run(); }

void FrontEnd::Register(const std::shared_ptr<UpstreamCall> &call) {
  std::lock_guard<std::mutex> l(calls_mu_);
  calls_.insert(call);
}

void FrontEnd::Unregister(const std::shared_ptr<UpstreamCall> &call) {
  std::lock_guard<std::mutex> l(calls_mu_);
  calls_.erase(call);
}

void FrontEnd::Forward(const httplib::Request &req, httplib::Response &res, bool generation) {
  auto call = std::make_shared<CallLog>();
  if (!Authorize(deps_.keys, deps_.quotas, deps_.metrics, settings_.access_log, req, res,
                 call.get()))
    return;
  auto slot = std::make_shared<Slot>();
  slot->fe = this;
  std::string body = req.body;
  bool stream = false, drop_usage = false;
  if (generation) {
    if (draining_) {
      deps_.metrics->Add("kiln_rejections_total", 1, "draining");
      return SendError(res, Unavailable("the server is shutting down", "draining"), call.get());
    }
    nlohmann::json j;
    if (auto e = ParseBody(req.body, &j)) {
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res, *e, call.get());
    }
    body = ForwardedBody(body, j, &stream, &drop_usage);
    if (!AdmitQuota(deps_.quotas, deps_.metrics, res, call.get()))
      return;
    if (++in_flight_ > settings_.max_queue) {
      --in_flight_;
      RefundQuota(call.get());
      deps_.metrics->Add("kiln_rejections_total", 1, "queue_full");
      return SendError(res,
                       Unavailable("the server is at its limit of " +
                                       std::to_string(settings_.max_queue) +
                                       " requests at once; retry later",
                                   "queue_full"),
                       call.get());
    }
    slot->admitted = true;
  }
  // The least-loaded replica; one that refuses the connection (it died a
  // moment ago, before the supervisor saw it) never got the request, so
  // the next one is tried.
  const int n = deps_.balancer->size();
  std::vector<bool> tried(static_cast<size_t>(n), false);
  // Names the request on its replica, so that a stream whose client left can
  // be cancelled there and still report what it consumed (CancelAndDrain).
  const std::string request_id = NewResponseId("fwd-");
  std::shared_ptr<UpstreamCall> up;
  for (;;) {
    LeastLoaded::Pick pick = deps_.balancer->Acquire(tried);
    if (pick.index < 0) {
      RefundQuota(call.get());
      deps_.metrics->Add("kiln_rejections_total", 1, "no_replica");
      return SendError(res,
                       Unavailable("no replica is ready (" +
                                       std::to_string(deps_.balancer->up_count()) + " of " +
                                       std::to_string(n) + " up; the others are restarting)",
                                   "no_replica"),
                       call.get());
    }
    slot->replica = pick.index;
    call->note = "replica=" + std::to_string(pick.index);
    up = std::make_shared<UpstreamCall>(pick.index, pick.port, pick.pid, deps_.supervisor->key(),
                                        settings_.max_request_timeout_s + 60);
    slot->up = up;
    Register(up);
    up->Start(req.method, req.path, body, {{"X-Kiln-Request-Id", request_id}});
    if (up->WaitHeaders())
      break;
    Unregister(up);
    slot->up.reset();
    deps_.balancer->Release(pick.index);
    slot->replica = -1;
    if (!up->connect_failed()) {
      if (up->aborted().empty())
        deps_.metrics->Add("kiln_replica_errors_total", 1, std::to_string(pick.index));
      return SendError(res, ReplicaFailed(*up, /*before_answer=*/true), call.get());
    }
    tried[static_cast<size_t>(pick.index)] = true;
  }
  const std::string type = up->header("Content-Type");
  if (!(stream && up->status() == 200 && type.rfind("text/event-stream", 0) == 0)) {
    std::string whole = up->WaitBody();
    if (up->failed()) {
      if (up->aborted().empty())
        deps_.metrics->Add("kiln_replica_errors_total", 1, std::to_string(up->index()));
      return SendError(res, ReplicaFailed(*up, /*before_answer=*/false), call.get());
    }
    res.status = up->status();
    call->status = res.status;
    if (const std::string retry = up->header("Retry-After"); !retry.empty())
      res.set_header("Retry-After", retry);
    if (generation && res.status == 200)
      ReadUsage(whole, &call->prompt_tokens, &call->completion_tokens);
    res.set_content(std::move(whole), type.empty() ? "application/json" : type);
    return;
  }

  // A stream: each event goes to the client as soon as it is whole. The
  // replica's keep-alive comments pass through, so a client that left is
  // found within seconds, and the replica's request is then cancelled.
  res.set_header("Cache-Control", "no-cache");
  auto relay = std::make_shared<SseRelay>(drop_usage);
  auto finished = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, up, relay, call, finished, slot, request_id](size_t, httplib::DataSink &sink) {
        std::string piece;
        for (;;) {
          piece.clear();
          const UpstreamCall::Read r =
              up->Next(&piece, UpstreamCall::Clock::now() + std::chrono::seconds(1));
          if (r == UpstreamCall::Read::kTimeout)
            continue;
          if (r == UpstreamCall::Read::kData) {
            for (const std::string &event : relay->Feed(piece))
              if (!sink.write(event.data(), event.size())) {
                call->note += " cancelled: client disconnected";
                CancelAndDrain(*up, request_id, relay.get());
                call->prompt_tokens = relay->prompt_tokens();
                call->completion_tokens = relay->completion_tokens();
                *finished = true;
                return false;
              }
            continue;
          }
          call->prompt_tokens = relay->prompt_tokens();
          call->completion_tokens = relay->completion_tokens();
          if (up->failed() || !relay->done()) {
            // The replica died mid-stream: an error event, then the end.
            if (up->aborted().empty())
              deps_.metrics->Add("kiln_replica_errors_total", 1, std::to_string(up->index()));
            const ApiError e = ReplicaFailed(*up, /*before_answer=*/false);
            const std::string event = "data: " + ErrorBody(e) + "\n\n";
            sink.write(event.data(), event.size());
            sink.write(kStreamDone, std::strlen(kStreamDone));
            call->note += " failed: " + e.code;
          }
          *finished = true;
          sink.done();
          return true;
        }
      },
      [up, finished](bool) {
        if (!*finished)
          up->Abort("the client disconnected");
      });
}

void FrontEnd::CancelAndDrain(UpstreamCall &up, const std::string &request_id, SseRelay *relay) {
  // Cancel on the replica, then read its stream to the end: the replica
  // finishes the cancelled request with a usage chunk, which the key's tpm
  // and the access log need. Cutting the connection instead would lose it.
  httplib::Client client("127.0.0.1", up.port());
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  const std::string body = nlohmann::json({{"id", request_id}}).dump();
  auto res = client.Post("/admin/cancel", {{"Authorization", "Bearer " + deps_.supervisor->key()}},
                         body, "application/json");
  if (!res || res->status != 200) {
    up.Abort("the client disconnected");
    return;
  }
  const auto deadline = UpstreamCall::Clock::now() + std::chrono::seconds(10);
  std::string piece;
  for (;;) {
    piece.clear();
    const UpstreamCall::Read r = up.Next(&piece, UpstreamCall::Clock::now() + std::chrono::seconds(1));
    if (r == UpstreamCall::Read::kData) {
      relay->Feed(piece);
      continue;
    }
    if (r == UpstreamCall::Read::kEnd)
      return;
    if (UpstreamCall::Clock::now() >= deadline) {
      up.Abort("the client disconnected");
      return;
    }
  }
}

bool FrontEnd::Ready() {
  for (int i = 0; i < deps_.balancer->size(); ++i) {
    if (!deps_.balancer->up(i))
      continue;
    const ReplicaSupervisor::View v = deps_.supervisor->Replica(i);
    httplib::Client client("127.0.0.1", v.port);
    client.set_connection_timeout(2);
    client.set_read_timeout(15);
    auto res = client.Get("/ready", {{"Authorization", "Bearer " + deps_.supervisor->key()}});
    if (res && res->status == 200)
      return true;
  }
  return false;
}

std::string FrontEnd::RenderMetrics() {
  Metrics &m = *deps_.metrics;
  const int n = deps_.balancer->size();
  m.Set("kiln_requests_in_flight", in_flight_);
  m.Set("kiln_replicas", deps_.balancer->up_count(), "up");
  m.Set("kiln_replicas", n, "total");
  std::vector<std::pair<int, std::string>> replicas;
  for (int i = 0; i < n; ++i) {
    m.Set("kiln_replica_in_flight", deps_.balancer->in_flight(i), std::to_string(i));
    if (!deps_.balancer->up(i))
      continue;
    httplib::Client client("127.0.0.1", deps_.supervisor->Replica(i).port);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    auto res = client.Get("/metrics", {{"Authorization", "Bearer " + deps_.supervisor->key()}});
    if (res && res->status == 200)
      replicas.emplace_back(i, res->body);
  }
  return MergeExpositions(m.Render(), kOwnFamilies, replicas, kReplicaSkip);
}

void FrontEnd::Routes() {
  using httplib::Request;
  using httplib::Response;
  // Liveness of the front end; 503 once every replica has been given up on
  // (nothing can serve, so whatever runs kiln serve should restart it).
  http_->Get(
      "/health",
      [this](const Request &, Response &res) {
        if (deps_.supervisor->Serviceable())
          return res.set_content("{\"status\":\"ok\"}", "application/json");
        SendError(res,
                  Unavailable("every replica crashed repeatedly and was given up on", "no_replica"),
                  nullptr);
      },
      /*run_inline=*/true);
  http_->Get("/ready", [this](const Request &req, Response &res) {
    CallLog call;
    if (!Authorize(deps_.keys, deps_.quotas, deps_.metrics, settings_.access_log, req, res, &call))
      return;
    const bool ready = !draining_ && Ready();
    deps_.metrics->Set("kiln_ready", ready ? 1 : 0);
    if (!ready)
      return SendError(res,
                       Unavailable(draining_ ? "the server is draining" : "no replica is ready",
                                   draining_ ? "draining" : "no_replica"),
                       &call);
    res.set_content("{\"status\":\"ready\"}", "application/json");
  });
  http_->Get("/metrics", [this](const Request &req, Response &res) {
    CallLog call;
    call.access_log = false; // scraped every few seconds
    if (!Authorize(deps_.keys, deps_.quotas, deps_.metrics, false, req, res, &call))
      return;
    res.set_content(RenderMetrics(), "text/plain; version=0.0.4");
  });
  http_->Get("/v1/models", [this](const Request &req, Response &res) { Forward(req, res, false); });
  http_->Get(R"(/v1/models/(.+))",
             [this](const Request &req, Response &res) { Forward(req, res, false); });
  // /tokenize and /detokenize go to a replica too, which has the plan's
  // tokenizer and template; like embeddings, they are admitted under the
  // key's rpm and concurrency here (no tokens are charged: no usage comes back).
  for (const char *route :
       {"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/tokenize", "/detokenize"})
    http_->Post(route, [this](const Request &req, Response &res) { Forward(req, res, true); });
  http_->Post("/admin/reload", [this](const Request &req, Response &res) {
    CallLog call;
    if (!Authorize(deps_.keys, deps_.quotas, deps_.metrics, settings_.access_log, req, res, &call))
      return;
    ApiError e;
    e.status = 409;
    e.type = "conflict";
    e.code = "cannot_reload";
    e.message = "under --replicas the plan cannot be switched: every replica would need it; "
                "restart kiln serve with the new plan";
    SendError(res, e, &call);
  });
}

void FrontEnd::Drain() {
  if (draining_.exchange(true))
    return;
  deps_.metrics->Set("kiln_draining", 1);
  std::fprintf(stderr, "kiln serve: draining: no new requests; %d in flight, up to %gs\n",
               in_flight_.load(), settings_.drain_timeout_s);
  http_->Stop();
  const DrainDeadlines d = DrainDeadlinesFrom(settings_);
  const auto end = d.end;
  const auto grace = d.end - d.cancel;
  while ((in_flight_ > 0 || http_->busy() > 0) && std::chrono::steady_clock::now() < end - grace)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (in_flight_ > 0) {
    std::lock_guard<std::mutex> l(calls_mu_);
    std::fprintf(stderr, "kiln serve: drain deadline: cutting off %d requests\n",
                 in_flight_.load());
    for (const std::shared_ptr<UpstreamCall> &up : calls_)
      up->Abort("the server's drain deadline passed");
  }
  while (http_->busy() > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (http_->busy() > 0)
    http_->Abort();
}

} // namespace kiln::serve
