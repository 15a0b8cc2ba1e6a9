// How the --replicas front end forwards one request to a replica: an
// httplib client on its own thread, so the front end's handler sees the
// status and headers first and then the body piece by piece as the replica
// writes it (a stream is relayed event by event, never buffered whole).
// And the relay of a server-sent-event stream: complete events only, with
// the usage chunk read for the key's token quota.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace httplib {
class Client;
}

namespace kiln::serve {

class UpstreamCall {
public:
  using Clock = std::chrono::steady_clock;
  // Replica `index` (process `pid`) on 127.0.0.1:`port`, which accepts `key`.
  UpstreamCall(int index, int port, int pid, std::string key, double read_timeout_s);
  ~UpstreamCall(); // aborts what still runs and joins the thread

  // Sends the request (on the call's thread), with `headers` beside the key.
  void Start(const std::string &method, const std::string &path, std::string body,
             std::vector<std::pair<std::string, std::string>> headers = {});
  // Waits for the response's status and headers; false when the call failed
  // before them (connect_failed() or error() says how).
  bool WaitHeaders();
  int status() const;
  std::string header(const std::string &name) const;

  enum class Read { kData, kEnd, kTimeout };
  // Appends the body's next bytes to *out (kData), or says the body ended
  // (kEnd: failed() says whether cleanly) or nothing came before `until`.
  Read Next(std::string *out, Clock::time_point until);
  // Waits for the end of the call and returns the whole body.
  std::string WaitBody();

  bool failed() const;         // ended without a whole response
  bool connect_failed() const; // the replica never took the request: safe to retry elsewhere
  std::string error() const;   // what failed (httplib's words), or the Abort reason
  // Ends the call from any thread: the connection to the replica is shut,
  // so the replica sees its client leave and cancels the request.
  void Abort(const std::string &reason);
  std::string aborted() const; // the Abort reason, "" when none

  int index() const { return index_; }
  int pid() const { return pid_; }
  int port() const { return port_; }

private:
  void Run(std::string method, std::string path, std::string body,
           std::vector<std::pair<std::string, std::string>> headers);

  const int index_, port_, pid_;
  const std::string key_;
  const double read_timeout_s_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  httplib::Client *client_ = nullptr; // while the call runs, for Abort
  bool have_headers_ = false, done_ = false, ok_ = false, connect_failed_ = false;
  int status_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string pending_; // body bytes not read yet
  std::string error_, abort_reason_;
  std::thread thread_;
};

// Splits a replica's SSE body into whole events ("...\n\n"). The usage
// chunk (choices [] and usage) gives the token counts; with `drop_usage`
// (the front end asked for it, the client did not) it is not relayed.
class SseRelay {
public:
  explicit SseRelay(bool drop_usage) : drop_usage_(drop_usage) {}
  // The complete events that `piece` completes, in order, each ending with
  // its blank line.
  std::vector<std::string> Feed(const std::string &piece);
  bool done() const { return done_; } // "data: [DONE]" passed
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }

private:
  bool drop_usage_;
  bool done_ = false;
  std::string partial_;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
};

// Usage of a whole (non-streamed) OpenAI response body; false when it has none.
bool ReadUsage(const std::string &body, int64_t *prompt_tokens, int64_t *completion_tokens);

} // namespace kiln::serve
