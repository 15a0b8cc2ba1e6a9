#include "serve/http_listener.h"

#include "serve/metrics.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace kiln::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kListenBacklog = 1024;
constexpr size_t kReadChunk = 64 << 10;
constexpr int kReadsPerEvent = 4; // then other connections get their turn
constexpr auto kSweepEvery = std::chrono::milliseconds(100);
constexpr auto kLinger = std::chrono::seconds(2);

std::string SecondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

Clock::duration Secs(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The label of kiln_rejections_total for a status the listener answers.
const char *RejectionReason(int status) {
  switch (status) {
  case 408: return "slow_client";
  case 413: return "body_too_large";
  case 431: return "head_too_large";
  case 503: return "server_full";
  default: return "bad_http";
  }
}

// Response head: status line, the handler's headers (framing headers are
// the server's own), then Content-Length or chunked, and Connection: close
// when the connection ends after this response.
std::string Head(const httplib::Response &res, bool chunked, size_t length, bool keep_alive) {
  std::string h = "HTTP/1.1 " + std::to_string(res.status) + " " + StatusReason(res.status) + "\r\n";
  for (const auto &[k, v] : res.headers) {
    std::string lower = k;
    for (char &ch : lower)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "content-length" || lower == "transfer-encoding" || lower == "connection")
      continue;
    // A header value never carries CR or LF (no response splitting).
    if (k.find_first_of("\r\n:") != std::string::npos || v.find_first_of("\r\n") != std::string::npos)
      continue;
    h += k + ": " + v + "\r\n";
  }
  h += chunked ? std::string("Transfer-Encoding: chunked\r\n")
               : "Content-Length: " + std::to_string(length) + "\r\n";
  if (!keep_alive)
    h += "Connection: close\r\n";
  h += "\r\n";
  return h;
}

} // namespace

struct HttpListener::Conn {
  enum class State { kReading, kIdle, kBusy, kLinger };
  int fd = -1;
  std::string peer;
  int peer_port = -1;
  RequestParser parser;
  std::string pending; // bytes read, not yet fed to the parser (pipelining)
  State state = State::kReading;
  bool watched = false;
  bool head_timed = false, body_timed = false;
  Clock::time_point head_deadline{}, body_deadline{}, last_read{}, idle_since{}, linger_until{};
  uint64_t held = 0;         // bytes counted in buffered_
  uint64_t discarded = 0;    // bytes read past while lingering
  bool close_after = false;  // set by the worker: no keep-alive
  std::atomic<bool> cut{false};

  explicit Conn(const WireLimits &limits) : parser(limits) {}
};

HttpListener::HttpListener(const ListenerLimits &limits, ErrorResponder errors, Metrics *metrics)
    : limits_(limits), errors_(std::move(errors)), metrics_(metrics) {}

HttpListener::~HttpListener() {
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  if (epoll_fd_ >= 0)
    ::close(epoll_fd_);
  if (wake_fd_ >= 0)
    ::close(wake_fd_);
  for (auto &[fd, c] : conns_)
    ::close(fd);
}

void HttpListener::Get(const std::string &pattern, RouteHandler handler, bool run_inline) {
  routes_.push_back(Route{"GET", std::regex(pattern), std::move(handler), run_inline});
}

void HttpListener::Post(const std::string &pattern, RouteHandler handler) {
  routes_.push_back(Route{"POST", std::regex(pattern), std::move(handler), false});
}

StatusOr<int> HttpListener::Bind(const std::string &host, int port) {
  const std::string where = host + ":" + (port == 0 ? std::string("any port") : std::to_string(port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr)
    return InvalidArgument("cannot listen on " + where + ": not an address of this host");
  int fd = -1;
  int err = 0;
  for (addrinfo *a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    // SO_REUSEADDR, not SO_REUSEPORT: a second server on a port in use
    // must fail to bind, not silently share its connections.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return InvalidArgument("cannot listen on " + where + " (" +
                           (err ? std::strerror(err) : "no usable address") +
                           ": in use, or not an address of this host)");
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
  const int bound = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port
                                                   : reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
  // Room for max_connections descriptors (and the server's own).
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    const rlim_t want = static_cast<rlim_t>(limits_.max_connections) + 256;
    if (nofile.rlim_cur < want) {
      nofile.rlim_cur = std::min(want, nofile.rlim_max);
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if (nofile.rlim_cur < want) {
      const int fit = static_cast<int>(std::max<rlim_t>(nofile.rlim_cur, 512) - 256);
      std::fprintf(stderr,
                   "kiln serve: the descriptor limit (%llu) holds %d connections, not "
                   "max_connections %d; raise `ulimit -n`\n",
                   static_cast<unsigned long long>(nofile.rlim_cur), fit, limits_.max_connections);
      limits_.max_connections = fit;
    }
  }
  listen_fd_ = fd;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    return Status(StatusCode::kInternal, "cannot create the server's event loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return bound;
}

void HttpListener::Run() {
  if (epoll_fd_ < 0)
    return;
  running_ = true;
  for (int i = 0; i < std::max(1, limits_.workers); ++i)
    workers_.emplace_back([this] { Worker(); });
  Loop();
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(Job{}); // a job without a connection: workers exit
  }
  jobs_cv_.notify_all();
  for (std::thread &t : workers_)
    t.join();
  workers_.clear();
  running_ = false;
}

void HttpListener::Stop() {
  stopping_ = true;
  Wake();
}

void HttpListener::Abort() {
  aborted_ = true;
  std::lock_guard<std::mutex> l(mu_);
  for (const std::shared_ptr<Conn> &c : busy_) {
    c->cut = true;
    ::shutdown(c->fd, SHUT_RDWR);
  }
}

int HttpListener::busy() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(busy_.size());
}

void HttpListener::Wake() {
  if (wake_fd_ < 0)
    return;
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void HttpListener::Watch(const std::shared_ptr<Conn> &c, bool readable) {
  if (readable == c->watched)
    return;
  if (readable) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
  } else {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  }
  c->watched = readable;
}

void HttpListener::Loop() {
  bool stop_done = false;
  Clock::time_point last_sweep = Clock::now();
  epoll_event events[256];
  for (;;) {
    if (stopping_ && !stop_done) {
      stop_done = true;
      if (listen_fd_ >= 0) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        ::close(listen_fd_);
        listen_fd_ = -1;
      }
      std::vector<std::shared_ptr<Conn>> idle;
      for (auto &[fd, c] : conns_)
        if (c->state != Conn::State::kBusy)
          idle.push_back(c);
      for (const auto &c : idle)
        Close(c);
    }
    if (stop_done && conns_.empty())
      return;
    const int n = epoll_wait(epoll_fd_, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        Accept();
      } else if (fd == wake_fd_) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof(v)) > 0) {
        }
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        const std::shared_ptr<Conn> c = it->second; // Close erases the map's copy
        OnReadable(c);
      }
    }
    std::vector<std::shared_ptr<Conn>> resumed;
    {
      std::lock_guard<std::mutex> l(mu_);
      resumed.swap(resumed_);
    }
    for (const auto &c : resumed)
      Resume(c);
    if (Clock::now() - last_sweep >= kSweepEvery) {
      last_sweep = Clock::now();
      Sweep();
    }
  }
}

void HttpListener::Accept() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr *>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting until some close (Sweep).
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_ = true;
      }
      return;
    }
    if (open_ >= limits_.max_connections || stopping_) {
      httplib::Response res;
      errors_(503,
              stopping_ ? "the server is shutting down"
                        : "the server is at its limit of " +
                              std::to_string(limits_.max_connections) + " connections; retry later",
              res);
      res.set_header("Retry-After", "1");
      const std::string out = Head(res, false, res.body.size(), false) + res.body;
      (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      if (metrics_ != nullptr) {
        metrics_->Add("kiln_rejections_total", 1, "too_many_connections");
        metrics_->Add("kiln_http_requests_total", 1, "503");
      }
      continue;
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    auto c = std::make_shared<Conn>(limits_.wire);
    c->fd = fd;
    char host[INET6_ADDRSTRLEN] = "";
    if (ss.ss_family == AF_INET) {
      const auto *a = reinterpret_cast<sockaddr_in *>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
      c->peer_port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto *a = reinterpret_cast<sockaddr_in6 *>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
      c->peer_port = ntohs(a->sin6_port);
    }
    c->peer = host;
    c->last_read = Clock::now();
    conns_[fd] = c;
    ++open_;
    Watch(c, true);
  }
}

void HttpListener::OnReadable(const std::shared_ptr<Conn> &c) {
  char buf[kReadChunk];
  for (int round = 0; round < kReadsPerEvent; ++round) {
    const ssize_t r = ::recv(c->fd, buf, sizeof(buf), 0);
    if (r == 0) {
      Close(c); // the client closed (a request it had begun is abandoned)
      return;
    }
    if (r < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        Close(c);
      return;
    }
    if (c->state == Conn::State::kLinger) {
      // Read past and dropped until the linger ends, or a flood has had
      // its share: then closed. A client that sent a body just past the
      // limit finishes sending it and reads its 413, instead of a reset.
      c->discarded += static_cast<uint64_t>(r);
      if (c->discarded > 2 * limits_.wire.max_body_bytes + limits_.wire.max_head_bytes) {
        Close(c);
        return;
      }
      continue;
    }
    if (buffered_ + static_cast<uint64_t>(r) > limits_.max_buffered_bytes) {
      RefuseOnLoop(c, 503, "the server holds as many request bytes as it may; retry later");
      return;
    }
    buffered_ += static_cast<uint64_t>(r);
    c->held += static_cast<uint64_t>(r);
    c->pending.append(buf, static_cast<size_t>(r));
    c->last_read = Clock::now();
    if (!Parse(c) || c->state == Conn::State::kBusy)
      return;
  }
}

bool HttpListener::Parse(const std::shared_ptr<Conn> &c) {
  while (!c->pending.empty()) {
    if (c->state == Conn::State::kIdle) {
      c->state = Conn::State::kReading;
      c->last_read = Clock::now();
    }
    size_t used = 0;
    const RequestParser::State st = c->parser.Feed(c->pending.data(), c->pending.size(), &used);
    c->pending.erase(0, used);
    const Clock::time_point now = Clock::now();
    if (c->parser.started() && !c->head_timed) {
      c->head_timed = true;
      c->head_deadline = now + Secs(limits_.header_timeout_s);
    }
    if (c->parser.in_body() && !c->body_timed) {
      c->body_timed = true;
      c->body_deadline = now + Secs(limits_.body_timeout_s);
    }
    if (c->parser.TakeContinue()) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!::send(c->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (st == RequestParser::State::kError) {
      RefuseOnLoop(c, c->parser.error().status, c->parser.error().message);
      return false;
    }
    if (st == RequestParser::State::kNeedMore)
      return true;
    // A whole request.
    WireRequest request = std::move(c->parser.request());
    c->parser.Reset();
    c->head_timed = c->body_timed = false;
    bool other_method = false;
    const Route *route = Find(request.method, request.path, &other_method);
    if (route == nullptr || route->run_inline) {
      // Small answers (an unknown route, /health) on this thread.
      const bool keep = Serve(*c, request, route, /*on_loop=*/true);
      if (!keep || stopping_) {
        Close(c);
        return false;
      }
      c->state = Conn::State::kIdle;
      c->idle_since = Clock::now();
      continue;
    }
    c->state = Conn::State::kBusy;
    Watch(c, false);
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_.push_back(c);
      jobs_.push_back(Job{c, std::move(request)});
    }
    jobs_cv_.notify_one();
    return true;
  }
  return true;
}

void HttpListener::Sweep() {
  const Clock::time_point now = Clock::now();
  std::vector<std::pair<std::shared_ptr<Conn>, std::string>> late;
  std::vector<std::shared_ptr<Conn>> done;
  for (auto &[fd, c] : conns_) {
    switch (c->state) {
    case Conn::State::kBusy:
      break;
    case Conn::State::kLinger:
      if (now >= c->linger_until)
        done.push_back(c);
      break;
    case Conn::State::kIdle:
      if (now - c->idle_since >= Secs(limits_.keep_alive_timeout_s))
        done.push_back(c);
      break;
    case Conn::State::kReading:
      if (!c->parser.started()) {
        // Connected (or kept alive) and sent nothing: closed, not answered.
        if (now - c->last_read >= Secs(limits_.read_timeout_s))
          done.push_back(c);
      } else if (c->head_timed && !c->parser.in_body() && now >= c->head_deadline) {
        late.emplace_back(c, "the request head did not arrive within " +
                                 SecondsText(limits_.header_timeout_s) + " s");
      } else if (c->body_timed && now >= c->body_deadline) {
        late.emplace_back(c, "the request body did not arrive within " +
                                 SecondsText(limits_.body_timeout_s) + " s");
      } else if (now - c->last_read >= Secs(limits_.read_timeout_s)) {
        late.emplace_back(c, "the client sent nothing for " +
                                 SecondsText(limits_.read_timeout_s) +
                                 " s in the middle of its request");
      }
      break;
    }
  }
  for (const auto &c : done)
    Close(c);
  for (const auto &[c, why] : late)
    RefuseOnLoop(c, 408, why);
  if (accept_paused_ && listen_fd_ >= 0 && open_ < limits_.max_connections) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) == 0)
      accept_paused_ = false;
  }
}

void HttpListener::RefuseOnLoop(const std::shared_ptr<Conn> &c, int status,
                                const std::string &message) {
  httplib::Response res;
  errors_(status, message, res);
  if (status == 503)
    res.set_header("Retry-After", "1");
  const std::string out = Head(res, false, res.body.size(), false) + res.body;
  (void)!::send(c->fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (metrics_ != nullptr) {
    metrics_->Add("kiln_rejections_total", 1, RejectionReason(status));
    metrics_->Add("kiln_http_requests_total", 1, std::to_string(status));
  }
  Linger(c);
}

void HttpListener::Linger(const std::shared_ptr<Conn> &c) {
  // Half-close and read past what the client still sends for a moment, so
  // the answer is not lost to a reset from unread bytes.
  ::shutdown(c->fd, SHUT_WR);
  buffered_ -= c->held;
  c->held = 0;
  c->pending.clear();
  c->pending.shrink_to_fit();
  c->parser.Reset();
  c->state = Conn::State::kLinger;
  c->linger_until = Clock::now() + kLinger;
  Watch(c, true);
}

void HttpListener::Close(const std::shared_ptr<Conn> &c) {
  Watch(c, false);
  ::close(c->fd);
  buffered_ -= c->held;
  c->held = 0;
  conns_.erase(c->fd);
  --open_;
}

void HttpListener::Resume(const std::shared_ptr<Conn> &c) {
  buffered_ -= c->held;
  c->held = c->pending.size();
  buffered_ += c->held;
  if (c->close_after || stopping_ || c->cut) {
    Close(c);
    return;
  }
  c->state = Conn::State::kIdle;
  c->idle_since = Clock::now();
  Watch(c, true);
  if (!c->pending.empty())
    Parse(c); // the next pipelined request
}

const HttpListener::Route *HttpListener::Find(const std::string &method, const std::string &path,
                                              bool *other_method) const {
  *other_method = false;
  for (const Route &r : routes_) {
    if (!std::regex_match(path, r.pattern))
      continue;
    if (r.method == method)
      return &r;
    *other_method = true;
  }
  return nullptr;
}

void HttpListener::Worker() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> l(mu_);
      jobs_cv_.wait(l, [&] { return !jobs_.empty(); });
      if (!jobs_.front().conn)
        return; // the exit marker stays for the other workers
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    bool other_method = false;
    const Route *route = Find(job.request.method, job.request.path, &other_method);
    const bool keep = Serve(*job.conn, job.request, route, /*on_loop=*/false);
    job.conn->close_after = !keep;
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_.erase(std::find(busy_.begin(), busy_.end(), job.conn));
      resumed_.push_back(std::move(job.conn));
    }
    Wake();
  }
}

bool HttpListener::Serve(Conn &c, WireRequest &wire, const Route *route, bool on_loop) {
  httplib::Request req;
  req.method = wire.method;
  req.path = wire.path;
  req.target = wire.target;
  req.version = wire.version;
  for (auto &[k, v] : wire.headers)
    req.headers.emplace(k, v);
  req.body = std::move(wire.body);
  req.remote_addr = c.peer;
  req.remote_port = c.peer_port;
  httplib::Response res;
  if (route == nullptr) {
    bool other_method = false;
    Find(req.method, req.path, &other_method);
    if (other_method) {
      errors_(405, "the route " + req.path + " does not take " + req.method, res);
    } else {
      errors_(404, "no route " + req.method + " " + req.path, res);
    }
    if (metrics_ != nullptr)
      metrics_->Add("kiln_http_requests_total", 1, std::to_string(res.status));
  } else {
    std::regex_match(req.path, req.matches, route->pattern);
    try {
      route->handler(req, res);
    } catch (const std::exception &e) {
      res = httplib::Response();
      errors_(500, std::string("internal error: ") + e.what(), res);
    } catch (...) {
      res = httplib::Response();
      errors_(500, "internal error", res);
    }
  }
  if (res.status < 0)
    res.status = 200;
  bool keep = wire.keep_alive && !stopping_;

  // Writes all of [p, p + n); a write that makes no progress for
  // write_timeout_s (on the event thread: that would block at all) fails.
  auto write_all = [&](const char *p, size_t n) {
    Clock::time_point deadline = Clock::now() + Secs(limits_.write_timeout_s);
    while (n > 0) {
      if (c.cut || aborted_)
        return false;
      const ssize_t w = ::send(c.fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        p += w;
        n -= static_cast<size_t>(w);
        deadline = Clock::now() + Secs(limits_.write_timeout_s);
        continue;
      }
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !on_loop) {
        const auto left = deadline - Clock::now();
        if (left <= Clock::duration::zero())
          return false;
        pollfd p1{c.fd, POLLOUT, 0};
        // Slices of 200 ms, so that Abort is seen.
        const auto slice = std::min<Clock::duration>(left, std::chrono::milliseconds(200));
        poll(&p1, 1, static_cast<int>(
                         std::chrono::duration_cast<std::chrono::milliseconds>(slice).count() + 1));
        continue;
      }
      return false;
    }
    return true;
  };

  if (!res.content_provider_) {
    const std::string head = Head(res, false, res.body.size(), keep);
    const bool ok = write_all(head.data(), head.size()) &&
                    (req.method == "HEAD" || write_all(res.body.data(), res.body.size()));
    return ok && keep;
  }
  if (!res.is_chunked_content_provider_ || on_loop) {
    res = httplib::Response();
    errors_(500, "internal error: a response of a kind this server does not send", res);
    const std::string out = Head(res, false, res.body.size(), false) + res.body;
    write_all(out.data(), out.size());
    return false;
  }
  // A stream: chunked transfer coding, each piece as the handler writes it.
  const std::string head = Head(res, true, 0, keep);
  bool ok = write_all(head.data(), head.size());
  bool done = false;
  size_t offset = 0;
  httplib::DataSink sink;
  sink.write = [&](const char *d, size_t n) {
    if (!ok)
      return false;
    if (n == 0)
      return true;
    char size_line[32];
    const int len = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", n);
    ok = write_all(size_line, static_cast<size_t>(len)) && write_all(d, n) && write_all("\r\n", 2);
    offset += n;
    return ok;
  };
  sink.done = [&] {
    if (done)
      return;
    done = true;
    ok = ok && write_all("0\r\n\r\n", 5);
  };
  sink.is_writable = [&] { return ok && !c.cut && !aborted_; };
  while (ok && !done) {
    bool more = false;
    try {
      more = res.content_provider_(offset, 0, sink);
    } catch (...) {
      more = false;
    }
    if (!more)
      ok = false;
  }
  res.content_provider_success_ = ok && done;
  return ok && done && keep;
}

} // namespace kiln::serve
