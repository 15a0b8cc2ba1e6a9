// The TCP rendezvous store (store.h): rank 0 runs a server thread on
// HOST:PORT holding the keys; every rank talks to it over one connection.
//
// Messages are a one-byte verb and length-prefixed strings (lengths as 4
// little-endian bytes):
//   'S' key value  ->  'K'                  set a key (wakes its waiters)
//   'G' key        ->  'V' value            when the key is set (or at once)
// A client gives up on a Get after its timeout by closing the connection;
// the server drops that connection's waits. Also OpenStore and the address
// parsing.
#include "comm/file_store.h"
#include "comm/store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

namespace kiln::comm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxBytes = 64u << 20; // a key or a value; gloo's are ~100 bytes

void PutU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutString(std::string &out, const std::string &s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads exactly n bytes by `deadline`; false on EOF, error or timeout.
bool ReadFull(int fd, char *out, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30))) <= 0)
      return false;
    const ssize_t got = ::recv(fd, out, n, 0);
    if (got <= 0)
      return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteFull(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// The server: one thread, poll() over the listener and every connection.
class StoreServer {
public:
  explicit StoreServer(int listener) : listener_(listener) {}

  void Run() {
    for (;;) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (const auto &c : conns_)
        fds.push_back({c.first, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR)
          continue;
        return;
      }
      if (fds[0].revents & POLLIN) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd >= 0)
          conns_[fd] = std::string();
      }
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
          Read(fds[i].fd);
    }
  }

private:
  void Drop(int fd) {
    ::close(fd);
    conns_.erase(fd);
    for (auto &w : waiters_)
      w.second.erase(std::remove(w.second.begin(), w.second.end(), fd), w.second.end());
  }

  void Read(int fd) {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      return Drop(fd);
    std::string &in = conns_[fd];
    in.append(buf, static_cast<size_t>(n));
    // Handle every whole message buffered.
    for (;;) {
      size_t at = 1;
      std::string parts[2];
      if (in.empty())
        return;
      const char verb = in[0];
      const int want = verb == 'S' ? 2 : verb == 'G' ? 1 : -1;
      if (want < 0)
        return Drop(fd); // not a client of this store
      bool whole = true;
      for (int k = 0; k < want && whole; ++k) {
        if (in.size() < at + 4) {
          whole = false;
          break;
        }
        uint32_t len = 0;
        for (int b = 0; b < 4; ++b)
          len |= static_cast<uint32_t>(static_cast<unsigned char>(in[at + b])) << (8 * b);
        if (len > kMaxBytes)
          return Drop(fd);
        if (in.size() < at + 4 + len) {
          whole = false;
          break;
        }
        parts[k] = in.substr(at + 4, len);
        at += 4 + len;
      }
      if (!whole)
        return;
      in.erase(0, at);
      if (verb == 'S') {
        values_[parts[0]] = parts[1];
        if (!WriteFull(fd, "K"))
          return Drop(fd);
        auto w = waiters_.find(parts[0]);
        if (w != waiters_.end()) {
          std::vector<int> ready = std::move(w->second);
          waiters_.erase(w);
          for (int other : ready)
            Reply(other, parts[1]);
        }
      } else {
        auto v = values_.find(parts[0]);
        if (v != values_.end())
          Reply(fd, v->second);
        else
          waiters_[parts[0]].push_back(fd);
      }
      if (!conns_.count(fd))
        return;
    }
  }

  void Reply(int fd, const std::string &value) {
    std::string out = "V";
    PutString(out, value);
    if (!WriteFull(fd, out))
      Drop(fd);
  }

  int listener_;
  std::map<int, std::string> conns_; // fd -> bytes not yet handled
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<int>> waiters_;
};

// Resolves host:port to a TCP address of either family.
StatusOr<addrinfo *> Resolve(const std::string &host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo *res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0)
    return InvalidArgument("rendezvous: cannot resolve '" + host + "': " + ::gai_strerror(rc));
  return res;
}

// Rank 0: binds HOST:PORT and serves for the rest of the process.
Status StartServer(const std::string &host, int port) {
  KILN_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, /*passive=*/true));
  std::string why = "no address";
  int fd = -1;
  for (addrinfo *a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0)
      continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0)
      break;
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0)
    return InvalidArgument("rendezvous: rank 0 cannot listen on " + host + ":" +
                           std::to_string(port) + " (" + why +
                           "): the address must be rank 0's, and the port free");
  std::thread([fd] { StoreServer(fd).Run(); }).detach();
  return Status::Ok();
}

class TcpStore : public Store {
public:
  TcpStore(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~TcpStore() override {
    if (fd_ >= 0)
      ::close(fd_);
  }

  // Connects, retrying until `deadline` (rank 0's server may start later).
  Status Connect(Clock::time_point deadline) {
    std::string why;
    for (;;) {
      KILN_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host_, port_, /*passive=*/false));
      for (addrinfo *a = res; a && fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int yes = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
          fd_ = fd;
        } else {
          why = std::strerror(errno);
          ::close(fd);
        }
      }
      ::freeaddrinfo(res);
      if (fd_ >= 0)
        return Status::Ok();
      if (Clock::now() >= deadline)
        return Internal("rendezvous: cannot reach the store at " + Where() + " (" + why +
                        "): is rank 0 running, and the address rank 0's?");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  Status Set(const std::string &key, const std::vector<char> &value) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string msg = "S";
    PutString(msg, key);
    PutString(msg, std::string(value.begin(), value.end()));
    char ack = 0;
    if (!WriteFull(fd_, msg) ||
        !ReadFull(fd_, &ack, 1, Clock::now() + std::chrono::seconds(60)) || ack != 'K')
      return Internal("rendezvous: the store at " + Where() + " did not take '" + key +
                      "' (rank 0 gone?)");
    return Status::Ok();
  }

  StatusOr<std::vector<char>> Get(const std::string &key,
                                  std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point deadline = Clock::now() + timeout;
    std::string msg = "G";
    PutString(msg, key);
    char head[5];
    if (!WriteFull(fd_, msg) || !ReadFull(fd_, head, 5, deadline) || head[0] != 'V') {
      // The server may still answer this Get later: the connection is out
      // of step now, so it is closed (and later calls fail).
      ::close(fd_);
      fd_ = -1;
      return Internal("rendezvous: no rank published '" + key + "' in the store at " + Where() +
                      " within " + std::to_string(timeout.count()) +
                      " ms (a rank did not start, or the ranks use different rendezvous addresses)");
    }
    uint32_t len = 0;
    for (int b = 0; b < 4; ++b)
      len |= static_cast<uint32_t>(static_cast<unsigned char>(head[1 + b])) << (8 * b);
    std::vector<char> value(len);
    if (len > kMaxBytes || !ReadFull(fd_, value.data(), len, deadline))
      return Internal("rendezvous: the store at " + Where() + " sent a broken value for '" +
                      key + "'");
    return value;
  }

  std::string Where() const override { return "tcp://" + host_ + ":" + std::to_string(port_); }

private:
  std::string host_;
  int port_;
  int fd_ = -1;
  std::mutex mu_;
};

} // namespace

bool IsTcpAddress(const std::string &address) { return address.rfind("tcp://", 0) == 0; }

Status ParseTcpAddress(const std::string &address, std::string *host, int *port) {
  static const std::regex kTcp(R"(tcp://(\[[0-9a-fA-F:.]+\]|[^:/\[\]]+):([0-9]{1,5}))");
  std::smatch m;
  if (!std::regex_match(address, m, kTcp))
    return InvalidArgument("rendezvous address '" + address + "' is not tcp://HOST:PORT");
  *host = m[1];
  if (host->front() == '[')
    *host = host->substr(1, host->size() - 2);
  *port = std::stoi(m[2]);
  if (*port < 1 || *port > 65535)
    return InvalidArgument("rendezvous address '" + address + "': port not in [1, 65535]");
  return Status::Ok();
}

StatusOr<std::unique_ptr<Store>> OpenStore(const std::string &address, int rank,
                                           std::chrono::milliseconds timeout) {
  if (!IsTcpAddress(address)) {
    if (address.empty())
      return InvalidArgument("the rendezvous needs a directory or tcp://HOST:PORT");
    return std::unique_ptr<Store>(new FileStore(address));
  }
  std::string host;
  int port = 0;
  KILN_RETURN_IF_ERROR(ParseTcpAddress(address, &host, &port));
  if (rank == 0)
    KILN_RETURN_IF_ERROR(StartServer(host, port));
  auto store = std::make_unique<TcpStore>(host, port);
  KILN_RETURN_IF_ERROR(store->Connect(Clock::now() + timeout));
  return std::unique_ptr<Store>(std::move(store));
}

} // namespace kiln::comm
