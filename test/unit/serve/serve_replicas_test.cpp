// The --replicas front end's pure parts: the least-loaded choice, the SSE
// relay (whole events, the usage chunk read and dropped), the usage of a
// whole body, and /metrics merged from the front end and its replicas.
#include "serve/metrics.h"
#include "serve/replica_balancer.h"
#include "serve/replica_proxy.h"
#include "serve/replica_supervisor.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <thread>

namespace kiln::serve {
namespace {

TEST(ServeReplicas, NoReplicaUpPicksNone) {
  LeastLoaded b(3);
  EXPECT_EQ(b.Acquire().index, -1);
  EXPECT_EQ(b.up_count(), 0);
}

TEST(ServeReplicas, LeastLoadedWinsAndTiesTakeTurns) {
  LeastLoaded b(3);
  for (int i = 0; i < 3; ++i)
    b.SetUp(i, 9000 + i, 100 + i);
  // All idle: ties go round robin, so three requests land on three replicas.
  const LeastLoaded::Pick p0 = b.Acquire(), p1 = b.Acquire(), p2 = b.Acquire();
  EXPECT_EQ(p0.index, 0);
  EXPECT_EQ(p1.index, 1);
  EXPECT_EQ(p2.index, 2);
  EXPECT_EQ(p1.port, 9001);
  EXPECT_EQ(p2.pid, 102);
  // Replica 1 finishes: it has the fewest in flight, whoever's turn it is.
  b.Release(1);
  EXPECT_EQ(b.Acquire().index, 1);
  // Then replica 2 finishes: it gets the next one.
  b.Release(2);
  EXPECT_EQ(b.Acquire().index, 2);
  EXPECT_EQ(b.in_flight(0), 1);
  EXPECT_EQ(b.in_flight(1), 1);
  EXPECT_EQ(b.in_flight(2), 1);
}

TEST(ServeReplicas, EvenSpreadUnderSteadyLoad) {
  LeastLoaded b(2);
  b.SetUp(0, 1, 1);
  b.SetUp(1, 2, 2);
  std::map<int, int> count;
  for (int i = 0; i < 100; ++i) {
    const int r = b.Acquire().index;
    ++count[r];
    b.Release(r); // each finishes before the next: every pick is a tie
  }
  EXPECT_EQ(count[0], 50);
  EXPECT_EQ(count[1], 50);
}

TEST(ServeReplicas, DownReplicaGetsNothingAndExcludedIsSkipped) {
  LeastLoaded b(3);
  for (int i = 0; i < 3; ++i)
    b.SetUp(i, 1, 1);
  b.SetDown(1);
  EXPECT_FALSE(b.up(1));
  EXPECT_EQ(b.up_count(), 2);
  for (int i = 0; i < 6; ++i)
    EXPECT_NE(b.Acquire().index, 1);
  // Replica 0 refused a connection for this request: only 2 is left to try.
  EXPECT_EQ(b.Acquire({true, false, false}).index, 2);
  EXPECT_EQ(b.Acquire({true, false, true}).index, -1);
  // Up again (a restart), on a new port: it is the least loaded at once.
  b.SetUp(1, 7777, 42);
  const LeastLoaded::Pick p = b.Acquire();
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(p.port, 7777);
  // Releasing below zero is ignored.
  b.Release(1);
  b.Release(1);
  EXPECT_EQ(b.in_flight(1), 0);
}

TEST(ServeReplicas, SseRelayPassesWholeEventsOnly) {
  SseRelay relay(/*drop_usage=*/false);
  EXPECT_TRUE(relay.Feed("data: {\"choices\":[{\"text\":\"a\"}]}\n").empty());
  auto events = relay.Feed("\n: keep-alive\n\ndata: {\"choices\":[{\"te");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
  EXPECT_EQ(events[1], ": keep-alive\n\n");
  EXPECT_FALSE(relay.done());
  events = relay.Feed("xt\":\"b\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,"
                      "\"completion_tokens\":5}}\n\ndata: [DONE]\n\n");
  ASSERT_EQ(events.size(), 3u); // the usage chunk is kept: the client asked for it
  EXPECT_NE(events[1].find("usage"), std::string::npos);
  EXPECT_EQ(events[2], "data: [DONE]\n\n");
  EXPECT_TRUE(relay.done());
  EXPECT_EQ(relay.prompt_tokens(), 3);
  EXPECT_EQ(relay.completion_tokens(), 5);
}

TEST(ServeReplicas, SseRelayDropsTheUsageItAskedFor) {
  SseRelay relay(/*drop_usage=*/true);
  // A chunk with a "usage" word in its text is not the usage chunk.
  const std::string text = "data: {\"choices\":[{\"text\":\"\\\"usage\\\"\"}]}\n\n";
  auto events = relay.Feed(text + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,"
                                  "\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], text);
  EXPECT_EQ(events[1], "data: [DONE]\n\n");
  EXPECT_EQ(relay.prompt_tokens(), 7);
  EXPECT_EQ(relay.completion_tokens(), 2);
}

TEST(ServeReplicas, UsageOfAWholeBody) {
  int64_t p = -1, c = -1;
  EXPECT_TRUE(ReadUsage("{\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":9}}", &p, &c));
  EXPECT_EQ(p, 4);
  EXPECT_EQ(c, 9);
  EXPECT_FALSE(ReadUsage("{\"error\":{}}", &p, &c));
  EXPECT_FALSE(ReadUsage("not json", &p, &c));
}

TEST(ServeReplicas, MetricsMergedOncePerFamilyWithReplicaLabels) {
  Metrics front;
  front.Declare("kiln_replicas", "gauge", "replicas by state", "state");
  front.Set("kiln_replicas", 2, "total");
  front.Add("kiln_http_requests_total", 3, "200");
  front.Add("kiln_generation_tokens_total", 99); // not the front end's: left out
  Metrics replica;
  replica.Add("kiln_http_requests_total", 2, "200");
  replica.Add("kiln_generation_tokens_total", 40);
  replica.Add("kiln_rejections_total", 1, "bad_request");
  replica.Observe("kiln_time_to_first_token_seconds", 0.02);
  const std::string text = MergeExpositions(
      front.Render(), {"kiln_http_requests_total", "kiln_replicas", "kiln_rejections_total"},
      {{0, replica.Render()}, {1, replica.Render()}}, {"kiln_http_requests_total"});
  auto count = [&](const std::string &s) {
    size_t n = 0;
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("# TYPE kiln_generation_tokens_total counter\n"), 1u);
  EXPECT_EQ(count("# TYPE kiln_time_to_first_token_seconds histogram\n"), 1u);
  EXPECT_EQ(count("kiln_http_requests_total{code=\"200\"} 3\n"), 1u);
  EXPECT_EQ(count("kiln_http_requests_total{replica="), 0u); // counted once, at the front
  EXPECT_EQ(count("kiln_generation_tokens_total 99"), 0u);
  EXPECT_EQ(count("kiln_generation_tokens_total{replica=\"0\"} 40\n"), 1u);
  EXPECT_EQ(count("kiln_generation_tokens_total{replica=\"1\"} 40\n"), 1u);
  EXPECT_EQ(count("kiln_rejections_total{replica=\"1\",reason=\"bad_request\"} 1\n"), 1u);
  EXPECT_EQ(count("kiln_time_to_first_token_seconds_bucket{replica=\"0\",le=\"0.025\"} 1\n"), 1u);
  EXPECT_EQ(count("kiln_replicas{state=\"total\"} 2\n"), 1u);
  // Every sample follows its own family's TYPE line.
  std::string family;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = text.substr(start, end - start);
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.empty() || line[0] == '#')
      continue;
    EXPECT_EQ(line.rfind(family, 0), 0u) << line << " after family " << family;
  }
}

// Fake replicas: a shell that prints kiln serve's first line with the port
// of an in-process server whose /ready answers 200, then sleeps. Killing
// one is a crash.
class FakeReplicas : public ::testing::Test {
protected:
  void SetUp() override {
    ready_.Get("/ready", [](const httplib::Request &, httplib::Response &res) {
      res.set_content("{}", "application/json");
    });
    port_ = ready_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    listener_ = std::thread([this] { ready_.listen_after_bind(); });
  }
  void TearDown() override {
    ready_.stop();
    listener_.join();
  }
  ReplicaOptions Options(int count, const std::string &script) {
    ReplicaOptions o;
    o.exe = "/bin/sh";
    o.argv = {"sh", "-c", script, "fake-replica"};
    o.count = count;
    o.start_timeout_s = 30;
    o.backoff_initial_s = 0.05;
    o.backoff_max_s = 0.1;
    o.max_fast_crashes = 2;
    return o;
  }
  std::string Sleeper() const {
    return "echo 'kiln serve: fake on http://127.0.0.1:" + std::to_string(port_) +
           " (no auth)'; exec sleep 600";
  }
  // SIGKILL to one fake replica; never to a pid <= 0 (kill(-1) would signal
  // every process of the user).
  static void Crash(int pid) {
    ASSERT_GT(pid, 1);
    ::kill(pid, SIGKILL);
  }
  // Waits up to 20 s for `done`.
  template <typename F> static bool Eventually(F done) {
    for (int i = 0; i < 400 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return done();
  }
  httplib::Server ready_;
  int port_ = 0;
  std::thread listener_;
};

TEST_F(FakeReplicas, StartFailureNamesTheReplica) {
  LeastLoaded b(2);
  Metrics m;
  ReplicaSupervisor s(Options(2, "exit 3"), &b, &m);
  Status st = s.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exited with status 3 before it was ready"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("replica "), std::string::npos);
  EXPECT_EQ(b.up_count(), 0);
  // Exit 2 is bad input (a plan that cannot be opened): so is the start.
  ReplicaSupervisor bad(Options(1, "exit 2"), &b, &m);
  EXPECT_EQ(bad.Start().code(), StatusCode::kInvalidArgument);
}

TEST_F(FakeReplicas, CrashedReplicaRestartsThenIsGivenUp) {
  LeastLoaded b(2);
  Metrics m;
  m.Declare("kiln_replica_restarts_total", "counter", "restarts", "replica");
  ReplicaSupervisor s(Options(2, Sleeper()), &b, &m);
  ASSERT_TRUE(s.Start().ok());
  EXPECT_EQ(b.up_count(), 2);
  EXPECT_EQ(s.key().rfind("kiln-", 0), 0u);
  const int first = s.Replica(0).pid, other = s.Replica(1).pid;
  ASSERT_GT(first, 1);
  ASSERT_GT(other, 1);
  Crash(first);
  // Down at once (no traffic), then a new process that is ready again.
  EXPECT_TRUE(Eventually([&] { return !b.up(0); }) || s.Replica(0).pid != first);
  EXPECT_TRUE(Eventually([&] { return b.up(0) && s.Replica(0).pid != first; }));
  EXPECT_EQ(s.Replica(0).restarts, 1);
  EXPECT_EQ(m.Get("kiln_replica_restarts_total", "0"), 1);
  EXPECT_EQ(s.Replica(1).pid, other); // the other one is untouched
  // Two more fast crashes (max_fast_crashes 2): no more restarts.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Eventually([&] { return b.up(0) && s.Replica(0).pid > 1; }));
    const int pid = s.Replica(0).pid;
    Crash(pid);
    ASSERT_TRUE(Eventually([&] { return s.Replica(0).pid != pid; }));
  }
  EXPECT_TRUE(Eventually([&] { return s.Replica(0).gave_up; }));
  EXPECT_EQ(s.Replica(0).pid, -1);
  EXPECT_FALSE(b.up(0));
  EXPECT_TRUE(s.Serviceable()); // replica 1 still serves
  s.Stop(5);
  EXPECT_NE(::kill(other, 0), 0); // stopped (and reaped)
  EXPECT_FALSE(b.up(1));
}

} // namespace
} // namespace kiln::serve
