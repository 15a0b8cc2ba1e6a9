// What both HTTP servers of `kiln serve` share: the single-process server
// (HttpServer) and the front end of --replicas (FrontEnd). The listener's
// limits, the auth boundary, key quotas, and error bodies for the statuses
// the listener answers itself. Internal to the serve library.
#pragma once

#include "kiln/status.h"
#include "serve/api_error.h"
#include "serve/auth.h"
#include "serve/http_call.h"
#include "serve/http_listener.h"
#include "serve/metrics.h"
#include "serve/settings.h"

#include <chrono>

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

// A drain's clock, from the moment it starts: requests still running are
// cancelled at `cancel` (a second before `end`, or a quarter of
// drain_timeout_s if that is shorter), and connections still being written
// are cut at `end` (drain_timeout_s).
struct DrainDeadlines {
  std::chrono::steady_clock::time_point cancel, end;
};
DrainDeadlines DrainDeadlinesFrom(const ServeSettings &settings);

// The listener's limits and deadlines from `settings`.
ListenerLimits ListenerLimitsFrom(const ServeSettings &settings);
// The API's error body for the statuses the listener answers itself (404 no
// route, 405, 408 too slow, 413 body too large, 431 head too large, 400
// malformed HTTP, 503 too many connections, 500 a handler's exception).
ErrorResponder ApiErrorResponder();

// Sends `e` in OpenAI's shape (with Retry-After when it has one), and
// records the status in `call` when given.
void SendError(httplib::Response &res, const ApiError &e, CallLog *call);
// 503 service_unavailable with `code` and Retry-After: 1.
ApiError Unavailable(const std::string &message, const std::string &code);

// Fills `call` for the access log and checks the Bearer key against `keys`
// (null: no auth, every caller passes). On refusal answers 401 and returns
// false.
bool Authorize(const KeyStore *keys, KeyStore *quotas, Metrics *metrics, bool access_log,
               const httplib::Request &req, httplib::Response &res, CallLog *call);
// Admits the call under its key's quotas (no keys: always). On refusal
// answers 429 with Retry-After and returns false; on success the call
// holds the quota until it ends (CallLog releases it).
bool AdmitQuota(KeyStore *quotas, Metrics *metrics, httplib::Response &res, CallLog *call);
// A call admitted by AdmitQuota and then refused before it ran (queue full,
// no replica, a prompt the engine refused): its admission is undone, so
// refusals (which clients retry) use up no rpm.
void RefundQuota(CallLog *call);

} // namespace kiln::serve
