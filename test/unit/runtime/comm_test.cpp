// The gloo communicator across real processes (one per rank, as kiln runs
// them): sums, uneven gathers and broadcasts against values each rank can
// compute alone, the all_reduce and all_gather ops of a hand-built plan run
// by the executor on every rank, and a rank that dies making its peers fail
// within seconds instead of hanging.
#include "backends/cpu/cpu_backend.h"
#include "comm/communicator.h"
#include "comm/store.h"
#include "kernels/cpu/pointwise_cast.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kiln {
namespace {

using test::AInt;
using test::AInts;
using test::AttrSpec;
using test::TempPath;

// Runs body(rank) in `n` forked processes that meet in a fresh rendezvous
// dir; returns each rank's exit status (0: its checks passed). A child
// reports a failed check by its exit code, so gtest stays in the parent.
// `name` is a fresh directory's name, or a tcp:// address (rank 0 serves it).
std::vector<int> RunRanks(int n, const std::string &name,
                          const std::function<int(Communicator &)> &body,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  std::string dir = name;
  if (!comm::IsTcpAddress(name)) {
    dir = TempPath(name);
    std::string cmd = "mkdir -p '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      RendezvousConfig c;
      c.rank = r;
      c.world_size = n;
      c.store_dir = dir;
      c.timeout = timeout;
      auto comm = CreateCommunicator("gloo", c, nullptr);
      if (!comm.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", r, comm.status().message().c_str());
        std::_Exit(90);
      }
      std::_Exit(body(**comm));
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  return codes;
}

#define CHILD_CHECK(cond, code)                                                                    \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "rank check failed at line %d: %s\n", __LINE__, #cond);                 \
      return code;                                                                                 \
    }                                                                                              \
  } while (0)

TEST(Gloo, AllReduceSumsEveryDtype) {
  for (int n : {2, 3}) {
    auto codes = RunRanks(n, "gloo_sum_" + std::to_string(n), [n](Communicator &c) {
      CHILD_CHECK(c.size() == n && std::string(c.name()) == "gloo", 1);
      std::vector<float> x(1000);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(i) * (c.rank() + 1);
      CHILD_CHECK(c.AllReduceSum(x.data(), 1000, DType::kF32).ok(), 2);
      const float ranks = n * (n + 1) / 2.0f; // sum of rank + 1
      for (size_t i = 0; i < x.size(); ++i)
        CHILD_CHECK(x[i] == static_cast<float>(i) * ranks, 3);
      for (DType dt : {DType::kF16, DType::kBF16}) {
        std::vector<uint16_t> h(8);
        for (size_t i = 0; i < h.size(); ++i) {
          float v = 0.5f * static_cast<float>(i) + c.rank();
          h[i] = dt == DType::kF16 ? kernels::FloatToHalf(v) : kernels::FloatToBFloat16(v);
        }
        CHILD_CHECK(c.AllReduceSum(h.data(), 8, dt).ok(), 4);
        for (size_t i = 0; i < h.size(); ++i) {
          float got =
              dt == DType::kF16 ? kernels::HalfToFloat(h[i]) : kernels::BFloat16ToFloat(h[i]);
          float want = 0.5f * static_cast<float>(i) * n + n * (n - 1) / 2.0f;
          CHILD_CHECK(got == want, 5);
        }
      }
      // A near miss the sum must refuse: integers are not summed.
      int64_t i64 = 1;
      CHILD_CHECK(!c.AllReduceSum(&i64, 1, DType::kI64).ok(), 6);
      return 0;
    });
    for (int code : codes)
      EXPECT_EQ(code, 0) << "tp " << n;
  }
}

TEST(Gloo, AllGatherUnevenAndBroadcast) {
  auto codes = RunRanks(3, "gloo_gather", [](Communicator &c) {
    // Ranks hold 2, 0 and 3 elements: rank r's values are 10 r + i.
    const std::vector<int64_t> counts = {2, 0, 3};
    std::vector<float> mine;
    for (int64_t i = 0; i < counts[c.rank()]; ++i)
      mine.push_back(10.0f * c.rank() + i);
    std::vector<float> all(5, -1);
    CHILD_CHECK(c.AllGather(mine.data(), all.data(), counts, DType::kF32).ok(), 1);
    const std::vector<float> want = {0, 1, 20, 21, 22};
    CHILD_CHECK(all == want, 2);
    std::vector<int64_t> wrong = {2, 3}; // a count per rank is required
    CHILD_CHECK(!c.AllGather(mine.data(), all.data(), wrong, DType::kF32).ok(), 3);
    char msg[16] = {};
    if (c.rank() == 2)
      std::snprintf(msg, sizeof(msg), "from rank two");
    CHILD_CHECK(c.Broadcast(msg, sizeof(msg), 2).ok(), 4);
    CHILD_CHECK(std::string(msg) == "from rank two", 5);
    CHILD_CHECK(c.Barrier().ok(), 6);
    return 0;
  });
  for (int code : codes)
    EXPECT_EQ(code, 0);
}

// x [2, 3] -> all_reduce -> s; x -> all_gather(axis 1, sizes 3,3) -> g [2, 6].
test::TestPlan CollectivePlan() {
  test::TestPlan p;
  int x = p.Input("x", DType::kF32, {2, 3});
  int s = p.Act("s", DType::kF32, {2, 3});
  int g = p.Act("g", DType::kF32, {2, 6});
  AttrSpec sum{"reduction", fb::AttrKind::String, 0, 0, "sum", {}};
  p.Op("all_reduce", {x}, {s}, {sum});
  p.Op("all_gather", {x}, {g}, {AInt("axis", 1), AInts("sizes", {3, 3})});
  p.Output(s);
  p.Output(g);
  return p;
}

TEST(Gloo, CollectiveOpsRunInAPlan) {
  const std::string path = TempPath("collective.plan");
  ASSERT_EQ(CollectivePlan().Write(path), "");
  auto codes = RunRanks(2, "gloo_plan", [&](Communicator &c) {
    auto plan = LoadPlan(path);
    CHILD_CHECK(plan.ok(), 1);
    std::unique_ptr<Backend> backend = cpu::CreateCpuBackend();
    backend->context().comm = &c;
    auto exec = Executor::Create(**plan, *backend);
    CHILD_CHECK(exec.ok(), 2);
    std::vector<float> x(6);
    for (int i = 0; i < 6; ++i)
      x[i] = static_cast<float>(i + 10 * c.rank());
    CHILD_CHECK((*exec)->Bind({TensorView{DType::kF32, {2, 3}, x.data()}}).ok(), 3);
    Status st = (*exec)->Run();
    if (!st.ok())
      std::fprintf(stderr, "%s\n", st.message().c_str());
    CHILD_CHECK(st.ok(), 4);
    std::vector<float> s(6), g(12);
    CHILD_CHECK((*exec)->CopyOutputToHost(0, s.data()).ok(), 5);
    CHILD_CHECK((*exec)->CopyOutputToHost(1, g.data()).ok(), 6);
    for (int i = 0; i < 6; ++i)
      CHILD_CHECK(s[i] == 2.0f * i + 10, 7); // i + (i + 10)
    // Row o of g: rank 0's row o, then rank 1's.
    const std::vector<float> want = {0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15};
    CHILD_CHECK(g == want, 8);
    return 0;
  });
  for (int code : codes)
    EXPECT_EQ(code, 0);
}

TEST(Gloo, OneRankRunsCollectivesAsCopies) {
  // Without a communicator (tp 1) the ops are the identity; an all_gather
  // whose sizes name two ranks is refused, naming --tp.
  const std::string path = TempPath("collective1.plan");
  ASSERT_EQ(CollectivePlan().Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto exec = Executor::Create(**plan);
  ASSERT_TRUE(exec.ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE((*exec)->Bind({TensorView{DType::kF32, {2, 3}, x.data()}}).ok());
  Status st = (*exec)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--tp"), std::string::npos) << st.message();
}

TEST(Gloo, DeadPeerFailsTheOthersFast) {
  const auto start = std::chrono::steady_clock::now();
  auto codes = RunRanks(
      2, "gloo_dead",
      [](Communicator &c) {
        if (!c.Barrier().ok()) // both connected: the death is mid-run
          return 3;
        if (c.rank() == 1)
          raise(SIGKILL);
        std::vector<float> x(4, 1);
        Status st = c.AllReduceSum(x.data(), 4, DType::kF32);
        if (st.ok())
          return 1;
        std::fprintf(stderr, "rank 0 saw: %s\n", st.message().c_str());
        // The communicator stays failed.
        return c.Barrier().ok() ? 2 : 0;
      },
      std::chrono::seconds(30));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 100 + SIGKILL);
  // Well under the 30 s timeout: the dead peer's closed socket ends the wait.
  EXPECT_LT(seconds, 10.0);
}

// A port free a moment ago (the store binds it again right after).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(TcpStore, RanksMeetThroughRankZerosAddress) {
  const std::string address = "tcp://127.0.0.1:" + std::to_string(FreePort());
  // Rank 1 starts first: it retries until rank 0 serves.
  std::vector<char> got;
  Status late = Status::Ok();
  std::thread rank1([&] {
    auto s = comm::OpenStore(address, 1, std::chrono::seconds(10));
    if (!s.ok()) {
      late = s.status();
      return;
    }
    auto v = (*s)->Get("k", std::chrono::seconds(10)); // set after this waits
    if (v.ok())
      got = *v;
    else
      late = v.status();
    auto missing = (*s)->Get("never", std::chrono::milliseconds(200));
    if (missing.ok() || missing.status().message().find("'never'") == std::string::npos)
      late = Internal("a key nobody sets must time out, naming it");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto s0 = comm::OpenStore(address, 0, std::chrono::seconds(10));
  ASSERT_TRUE(s0.ok()) << s0.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE((*s0)->Set("k", {'h', 'i', '\0', 'x'}).ok());
  rank1.join();
  EXPECT_TRUE(late.ok()) << late.message();
  EXPECT_EQ(got, (std::vector<char>{'h', 'i', '\0', 'x'}));
  auto own = (*s0)->Get("k", std::chrono::seconds(1));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->size(), 4u);
}

TEST(TcpStore, BadAddressesAreRefused) {
  std::string host;
  int port = 0;
  EXPECT_FALSE(comm::ParseTcpAddress("tcp://host", &host, &port).ok());
  EXPECT_FALSE(comm::ParseTcpAddress("tcp://host:99999", &host, &port).ok());
  EXPECT_FALSE(comm::ParseTcpAddress("http://host:80", &host, &port).ok());
  ASSERT_TRUE(comm::ParseTcpAddress("tcp://[::1]:29500", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 29500);
  // Nobody serves it: a client gives up at its deadline, saying where it looked.
  auto s = comm::OpenStore("tcp://127.0.0.1:" + std::to_string(FreePort()), 1,
                           std::chrono::milliseconds(300));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot reach the store"), std::string::npos);
}

TEST(Gloo, RanksMeetOverTcp) {
  const std::string address = "tcp://127.0.0.1:" + std::to_string(FreePort());
  std::vector<int> codes = RunRanks(3, address, [](Communicator &c) {
    float v = static_cast<float>(c.rank() + 1);
    CHILD_CHECK(c.AllReduceSum(&v, 1, DType::kF32).ok(), 1);
    CHILD_CHECK(v == 6.0f, 2);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

TEST(Communicator, UnknownKindIsRefused) {
  RendezvousConfig c;
  auto comm = CreateCommunicator("mpi", c, nullptr);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("gloo or nccl"), std::string::npos);
}

} // namespace
} // namespace kiln
