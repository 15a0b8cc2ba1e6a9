// The HTTP front end of `kiln serve --replicas N` (docs/serve.md#replicas).
// It keeps everything that concerns a client: the auth boundary, key
// quotas, the bounded admission queue, the body limit, the access log,
// /health, /ready and /metrics, and drain. Generation requests go to the
// least-loaded replica that is up (replica_balancer.h) and its answer comes
// back as it is written; a replica that dies mid-request gives that request
// an error naming it (502, or an error event ending its stream), never a hang.
#pragma once

#include "serve/auth.h"
#include "serve/http_listener.h"
#include "serve/metrics.h"
#include "serve/replica_balancer.h"
#include "serve/replica_proxy.h"
#include "serve/replica_supervisor.h"
#include "serve/settings.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

struct FrontEndDeps {
  const KeyStore *keys = nullptr; // null: no auth (allow_no_auth)
  KeyStore *quotas = nullptr;     // the same store, for quotas
  Metrics *metrics = nullptr;
  LeastLoaded *balancer = nullptr;
  ReplicaSupervisor *supervisor = nullptr; // started
};

class FrontEnd {
public:
  FrontEnd(const ServeSettings &settings, FrontEndDeps deps);
  ~FrontEnd();

  // Binds the listening socket; returns the port (useful with port 0).
  StatusOr<int> Bind();
  // Serves until Drain stopped it and every connection ended.
  void Listen();
  // Stops accepting, lets forwarded requests finish for drain_timeout_s,
  // then cuts the rest off (their clients get an error). The replicas are
  // the caller's to stop afterwards. Any thread, once or more.
  void Drain();

  // The families the front end adds to the server's metrics.
  static void DeclareMetrics(Metrics *metrics);

private:
  struct Slot; // one forwarded request's hold on admission and a replica
  void Routes();
  void Forward(const httplib::Request &req, httplib::Response &res, bool generation);
  // A stream whose client left: cancelled on its replica, read to its end
  // (the usage chunk goes to `relay`), cut off after 10 s at most.
  void CancelAndDrain(UpstreamCall &up, const std::string &request_id, SseRelay *relay);
  bool Ready();
  std::string RenderMetrics();
  void Register(const std::shared_ptr<UpstreamCall> &call);
  void Unregister(const std::shared_ptr<UpstreamCall> &call);

  ServeSettings settings_;
  FrontEndDeps deps_;
  std::unique_ptr<HttpListener> http_;
  std::atomic<bool> draining_{false};
  std::atomic<int> in_flight_{0}; // generation requests admitted, not finished
  std::mutex calls_mu_;
  std::set<std::shared_ptr<UpstreamCall>> calls_; // running, for Drain's deadline
};

} // namespace kiln::serve
