#include "serve/http_wire.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace kiln::serve {
namespace {

// RFC 9110 token characters (method and header names).
bool IsToken(unsigned char c) {
  if (c >= '0' && c <= '9')
    return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
    return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IEquals(const std::string &a, const char *b) {
  const size_t n = std::strlen(b);
  if (a.size() != n)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string Trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t'))
    ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
    --e;
  return s.substr(b, e - b);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// Percent-decodes a path; false on a malformed escape or a decoded NUL.
bool DecodePath(const std::string &in, std::string *out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
      return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// Splits `s` at `sep` into its parts, each trimmed.
std::vector<std::string> SplitList(const std::string &s, char sep) {
  std::vector<std::string> parts;
  size_t b = 0;
  for (;;) {
    const size_t e = s.find(sep, b);
    parts.push_back(Trim(s.substr(b, e == std::string::npos ? std::string::npos : e - b)));
    if (e == std::string::npos)
      return parts;
    b = e + 1;
  }
}

} // namespace

std::string WireRequest::Header(const std::string &name) const {
  for (const auto &[k, v] : headers)
    if (IEquals(k, name.c_str()))
      return v;
  return "";
}

void RequestParser::Reset() {
  phase_ = Phase::kHead;
  started_ = false;
  continue_pending_ = false;
  head_.clear();
  trailer_bytes_ = 0;
  remaining_ = 0;
  req_ = WireRequest();
  error_ = WireError();
}

bool RequestParser::TakeContinue() {
  const bool c = continue_pending_;
  continue_pending_ = false;
  return c;
}

RequestParser::State RequestParser::Fail(int status, std::string message) {
  error_.status = status;
  error_.message = std::move(message);
  phase_ = Phase::kDone;
  return State::kError;
}

RequestParser::State RequestParser::Feed(const char *data, size_t n, size_t *used) {
  size_t i = 0;
  *used = 0;
  if (phase_ == Phase::kHead) {
    for (; i < n; ++i) {
      const char c = data[i];
      // Blank lines before a request line are skipped (RFC 9112 2.2).
      if (!started_ && (c == '\r' || c == '\n'))
        continue;
      started_ = true;
      head_.push_back(c);
      if (head_.size() > limits_.max_head_bytes) {
        *used = i + 1;
        return Fail(431, "the request head is larger than the server's limit of " +
                             std::to_string(limits_.max_head_bytes) + " bytes");
      }
      const size_t h = head_.size();
      if (c == '\n' && h >= 4 && head_.compare(h - 4, 4, "\r\n\r\n") == 0) {
        ++i;
        const State s = ParseHead();
        if (s != State::kNeedMore) {
          *used = i;
          return s;
        }
        break;
      }
      if (c == '\n' && h >= 2 && head_.compare(h - 2, 2, "\n\n") == 0) {
        *used = i + 1;
        return Fail(400, "malformed request head: lines must end with CRLF");
      }
    }
    if (phase_ == Phase::kHead) {
      *used = n;
      return State::kNeedMore;
    }
  }
  if (phase_ == Phase::kLength) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - i));
    req_.body.append(data + i, take);
    i += take;
    remaining_ -= take;
    *used = i;
    if (remaining_ == 0) {
      phase_ = Phase::kDone;
      return State::kDone;
    }
    return State::kNeedMore;
  }
  const State s = FeedChunked(data, n, &i);
  *used = i;
  return s;
}

RequestParser::State RequestParser::FeedChunked(const char *data, size_t n, size_t *pos) {
  size_t i = *pos;
  constexpr size_t kMaxSizeLine = 1024; // hex digits and chunk extensions
  while (i < n) {
    switch (phase_) {
    case Phase::kChunkSize: {
      const char c = data[i++];
      head_.push_back(c);
      if (head_.size() > kMaxSizeLine) {
        *pos = i;
        return Fail(400, "a chunk-size line longer than " + std::to_string(kMaxSizeLine) +
                             " bytes");
      }
      if (c != '\n')
        break;
      if (head_.size() < 2 || head_[head_.size() - 2] != '\r') {
        *pos = i;
        return Fail(400, "malformed chunked body: a chunk-size line must end with CRLF");
      }
      uint64_t size = 0;
      size_t d = 0;
      for (; d < head_.size() && HexValue(head_[d]) >= 0; ++d) {
        if (size > (uint64_t{1} << 56)) {
          *pos = i;
          return Fail(413, "the request body is larger than the server's limit of " +
                               std::to_string(limits_.max_body_bytes) + " bytes");
        }
        size = size * 16 + static_cast<uint64_t>(HexValue(head_[d]));
      }
      const char after = d < head_.size() ? head_[d] : '\0';
      if (d == 0 || (after != ';' && after != '\r' && after != ' ' && after != '\t')) {
        *pos = i;
        return Fail(400, "malformed chunked body: a chunk size must be hexadecimal");
      }
      head_.clear();
      if (size > limits_.max_body_bytes - std::min<uint64_t>(limits_.max_body_bytes,
                                                             req_.body.size())) {
        *pos = i;
        return Fail(413, "the request body is larger than the server's limit of " +
                             std::to_string(limits_.max_body_bytes) + " bytes");
      }
      if (size == 0) {
        phase_ = Phase::kTrailer;
      } else {
        remaining_ = size;
        phase_ = Phase::kChunkData;
      }
      break;
    }
    case Phase::kChunkData: {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - i));
      req_.body.append(data + i, take);
      i += take;
      remaining_ -= take;
      if (remaining_ == 0)
        phase_ = Phase::kChunkEnd;
      break;
    }
    case Phase::kChunkEnd: {
      head_.push_back(data[i++]);
      if (head_.size() < 2)
        break;
      if (head_ != "\r\n") {
        *pos = i;
        return Fail(400, "malformed chunked body: chunk data must be followed by CRLF");
      }
      head_.clear();
      phase_ = Phase::kChunkSize;
      break;
    }
    case Phase::kTrailer: {
      const char c = data[i++];
      head_.push_back(c);
      if (++trailer_bytes_ > limits_.max_head_bytes) {
        *pos = i;
        return Fail(431, "the chunked body's trailer is larger than the server's limit of " +
                             std::to_string(limits_.max_head_bytes) + " bytes");
      }
      if (c != '\n')
        break;
      if (head_.size() < 2 || head_[head_.size() - 2] != '\r') {
        *pos = i;
        return Fail(400, "malformed chunked body: trailer lines must end with CRLF");
      }
      const bool last = head_.size() == 2;
      head_.clear();
      if (last) { // trailer fields are read past, not kept
        phase_ = Phase::kDone;
        *pos = i;
        return State::kDone;
      }
      break;
    }
    default:
      *pos = i;
      return Fail(500, "the request parser was fed after it finished");
    }
  }
  *pos = i;
  return State::kNeedMore;
}

RequestParser::State RequestParser::ParseHead() {
  // head_ ends with "\r\n\r\n"; every line ends with CRLF.
  std::vector<std::string> lines;
  size_t b = 0;
  for (;;) {
    const size_t e = head_.find("\r\n", b);
    if (e == b || e == std::string::npos)
      break;
    lines.push_back(head_.substr(b, e - b));
    b = e + 2;
  }
  for (const std::string &line : lines)
    if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos ||
        line.find('\0') != std::string::npos)
      return Fail(400, "malformed request head: a bare CR, LF or NUL inside a line");
  if (lines.empty())
    return Fail(400, "malformed request line");
  // Request line: METHOD SP target SP HTTP/1.x
  const std::string &rl = lines[0];
  const size_t s1 = rl.find(' ');
  const size_t s2 = s1 == std::string::npos ? s1 : rl.find(' ', s1 + 1);
  if (s1 == std::string::npos || s2 == std::string::npos || rl.find(' ', s2 + 1) != std::string::npos)
    return Fail(400, "malformed request line (METHOD TARGET HTTP/1.1)");
  req_.method = rl.substr(0, s1);
  req_.target = rl.substr(s1 + 1, s2 - s1 - 1);
  req_.version = rl.substr(s2 + 1);
  if (req_.method.empty() ||
      !std::all_of(req_.method.begin(), req_.method.end(),
                   [](char c) { return IsToken(static_cast<unsigned char>(c)); }))
    return Fail(400, "malformed request line: the method is not a token");
  if (req_.version != "HTTP/1.1" && req_.version != "HTTP/1.0") {
    if (req_.version.rfind("HTTP/", 0) == 0)
      return Fail(505, "HTTP version '" + req_.version + "' is not supported (HTTP/1.1)");
    return Fail(400, "malformed request line: no HTTP version");
  }
  if (req_.target.empty() || req_.target[0] != '/')
    return Fail(400, "the request target must be a path starting with '/'");
  for (unsigned char c : req_.target)
    if (c <= 0x20 || c >= 0x7f)
      return Fail(400, "the request target has a byte that must be percent-encoded");
  const size_t q = req_.target.find('?');
  if (!DecodePath(req_.target.substr(0, q), &req_.path))
    return Fail(400, "the request path has a malformed percent escape");
  if (q != std::string::npos)
    req_.query = req_.target.substr(q + 1);

  if (lines.size() - 1 > limits_.max_headers)
    return Fail(431, "the request has more than the server's limit of " +
                         std::to_string(limits_.max_headers) + " header fields");
  bool have_length = false, chunked = false, have_te = false;
  uint64_t length = 0;
  std::string connection;
  for (size_t k = 1; k < lines.size(); ++k) {
    const std::string &line = lines[k];
    if (line[0] == ' ' || line[0] == '\t')
      return Fail(400, "obsolete header line folding is not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0)
      return Fail(400, "malformed header line (NAME: VALUE)");
    std::string name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(),
                     [](char c) { return IsToken(static_cast<unsigned char>(c)); }))
      return Fail(400, "malformed header name (no spaces before ':')");
    std::string value = Trim(line.substr(colon + 1));
    if (IEquals(name, "content-length")) {
      if (value.empty() || value.size() > 19 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return Fail(400, "Content-Length must be a decimal number");
      const uint64_t v = std::stoull(value);
      if (have_length && v != length)
        return Fail(400, "two different Content-Length values");
      have_length = true;
      length = v;
    } else if (IEquals(name, "transfer-encoding")) {
      have_te = true;
      for (const std::string &coding : SplitList(value, ',')) {
        if (chunked)
          return Fail(400, "chunked must be the last transfer coding");
        if (IEquals(coding, "chunked"))
          chunked = true;
        else
          return Fail(501, "transfer coding '" + coding + "' is not supported (chunked only)");
      }
    } else if (IEquals(name, "connection")) {
      connection = value;
    } else if (IEquals(name, "expect")) {
      if (!IEquals(value, "100-continue"))
        return Fail(417, "Expect: '" + value + "' cannot be met (100-continue only)");
      req_.expect_continue = true;
    }
    req_.headers.emplace_back(std::move(name), std::move(value));
  }
  if (have_te && !chunked)
    return Fail(400, "Transfer-Encoding without chunked");
  if (have_te && have_length)
    return Fail(400, "Transfer-Encoding and Content-Length together");
  if (chunked && req_.version == "HTTP/1.0")
    return Fail(400, "chunked bodies need HTTP/1.1");
  req_.keep_alive = req_.version == "HTTP/1.1";
  for (const std::string &opt : SplitList(connection, ',')) {
    if (IEquals(opt, "close"))
      req_.keep_alive = false;
    else if (IEquals(opt, "keep-alive"))
      req_.keep_alive = true;
  }
  head_.clear();
  if (have_length && length > limits_.max_body_bytes)
    return Fail(413, "the request body (" + std::to_string(length) +
                         " bytes) is larger than the server's limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  const bool body = chunked || length > 0;
  if (!body)
    req_.expect_continue = false;
  continue_pending_ = req_.expect_continue;
  if (chunked) {
    phase_ = Phase::kChunkSize;
    return State::kNeedMore;
  }
  if (length > 0) {
    req_.body.reserve(static_cast<size_t>(length));
    remaining_ = length;
    phase_ = Phase::kLength;
    return State::kNeedMore;
  }
  phase_ = Phase::kDone;
  return State::kDone;
}

const char *StatusReason(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 413: return "Content Too Large";
  case 417: return "Expectation Failed";
  case 422: return "Unprocessable Content";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

} // namespace kiln::serve
