#include "serve/replica_proxy.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <strings.h>

namespace kiln::serve {
namespace {

constexpr size_t kMaxPending = 1 << 20; // body bytes held for a client that is slow to read

} // namespace

UpstreamCall::UpstreamCall(int index, int port, int pid, std::string key, double read_timeout_s)
    : index_(index), port_(port), pid_(pid), key_(std::move(key)), read_timeout_s_(read_timeout_s) {
}

UpstreamCall::~UpstreamCall() {
  if (thread_.joinable()) {
    Abort("the front end let go of the request");
    thread_.join();
  }
}

void UpstreamCall::Start(const std::string &method, const std::string &path, std::string body,
                         std::vector<std::pair<std::string, std::string>> headers) {
  thread_ = std::thread([this, method, path, b = std::move(body), h = std::move(headers)]() mutable {
    Run(method, path, std::move(b), std::move(h));
  });
}

void UpstreamCall::Run(std::string method, std::string path, std::string body,
                       std::vector<std::pair<std::string, std::string>> headers) {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(5);
  client.set_read_timeout(std::chrono::microseconds(static_cast<int64_t>(read_timeout_s_ * 1e6)));
  client.set_write_timeout(30);
  client.set_keep_alive(false);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!abort_reason_.empty()) {
      done_ = true;
      error_ = abort_reason_;
      cv_.notify_all();
      return;
    }
    client_ = &client;
  }
  httplib::Request req;
  req.method = std::move(method);
  req.path = std::move(path);
  req.headers.emplace("Authorization", "Bearer " + key_);
  for (auto &[name, value] : headers)
    req.headers.emplace(name, value);
  req.headers.emplace("Accept-Encoding", "identity"); // loopback: compressing is only cost
  if (!body.empty() || req.method == "POST")
    req.headers.emplace("Content-Type", "application/json");
  req.body = std::move(body);
  req.response_handler = [this](const httplib::Response &r) {
    std::lock_guard<std::mutex> l(mu_);
    status_ = r.status;
    headers_.assign(r.headers.begin(), r.headers.end());
    have_headers_ = true;
    cv_.notify_all();
    return abort_reason_.empty();
  };
  req.content_receiver = [this](const char *data, size_t n, uint64_t, uint64_t) {
    std::unique_lock<std::mutex> l(mu_);
    // Backpressure: while a slow client has not taken what came, the
    // replica's writes wait (and its own write timeout applies), instead of
    // the front end holding a whole stream.
    cv_.wait(l, [this] { return pending_.size() < kMaxPending || !abort_reason_.empty(); });
    pending_.append(data, n);
    cv_.notify_all();
    return abort_reason_.empty();
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = client.send(req, res, err);
  std::lock_guard<std::mutex> l(mu_);
  client_ = nullptr;
  done_ = true;
  ok_ = ok && abort_reason_.empty();
  connect_failed_ = !ok && !have_headers_ && err == httplib::Error::Connection;
  if (!ok_)
    error_ = !abort_reason_.empty() ? abort_reason_
             : err == httplib::Error::Connection
                 ? "cannot connect to it"
                 : "its connection was lost: " + httplib::to_string(err);
  cv_.notify_all();
}

bool UpstreamCall::WaitHeaders() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return have_headers_ || done_; });
  return have_headers_ && abort_reason_.empty();
}

int UpstreamCall::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

std::string UpstreamCall::header(const std::string &name) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto &[k, v] : headers_)
    if (strcasecmp(k.c_str(), name.c_str()) == 0)
      return v;
  return "";
}

UpstreamCall::Read UpstreamCall::Next(std::string *out, Clock::time_point until) {
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_until(l, until, [this] { return !pending_.empty() || done_; }))
    return Read::kTimeout;
  if (!pending_.empty()) {
    out->append(pending_);
    pending_.clear();
    cv_.notify_all(); // room for the receiver
    return Read::kData;
  }
  return Read::kEnd;
}

std::string UpstreamCall::WaitBody() {
  std::string body;
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return !pending_.empty() || done_; });
    body += pending_;
    pending_.clear();
    cv_.notify_all(); // room for the receiver
    if (done_)
      return body;
  }
}

bool UpstreamCall::failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return done_ && !ok_;
}

bool UpstreamCall::connect_failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return connect_failed_;
}

std::string UpstreamCall::error() const {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

std::string UpstreamCall::aborted() const {
  std::lock_guard<std::mutex> l(mu_);
  return abort_reason_;
}

void UpstreamCall::Abort(const std::string &reason) {
  std::lock_guard<std::mutex> l(mu_);
  if (abort_reason_.empty())
    abort_reason_ = reason;
  // Shutting the socket ends a send blocked on a read (httplib's stop() is
  // meant to be called from another thread).
  if (client_ != nullptr)
    client_->stop();
  cv_.notify_all();
}

std::vector<std::string> SseRelay::Feed(const std::string &piece) {
  partial_ += piece;
  std::vector<std::string> events;
  size_t start = 0;
  for (size_t end; (end = partial_.find("\n\n", start)) != std::string::npos; start = end + 2) {
    std::string event = partial_.substr(start, end + 2 - start);
    if (event.rfind("data: [DONE]", 0) == 0)
      done_ = true;
    if (event.rfind("data: {", 0) == 0 && event.find("\"usage\"") != std::string::npos) {
      const auto j = nlohmann::json::parse(event.substr(6), nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("usage") && j["usage"].is_object() &&
          j.value("choices", nlohmann::json()).is_array() && j["choices"].empty()) {
        prompt_tokens_ = j["usage"].value("prompt_tokens", int64_t{0});
        completion_tokens_ = j["usage"].value("completion_tokens", int64_t{0});
        if (drop_usage_)
          continue;
      }
      // The replica was asked for usage, so its other chunks say
      // "usage": null; a client that did not ask sees neither.
      if (drop_usage_ && j.is_object() && j.contains("usage") && j["usage"].is_null()) {
        auto o = nlohmann::ordered_json::parse(event.substr(6), nullptr, false);
        if (o.is_object()) {
          o.erase("usage");
          event = "data: " + o.dump() + "\n\n";
        }
      }
    }
    events.push_back(std::move(event));
  }
  partial_.erase(0, start);
  return events;
}

bool ReadUsage(const std::string &body, int64_t *prompt_tokens, int64_t *completion_tokens) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("usage") || !j["usage"].is_object())
    return false;
  *prompt_tokens = j["usage"].value("prompt_tokens", int64_t{0});
  *completion_tokens = j["usage"].value("completion_tokens", int64_t{0});
  return true;
}

} // namespace kiln::serve
