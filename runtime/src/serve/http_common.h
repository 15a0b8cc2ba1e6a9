// What both HTTP servers of `kiln serve` share: the single-process server
// (HttpServer) and the front end of --replicas (FrontEnd). The listener's
// set-up (threads, timeouts, body limit, backlog), the auth boundary, key
// quotas, and error bodies for the statuses httplib answers itself. Internal
// to the serve library.
#pragma once

#include "kiln/status.h"
#include "serve/api_error.h"
#include "serve/auth.h"
#include "serve/http_call.h"
#include "serve/metrics.h"
#include "serve/settings.h"

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

// Thread pool, read/write timeouts, keep-alive and the body limit from
// `settings`; SO_REUSEADDR on the listening socket, whose descriptor is
// stored in *listen_fd when it is created (BindServer raises its backlog).
void ConfigureServer(httplib::Server &http, const ServeSettings &settings, int *listen_fd);
// Binds settings.host:settings.port (port 0: any free one); returns the port.
StatusOr<int> BindServer(httplib::Server &http, const ServeSettings &settings,
                         const int *listen_fd);
// The API's error body for statuses httplib sets itself (404 no route, 413
// body too large, 400 malformed HTTP) and for exceptions (500).
void InstallErrorHandlers(httplib::Server &http, const ServeSettings &settings, Metrics *metrics);

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

} // namespace kiln::serve
