// kiln serve's HTTP/1.1 server: one event thread (epoll) owns every
// connection until its request has fully arrived, and a pool of worker
// threads runs the route handlers on complete requests only.
//
// Why not cpp-httplib's server (which kiln used before): it gives each
// connection a thread from the moment it is accepted, and its only clock is
// a per-read timeout, so ~140 clients sending a byte a second held all 128
// threads and /health stopped answering; it read chunked bodies whole
// before the handler (and its auth) ran, and had no header-count limit
// (docs/serve.md, "Hostile clients"). Here:
//   - a connection costs a descriptor and its buffered bytes until its
//     request is whole: slow clients hold no thread;
//   - every limit is enforced as bytes arrive (http_wire.h): head bytes,
//     header count, the body (413 as soon as a chunked body passes it);
//   - deadlines for the whole head, the whole body and each gap between
//     reads, and an idle keep-alive limit; 408 then close;
//   - at most max_connections at once (503 beyond), and all connections'
//     request bytes together within max_buffered_bytes (503 beyond);
//   - pipelined requests are answered one at a time, in order;
//   - routes marked inline (/health) are answered on the event thread, so
//     they answer while every worker is busy;
//   - Stop() ends idle and half-sent connections at once; Abort() cuts the
//     sockets of responses still being written, so a drain ends on time
//     whatever the clients do.
// Handlers keep httplib's Request/Response types (the header-only part of
// the library, used for nothing else on the server side).
#pragma once

#include "kiln/status.h"
#include "serve/http_wire.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
struct Request;
struct Response;
} // namespace httplib

namespace kiln::serve {

class Metrics;

struct ListenerLimits {
  WireLimits wire;
  double header_timeout_s = 30;   // first byte of a request to the end of its head
  double body_timeout_s = 60;     // end of the head to the end of the body
  double read_timeout_s = 10;     // longest gap between bytes of a request
  double keep_alive_timeout_s = 5; // idle between requests
  double write_timeout_s = 30;    // longest a write to the client may make no progress
  int max_connections = 4096;
  uint64_t max_buffered_bytes = uint64_t{256} << 20; // request bytes held, all connections
  int workers = 128;
};

using RouteHandler = std::function<void(const httplib::Request &, httplib::Response &)>;
// Fills an error response (the API's JSON body) for a status the listener
// answers itself: 400, 404, 408, 413, 431, 500, 501, 503, 505.
using ErrorResponder =
    std::function<void(int status, const std::string &message, httplib::Response &res)>;

class HttpListener {
public:
  HttpListener(const ListenerLimits &limits, ErrorResponder errors, Metrics *metrics);
  ~HttpListener();
  HttpListener(const HttpListener &) = delete;
  HttpListener &operator=(const HttpListener &) = delete;

  // Routes: `pattern` is matched against the whole decoded path as a
  // regular expression (req.matches holds its groups). An inline handler
  // runs on the event thread: it must not block, and its response must be
  // small.
  void Get(const std::string &pattern, RouteHandler handler, bool run_inline = false);
  void Post(const std::string &pattern, RouteHandler handler);

  // Binds host:port (port 0: any free one); returns the port.
  StatusOr<int> Bind(const std::string &host, int port);
  // Serves until Stop; returns when every connection is closed and every
  // worker has finished.
  void Run();
  // Stops accepting and closes every connection that is not being
  // answered; responses under way finish (without keep-alive). Any thread,
  // any number of times.
  void Stop();
  // Cuts the connections whose responses are still being written (their
  // writes fail at once). For a drain whose deadline passed.
  void Abort();
  bool running() const { return running_; }
  int connections() const { return open_; }
  // Connections whose requests a worker is answering.
  int busy() const;

private:
  struct Conn;
  struct Route {
    std::string method;
    std::regex pattern;
    RouteHandler handler;
    bool run_inline = false;
  };
  struct Job {
    std::shared_ptr<Conn> conn;
    WireRequest request;
  };

  void Loop();
  void Accept();
  void OnReadable(const std::shared_ptr<Conn> &c);
  // Feeds what the connection holds to its parser; dispatches a request
  // that is whole. False when the connection was closed.
  bool Parse(const std::shared_ptr<Conn> &c);
  void Sweep();
  void Resume(const std::shared_ptr<Conn> &c); // a worker finished with c
  void RefuseOnLoop(const std::shared_ptr<Conn> &c, int status, const std::string &message);
  void Linger(const std::shared_ptr<Conn> &c);
  void Close(const std::shared_ptr<Conn> &c);
  void Watch(const std::shared_ptr<Conn> &c, bool readable);
  void Wake();

  void Worker();
  // Routes and answers one request (worker thread or, inline, the loop).
  // Returns whether the connection may be kept alive.
  bool Serve(Conn &c, WireRequest &wire, const Route *route, bool on_loop);
  const Route *Find(const std::string &method, const std::string &path, bool *other_method) const;

  ListenerLimits limits_;
  ErrorResponder errors_;
  Metrics *metrics_;
  std::vector<Route> routes_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<int> open_{0};
  std::atomic<uint64_t> buffered_{0};
  bool accept_paused_ = false;

  std::map<int, std::shared_ptr<Conn>> conns_; // loop thread only

  mutable std::mutex mu_; // guards jobs_, resumed_, busy_, workers_done_
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  std::vector<std::shared_ptr<Conn>> resumed_;
  std::vector<std::shared_ptr<Conn>> busy_; // connections a worker answers
  std::vector<std::thread> workers_;
};

} // namespace kiln::serve
