#include "serve/http_common.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

namespace kiln::serve {
namespace {

// The packaged httplib listens with a backlog of 5: a burst of clients
// overflows it, and the kernel then drops their handshakes' last step, so a
// client believes it is connected while the server never sees it (until a
// reset a minute later). listen() again on the bound socket raises it; the
// kernel caps it at somaxconn.
constexpr int kListenBacklog = 1024;

} // namespace

void ConfigureServer(httplib::Server &http, const ServeSettings &settings, int *listen_fd) {
  const int threads = settings.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  auto secs = [](double s) { return std::chrono::microseconds(static_cast<int64_t>(s * 1e6)); };
  http.set_read_timeout(secs(settings.read_timeout_s));
  http.set_write_timeout(secs(settings.write_timeout_s));
  http.set_keep_alive_timeout(5);
  http.set_payload_max_length(static_cast<size_t>(settings.max_body_bytes));
  // SO_REUSEADDR, not httplib's default SO_REUSEPORT: a second server on a
  // port in use must fail to bind, not silently share its connections.
  http.set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listen_fd = sock;
  });
}

StatusOr<int> BindServer(httplib::Server &http, const ServeSettings &settings,
                         const int *listen_fd) {
  int port = settings.port;
  if (port == 0) {
    port = http.bind_to_any_port(settings.host);
    if (port < 0)
      return InvalidArgument("cannot listen on " + settings.host + " (any port)");
  } else if (!http.bind_to_port(settings.host, port)) {
    return InvalidArgument("cannot listen on " + settings.host + ":" + std::to_string(port) +
                           " (in use, or not an address of this host)");
  }
  if (*listen_fd >= 0)
    ::listen(*listen_fd, kListenBacklog);
  return port;
}

void InstallErrorHandlers(httplib::Server &http, const ServeSettings &settings, Metrics *metrics) {
  using httplib::Request;
  using httplib::Response;
  const int64_t max_body = settings.max_body_bytes;
  // Handlers' own errors already have a body; httplib's do not.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([metrics, max_body](const Request &req, Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        if (res.status == 404) {
          e.message = "no route " + req.method + " " + req.path;
          e.code = "not_found";
        } else if (res.status == 413) {
          e.message = "the request body is larger than the server's limit of " +
                      std::to_string(max_body) + " bytes";
          metrics->Add("kiln_rejections_total", 1, "body_too_large");
        } else {
          e.message =
              "the HTTP request could not be served (status " + std::to_string(res.status) + ")";
        }
        metrics->Add("kiln_http_requests_total", 1, std::to_string(res.status));
        SendError(res, e, nullptr);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const Request &, Response &res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception &ex) {
      what = ex.what();
    } catch (...) {
    }
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    e.message = "internal error: " + what;
    res.status = 500;
    res.set_content(ErrorBody(e), "application/json");
  });
}

void SendError(httplib::Response &res, const ApiError &e, CallLog *call) {
  res.status = e.status;
  if (e.retry_after_s > 0)
    res.set_header("Retry-After", std::to_string(static_cast<int64_t>(e.retry_after_s + 0.999)));
  res.set_content(ErrorBody(e), "application/json");
  if (call)
    call->status = e.status;
}

ApiError Unavailable(const std::string &message, const std::string &code) {
  ApiError e;
  e.status = 503;
  e.type = "service_unavailable";
  e.code = code;
  e.message = message;
  e.retry_after_s = 1;
  return e;
}

bool Authorize(const KeyStore *keys, KeyStore *quotas, Metrics *metrics, bool access_log,
               const httplib::Request &req, httplib::Response &res, CallLog *call) {
  call->quotas = quotas;
  call->metrics = metrics;
  call->access_log = access_log;
  call->method = req.method;
  call->path = req.path;
  if (keys == nullptr)
    return true;
  const std::string auth = req.get_header_value("Authorization");
  const std::string kBearer = "Bearer ";
  ApiError e;
  e.status = 401;
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  if (auth.compare(0, kBearer.size(), kBearer) != 0) {
    e.message = "missing API key: send 'Authorization: Bearer KEY'";
    metrics->Add("kiln_rejections_total", 1, "no_key");
    SendError(res, e, call);
    return false;
  }
  const int index = keys->Authenticate(auth.substr(kBearer.size()));
  if (index < 0) {
    e.message = "invalid API key";
    metrics->Add("kiln_rejections_total", 1, "bad_key");
    SendError(res, e, call);
    return false;
  }
  call->key = index;
  call->key_id = keys->key(index).id;
  return true;
}

bool AdmitQuota(KeyStore *quotas, Metrics *metrics, httplib::Response &res, CallLog *call) {
  if (quotas == nullptr || call->key < 0)
    return true;
  std::string which;
  double retry = 0;
  if (!quotas->Admit(call->key, QuotaClock::now(), &which, &retry)) {
    ApiError e;
    e.status = 429;
    e.type = "rate_limit_error";
    e.code = "rate_limit_" + which;
    e.message = "key '" + call->key_id + "' is over its " + which + " quota";
    e.retry_after_s = std::max(1.0, retry);
    metrics->Add("kiln_rejections_total", 1, "quota_" + which);
    SendError(res, e, call);
    return false;
  }
  call->quota_held = true;
  return true;
}

} // namespace kiln::serve
