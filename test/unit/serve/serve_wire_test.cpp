// The HTTP request parser of kiln serve's listener (serve/http_wire.h):
// framing, every limit enforced while bytes arrive, and refusals of the
// ambiguous forms that request smuggling relies on.
#include "serve/http_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln::serve {
namespace {

struct Fed {
  RequestParser::State state;
  size_t used;
};

Fed FeedAll(RequestParser &p, const std::string &bytes) {
  size_t used = 0;
  const RequestParser::State s = p.Feed(bytes.data(), bytes.size(), &used);
  return {s, used};
}

// Feeds one byte at a time; the state after the last byte fed.
RequestParser::State FeedBytewise(RequestParser &p, const std::string &bytes, size_t *fed) {
  RequestParser::State s = RequestParser::State::kNeedMore;
  for (*fed = 0; *fed < bytes.size();) {
    size_t used = 0;
    s = p.Feed(bytes.data() + *fed, 1, &used);
    *fed += used;
    if (s != RequestParser::State::kNeedMore)
      return s;
  }
  return s;
}

WireLimits Small() {
  WireLimits l;
  l.max_head_bytes = 512;
  l.max_headers = 8;
  l.max_body_bytes = 1024;
  return l;
}

TEST(HttpWire, GetWithHeaders) {
  RequestParser p(Small());
  const Fed f = FeedAll(p, "\r\nGET /v1/models/a%2Fb?x=1 HTTP/1.1\r\nHost: x\r\nX-A:  padded \t\r\n\r\n");
  ASSERT_EQ(f.state, RequestParser::State::kDone);
  const WireRequest &r = p.request();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/v1/models/a%2Fb?x=1");
  EXPECT_EQ(r.path, "/v1/models/a/b");
  EXPECT_EQ(r.query, "x=1");
  EXPECT_EQ(r.Header("host"), "x");
  EXPECT_EQ(r.Header("X-A"), "padded");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpWire, BytewiseEqualsWholeAndPipelinedRequestsSplit) {
  const std::string one = "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  const std::string two = "GET /b HTTP/1.1\r\nConnection: close\r\n\r\n";
  RequestParser p(Small());
  const Fed f = FeedAll(p, one + two);
  ASSERT_EQ(f.state, RequestParser::State::kDone);
  EXPECT_EQ(f.used, one.size()); // the second request is left for the next parse
  EXPECT_EQ(p.request().body, "hello");
  p.Reset();
  const Fed g = FeedAll(p, two);
  ASSERT_EQ(g.state, RequestParser::State::kDone);
  EXPECT_EQ(p.request().path, "/b");
  EXPECT_FALSE(p.request().keep_alive);

  RequestParser q(Small());
  size_t fed = 0;
  ASSERT_EQ(FeedBytewise(q, one + two, &fed), RequestParser::State::kDone);
  EXPECT_EQ(fed, one.size());
  EXPECT_EQ(q.request().body, "hello");
}

TEST(HttpWire, ChunkedBodyWithExtensionsAndTrailer) {
  RequestParser p(Small());
  size_t fed = 0;
  const std::string req = "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
  ASSERT_EQ(FeedBytewise(p, req, &fed), RequestParser::State::kDone);
  EXPECT_EQ(fed, req.size());
  EXPECT_EQ(p.request().body, "hello world");
}

TEST(HttpWire, ChunkedBodyPastTheLimitIsRefusedAtItsSizeLine) {
  RequestParser p(Small());
  // A 1 MiB chunk against a 1 KiB limit: refused once its size line ends,
  // before a byte of its data.
  const std::string head = "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  Fed f = FeedAll(p, head + "100000\r\n");
  ASSERT_EQ(f.state, RequestParser::State::kError);
  EXPECT_EQ(p.error().status, 413);
  EXPECT_EQ(f.used, head.size() + 8);
  // Small chunks adding up past it: refused at the chunk that passes it.
  RequestParser q(Small());
  std::string body;
  for (int i = 0; i < 4; ++i)
    body += "100\r\n" + std::string(256, 'a') + "\r\n"; // 1024 bytes: at the limit
  ASSERT_EQ(FeedAll(q, head + body).state, RequestParser::State::kNeedMore);
  f = FeedAll(q, "1\r\n");
  ASSERT_EQ(f.state, RequestParser::State::kError);
  EXPECT_EQ(q.error().status, 413);
  // A size that overflows 64 bits.
  RequestParser r(Small());
  ASSERT_EQ(FeedAll(r, head + "fffffffffffffffffffff\r\n").state, RequestParser::State::kError);
  EXPECT_EQ(r.error().status, 413);
}

TEST(HttpWire, ContentLengthAtAndPastTheLimit) {
  RequestParser p(Small());
  const std::string at = "POST /a HTTP/1.1\r\nContent-Length: 1024\r\n\r\n" + std::string(1024, 'b');
  ASSERT_EQ(FeedAll(p, at).state, RequestParser::State::kDone); // the near miss: accepted
  EXPECT_EQ(p.request().body.size(), 1024u);
  RequestParser q(Small());
  ASSERT_EQ(FeedAll(q, "POST /a HTTP/1.1\r\nContent-Length: 1025\r\n\r\n").state,
            RequestParser::State::kError);
  EXPECT_EQ(q.error().status, 413);
}

TEST(HttpWire, HeadLimitsBytesAndCount) {
  RequestParser p(Small());
  // No end of head in sight: refused as soon as the limit is passed.
  const Fed f = FeedAll(p, "GET / HTTP/1.1\r\nX: " + std::string(2000, 'a'));
  ASSERT_EQ(f.state, RequestParser::State::kError);
  EXPECT_EQ(p.error().status, 431);
  EXPECT_EQ(f.used, 513u);

  std::string eight = "GET / HTTP/1.1\r\n", nine;
  for (int i = 0; i < 8; ++i)
    eight += "H" + std::to_string(i) + ": v\r\n";
  nine = eight + "H8: v\r\n";
  RequestParser q(Small());
  EXPECT_EQ(FeedAll(q, eight + "\r\n").state, RequestParser::State::kDone);
  RequestParser r(Small());
  ASSERT_EQ(FeedAll(r, nine + "\r\n").state, RequestParser::State::kError);
  EXPECT_EQ(r.error().status, 431);
}

TEST(HttpWire, AmbiguousAndMalformedRequestsAreRefused) {
  const std::pair<std::string, int> cases[] = {
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET /\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"GET /a%0 HTTP/1.1\r\n\r\n", 400},
      {"GET /a%00b HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX : a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400},
      {"GET / HTTP/1.1\nX: a\n\n", 400},
      {"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417},
  };
  for (const auto &[req, status] : cases) {
    RequestParser p(Small());
    EXPECT_EQ(FeedAll(p, req).state, RequestParser::State::kError) << req;
    EXPECT_EQ(p.error().status, status) << req;
    EXPECT_FALSE(p.error().message.empty());
  }
}

TEST(HttpWire, MalformedChunkedBodies) {
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string body : {"zz\r\n", "5\r\nhelloXY", "5\nhello\r\n", "\r\n",
                                 "3\r\nabc\r\n0\r\nX: y\n\r\n"}) {
    RequestParser p(Small());
    EXPECT_EQ(FeedAll(p, head + body).state, RequestParser::State::kError) << body;
    EXPECT_EQ(p.error().status, 400) << body;
  }
}

TEST(HttpWire, ConnectionAndExpect) {
  RequestParser p(Small());
  ASSERT_EQ(FeedAll(p, "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n").state,
            RequestParser::State::kNeedMore);
  EXPECT_TRUE(p.TakeContinue());
  EXPECT_FALSE(p.TakeContinue());
  ASSERT_EQ(FeedAll(p, "ok").state, RequestParser::State::kDone);

  RequestParser q(Small());
  ASSERT_EQ(FeedAll(q, "GET / HTTP/1.0\r\n\r\n").state, RequestParser::State::kDone);
  EXPECT_FALSE(q.request().keep_alive);
  q.Reset();
  ASSERT_EQ(FeedAll(q, "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").state,
            RequestParser::State::kDone);
  EXPECT_TRUE(q.request().keep_alive);
  q.Reset();
  ASSERT_EQ(FeedAll(q, "GET / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n").state,
            RequestParser::State::kDone);
  EXPECT_FALSE(q.request().keep_alive);
}

} // namespace
} // namespace kiln::serve
