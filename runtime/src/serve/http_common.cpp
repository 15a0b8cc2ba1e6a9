#include "serve/http_common.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>

namespace kiln::serve {
DrainDeadlines DrainDeadlinesFrom(const ServeSettings &settings) {
  const auto now = std::chrono::steady_clock::now();
  const auto total = std::chrono::microseconds(static_cast<int64_t>(settings.drain_timeout_s * 1e6));
  const auto grace = std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1), total / 4);
  return {now + total - grace, now + total};
}

ListenerLimits ListenerLimitsFrom(const ServeSettings &settings) {
  ListenerLimits l;
  l.wire.max_head_bytes = static_cast<size_t>(settings.max_header_bytes);
  l.wire.max_headers = static_cast<size_t>(settings.max_headers);
  l.wire.max_body_bytes = static_cast<uint64_t>(settings.max_body_bytes);
  l.header_timeout_s = settings.header_timeout_s;
  l.body_timeout_s = settings.body_timeout_s;
  l.read_timeout_s = settings.read_timeout_s;
  l.keep_alive_timeout_s = settings.keep_alive_timeout_s;
  l.write_timeout_s = settings.write_timeout_s;
  l.max_connections = settings.max_connections;
  l.max_buffered_bytes = static_cast<uint64_t>(settings.max_buffered_bytes);
  l.workers = settings.http_threads;
  return l;
}

ErrorResponder ApiErrorResponder() {
  return [](int status, const std::string &message, httplib::Response &res) {
    ApiError e;
    e.status = status;
    e.message = message;
    if (status == 404)
      e.code = "not_found";
    else if (status == 405)
      e.code = "method_not_allowed";
    else if (status == 408)
      e.code = "request_timeout";
    else if (status == 413)
      e.code = "body_too_large";
    else if (status == 431)
      e.code = "head_too_large";
    else if (status == 503) {
      e.type = "service_unavailable";
      e.code = "server_full";
      e.retry_after_s = 1;
    } else if (status >= 500) {
      e.type = "server_error";
    }
    SendError(res, e, nullptr);
  };
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
  ApiError e;
  e.status = 401;
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  // The scheme is case-insensitive (RFC 9110 11.1), then one or more spaces.
  size_t key_at = 0;
  const bool bearer = auth.size() > 7 && (auth[0] | 0x20) == 'b' && (auth[1] | 0x20) == 'e' &&
                      (auth[2] | 0x20) == 'a' && (auth[3] | 0x20) == 'r' &&
                      (auth[4] | 0x20) == 'e' && (auth[5] | 0x20) == 'r' && auth[6] == ' ';
  if (bearer) {
    key_at = auth.find_first_not_of(' ', 6);
  }
  if (!bearer || key_at == std::string::npos) {
    e.message = "missing API key: send 'Authorization: Bearer KEY'";
    metrics->Add("kiln_rejections_total", 1, "no_key");
    SendError(res, e, call);
    return false;
  }
  const int index = keys->Authenticate(auth.substr(key_at));
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
  const QuotaClock::time_point now = QuotaClock::now();
  if (!quotas->Admit(call->key, now, &which, &retry)) {
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
  call->admitted_at = now;
  return true;
}

void RefundQuota(CallLog *call) {
  if (!call->quota_held || call->quotas == nullptr || call->key < 0)
    return;
  call->quotas->Refund(call->key, call->admitted_at);
  call->quota_held = false;
}

} // namespace kiln::serve
