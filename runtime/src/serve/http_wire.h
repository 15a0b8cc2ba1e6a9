// HTTP/1.1 request framing for kiln serve's listener (http_listener.h): an
// incremental parser that enforces every limit while the bytes arrive, so
// nothing a client sends is kept past a limit and the refusal goes out as
// soon as the limit is passed:
//   - the request head (request line and headers): max_head_bytes (431)
//     and max_headers (431);
//   - the body, with Content-Length (413 from the head alone) or chunked
//     (413 as soon as a chunk's size line takes the total past the limit,
//     before its data is read);
//   - Transfer-Encoding and Content-Length together, a repeated
//     Content-Length, obsolete line folding, a malformed request line: 400;
//     a transfer coding other than chunked: 501; not HTTP/1.x: 505.
// Pure: no sockets, no clocks (the listener owns the deadlines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::serve {

struct WireLimits {
  size_t max_head_bytes = 32 << 10; // request line + headers (+ chunked trailers)
  size_t max_headers = 100;
  uint64_t max_body_bytes = 4 << 20;
};

struct WireRequest {
  std::string method;
  std::string target; // as sent
  std::string path;   // target before '?', percent-decoded
  std::string query;  // after '?', as sent
  std::string version; // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers; // in order, values trimmed
  std::string body;
  bool keep_alive = true;
  bool expect_continue = false; // "Expect: 100-continue" with a body to come

  // The first value of header `name` (case-insensitive), or "".
  std::string Header(const std::string &name) const;
};

struct WireError {
  int status = 400;
  std::string message;
};

class RequestParser {
public:
  enum class State { kNeedMore, kDone, kError };

  explicit RequestParser(const WireLimits &limits) : limits_(limits) {}

  // Consumes bytes of one request from data[0, n). *used is how many it
  // took: after kDone the rest belong to the next request (pipelining).
  // After kDone or kError, Reset before feeding the next request.
  State Feed(const char *data, size_t n, size_t *used);
  // Any byte of this request seen (blank lines before it excepted).
  bool started() const { return started_; }
  // The head is parsed and a body is expected.
  bool in_body() const { return phase_ != Phase::kHead && phase_ != Phase::kDone; }
  // True once, right after the head of a request that asked for
  // "100 Continue" (the listener sends it, then the client its body).
  bool TakeContinue();
  WireRequest &request() { return req_; }
  const WireError &error() const { return error_; }
  void Reset();

private:
  enum class Phase { kHead, kLength, kChunkSize, kChunkData, kChunkEnd, kTrailer, kDone };
  State Fail(int status, std::string message);
  State ParseHead();
  State FeedChunked(const char *data, size_t n, size_t *i);

  WireLimits limits_;
  Phase phase_ = Phase::kHead;
  bool started_ = false;
  bool continue_pending_ = false;
  std::string head_;        // the head so far (then: the current chunk-size or trailer line)
  size_t trailer_bytes_ = 0;
  uint64_t remaining_ = 0;  // body bytes still to come (Content-Length or chunk)
  WireRequest req_;
  WireError error_;
};

// The reason phrase of an HTTP status ("Not Found"), or "Unknown".
const char *StatusReason(int status);

} // namespace kiln::serve
