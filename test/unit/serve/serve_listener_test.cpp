// kiln serve's HTTP listener (serve/http_listener.h) over loopback sockets,
// with small limits and short deadlines: slow and flooding clients are cut
// off without holding a worker, pipelined requests are answered in order,
// /health answers while every worker is busy, and Stop/Abort end a drain
// whatever the clients do.
#include "serve/http_listener.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::serve {
namespace {

using Clock = std::chrono::steady_clock;

class Client {
public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(const std::string &s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Reads until `n` responses' worth of "HTTP/1.1 " status lines and their
  // bodies (Content-Length) arrived, or the peer closed, or 5 s passed.
  std::string Read(int n = 1) {
    std::string got;
    char buf[4096];
    while (Complete(got) < n) {
      const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0)
        break;
      got.append(buf, static_cast<size_t>(r));
    }
    return got;
  }
  // True when the server closed the connection (recv returns 0 or reset).
  bool Closed() {
    char c;
    const ssize_t r = ::recv(fd_, &c, 1, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
  }
  int fd() const { return fd_; }

private:
  static int Complete(const std::string &s) {
    int n = 0;
    size_t pos = 0;
    for (;;) {
      const size_t head_end = s.find("\r\n\r\n", pos);
      if (head_end == std::string::npos)
        return n;
      const size_t cl = s.find("Content-Length: ", pos);
      size_t len = 0;
      if (cl != std::string::npos && cl < head_end)
        len = std::stoul(s.substr(cl + 16));
      if (s.size() < head_end + 4 + len)
        return n;
      ++n;
      pos = head_end + 4 + len;
    }
  }
  int fd_ = -1;
  bool connected_ = false;
};

int Status(const std::string &response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0)
    return -1;
  return std::stoi(response.substr(9, 3));
}

class Listener : public ::testing::Test {
protected:
  void Start(ListenerLimits limits) {
    http_ = std::make_unique<HttpListener>(
        limits,
        [](int status, const std::string &message, httplib::Response &res) {
          res.status = status;
          res.set_content("error: " + message, "text/plain");
        },
        nullptr);
    http_->Get("/health", [](const httplib::Request &, httplib::Response &res) {
      res.set_content("ok", "text/plain");
    }, /*run_inline=*/true);
    http_->Get("/echo/(.+)", [this](const httplib::Request &req, httplib::Response &res) {
      ++handled_;
      res.set_content("echo " + std::string(req.matches[1]), "text/plain");
    });
    http_->Post("/body", [this](const httplib::Request &req, httplib::Response &res) {
      ++handled_;
      res.set_content("got " + std::to_string(req.body.size()), "text/plain");
    });
    http_->Get("/block", [this](const httplib::Request &, httplib::Response &res) {
      std::unique_lock<std::mutex> l(mu_);
      ++blocked_;
      cv_.notify_all();
      cv_.wait(l, [&] { return release_; });
      res.set_content("released", "text/plain");
    });
    http_->Get("/stream", [](const httplib::Request &, httplib::Response &res) {
      res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink &sink) {
        const std::string piece(64 << 10, 's');
        while (sink.write(piece.data(), piece.size())) {
        }
        return false;
      });
    });
    auto port = http_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().message();
    port_ = *port;
    thread_ = std::thread([this] { http_->Run(); });
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      release_ = true;
    }
    cv_.notify_all();
    if (http_) {
      http_->Stop();
      http_->Abort();
    }
    if (thread_.joinable())
      thread_.join();
  }
  void WaitBlocked(int n) {
    std::unique_lock<std::mutex> l(mu_);
    ASSERT_TRUE(cv_.wait_for(l, std::chrono::seconds(5), [&] { return blocked_ >= n; }));
  }

  std::unique_ptr<HttpListener> http_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> handled_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
  bool release_ = false;
};

ListenerLimits Quick() {
  ListenerLimits l;
  l.wire.max_head_bytes = 2048;
  l.wire.max_headers = 16;
  l.wire.max_body_bytes = 4096;
  l.header_timeout_s = 0.6;
  l.body_timeout_s = 0.6;
  l.read_timeout_s = 2;
  l.keep_alive_timeout_s = 0.5;
  l.write_timeout_s = 2;
  l.workers = 2;
  return l;
}

TEST_F(Listener, SlowClientsGet408AndHoldNoWorker) {
  Start(Quick());
  // More slow clients than workers, each a byte at a time.
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<Client>(port_));
    ASSERT_TRUE(slow.back()->Send("GET /echo/x HTTP/1.1\r\nX-Slow: "));
  }
  const auto t0 = Clock::now();
  Client fast(port_);
  ASSERT_TRUE(fast.Send("GET /echo/fast HTTP/1.1\r\n\r\n"));
  const std::string r = fast.Read();
  EXPECT_EQ(Status(r), 200);
  EXPECT_NE(r.find("echo fast"), std::string::npos);
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(500));
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    for (auto &c : slow)
      c->Send("a");
  }
  // Bytes keep coming, but the head's deadline (0.6 s) passes: 408.
  for (auto &c : slow) {
    const std::string got = c->Read();
    EXPECT_EQ(Status(got), 408) << got;
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(handled_, 1);
}

TEST_F(Listener, SilentAndIdleConnectionsAreClosed) {
  ListenerLimits l = Quick();
  l.read_timeout_s = 0.3;
  Start(l);
  Client silent(port_);
  Client kept(port_);
  ASSERT_TRUE(kept.Send("GET /echo/a HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(Status(kept.Read()), 200);
  const auto t0 = Clock::now();
  EXPECT_TRUE(silent.Closed());
  EXPECT_TRUE(kept.Closed()); // keep-alive idle 0.5 s
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(Listener, BodyFloodsAreRefusedBeforeTheHandler) {
  Start(Quick());
  // A chunked body announcing 1 MiB against a 4 KiB limit: 413 from its
  // size line, while the client is still sending.
  Client chunked(port_);
  ASSERT_TRUE(chunked.Send("POST /body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n"));
  chunked.Send(std::string(8192, 'a'));
  EXPECT_EQ(Status(chunked.Read()), 413);
  // Small chunks adding up past it.
  Client pieces(port_);
  ASSERT_TRUE(pieces.Send("POST /body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
  for (int i = 0; i < 40; ++i) {
    if (!pieces.Send("200\r\n" + std::string(512, 'b') + "\r\n"))
      break;
  }
  EXPECT_EQ(Status(pieces.Read()), 413);
  Client length(port_);
  ASSERT_TRUE(length.Send("POST /body HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"));
  EXPECT_EQ(Status(length.Read()), 413);
  EXPECT_EQ(handled_, 0);
  // At the limit: served.
  Client ok(port_);
  ASSERT_TRUE(ok.Send("POST /body HTTP/1.1\r\nContent-Length: 4096\r\n\r\n" + std::string(4096, 'c')));
  const std::string r = ok.Read();
  EXPECT_EQ(Status(r), 200);
  EXPECT_NE(r.find("got 4096"), std::string::npos);
}

TEST_F(Listener, HeadLimits) {
  Start(Quick());
  Client big(port_);
  ASSERT_TRUE(big.Send("GET /echo/a HTTP/1.1\r\nX: " + std::string(4000, 'h')));
  EXPECT_EQ(Status(big.Read()), 431);
  std::string many = "GET /echo/a HTTP/1.1\r\n";
  for (int i = 0; i < 17; ++i)
    many += "H" + std::to_string(i) + ": v\r\n";
  Client count(port_);
  ASSERT_TRUE(count.Send(many + "\r\n"));
  EXPECT_EQ(Status(count.Read()), 431);
  Client bad(port_);
  ASSERT_TRUE(bad.Send("GET /echo/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n"));
  EXPECT_EQ(Status(bad.Read()), 400);
  EXPECT_EQ(handled_, 0);
}

TEST_F(Listener, ConnectionsAndBufferedBytesAreBounded) {
  ListenerLimits l = Quick();
  l.max_connections = 6;
  l.max_buffered_bytes = 6000;
  l.header_timeout_s = l.body_timeout_s = l.read_timeout_s = 5;
  Start(l);
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 6; ++i)
    held.push_back(std::make_unique<Client>(port_));
  // Let the listener accept them before the next one knocks.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client over(port_);
  EXPECT_EQ(Status(over.Read()), 503);
  held.pop_back();
  held.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Two bodies of 3,000 bytes each, unfinished: the second passes 6,000
  // bytes held and is refused.
  const std::string head = "POST /body HTTP/1.1\r\nContent-Length: 4000\r\n\r\n";
  ASSERT_TRUE(held[0]->Send(head + std::string(3000, 'x')));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(held[1]->Send(head + std::string(3000, 'y')));
  EXPECT_EQ(Status(held[1]->Read()), 503);
  ASSERT_TRUE(held[0]->Send(std::string(1000, 'x')));
  EXPECT_EQ(Status(held[0]->Read()), 200);
}

TEST_F(Listener, PipelinedRequestsAreAnsweredInOrder) {
  Start(Quick());
  Client c(port_);
  ASSERT_TRUE(c.Send("GET /echo/1 HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\n"
                     "POST /body HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                     "GET /echo/4 HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const std::string r = c.Read(4);
  const size_t a = r.find("echo 1"), b = r.find("\r\n\r\nok"), d = r.find("got 3"),
               e = r.find("echo 4");
  ASSERT_NE(a, std::string::npos) << r;
  ASSERT_NE(b, std::string::npos) << r;
  ASSERT_NE(d, std::string::npos) << r;
  ASSERT_NE(e, std::string::npos) << r;
  EXPECT_LT(a, b);
  EXPECT_LT(b, d);
  EXPECT_LT(d, e);
  EXPECT_TRUE(c.Closed());
}

TEST_F(Listener, HealthAnswersWhileEveryWorkerIsBusy) {
  Start(Quick());
  Client b1(port_), b2(port_);
  ASSERT_TRUE(b1.Send("GET /block HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(b2.Send("GET /block HTTP/1.1\r\n\r\n"));
  WaitBlocked(2);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    Client h(port_);
    ASSERT_TRUE(h.Send("GET /health HTTP/1.1\r\n\r\n"));
    EXPECT_EQ(Status(h.Read()), 200);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(300));
  }
  Client unknown(port_);
  ASSERT_TRUE(unknown.Send("DELETE /echo/a HTTP/1.1\r\n\r\nGET /nowhere HTTP/1.1\r\n\r\n"));
  const std::string r = unknown.Read(2);
  EXPECT_EQ(Status(r), 405);
  EXPECT_NE(r.find("HTTP/1.1 404"), std::string::npos);
  {
    std::lock_guard<std::mutex> l(mu_);
    release_ = true;
  }
  cv_.notify_all();
  EXPECT_EQ(Status(b1.Read()), 200);
  EXPECT_EQ(Status(b2.Read()), 200);
}

TEST_F(Listener, StopAndAbortEndARunWhateverClientsDo) {
  Start(Quick());
  Client half(port_);
  ASSERT_TRUE(half.Send("GET /echo/a HTTP/1.1\r\nX: "));
  Client reader_gone(port_); // asks for an endless stream, never reads it
  ASSERT_TRUE(reader_gone.Send("GET /stream HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(http_->busy(), 1);
  const auto t0 = Clock::now();
  http_->Stop();
  EXPECT_TRUE(half.Closed()); // a half-sent request is dropped at once
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(http_->running()); // the stream's response is still under way
  http_->Abort();
  thread_.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_FALSE(http_->running());
  Client late(port_);
  EXPECT_FALSE(late.connected());
}

} // namespace
} // namespace kiln::serve
