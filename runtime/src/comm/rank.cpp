// The rank launcher and a rank's join (kiln/rank.h).
#include "kiln/rank.h"

#include "comm/communicator.h"
#include "comm/store.h"
#include "kiln/plan.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1; // as the kiln tool's (tools/kiln/cli.h)

std::string Env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

StatusOr<int> IntArg(const std::string &text, const std::string &what, int lo, int hi) {
  char *end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi)
    return InvalidArgument(what + " must be an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got '" + text + "'");
  return static_cast<int>(v);
}

int WorldSize(const RankOptions &o) {
  if (o.tp_size != 0)
    return o.tp_size;
  StatusOr<int> n = IntArg(Env("KILN_WORLD_SIZE"), "KILN_WORLD_SIZE", 1, 4096);
  return n.ok() ? *n : 0;
}

// Rank 0's pid, for the launcher's SIGTERM/SIGINT handler: the signal goes
// to rank 0 (kiln serve drains, then ends the others; run and bench stop),
// instead of killing the launcher and, through PDEATHSIG, every rank at once.
volatile sig_atomic_t g_rank0_pid = 0;

void ForwardToRank0(int sig) {
  if (g_rank0_pid > 0)
    ::kill(static_cast<pid_t>(g_rank0_pid), sig); // async-signal-safe
}

// This process's arguments, as the launcher re-runs them for each rank.
std::vector<std::string> SelfArgs() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return args;
}

std::string Describe(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// A rank's place, read from the options and environment before any wait.
struct Join {
  PlanLoadOptions load;
  bool needs_comm = false;
  std::string comm_kind;
  RendezvousConfig rendezvous;
  std::unique_ptr<Communicator> comm; // null: one rank, no collectives
  std::string device;                 // the device this rank runs on
};

StatusOr<Join> JoinRanks(const RankOptions &o) {
  Join out;
  out.device = o.device;
  const std::string world = Env("KILN_WORLD_SIZE");
  if (o.tp_size == 0 && world.empty() && o.comm.empty())
    return out; // no tensor parallelism asked for
  int n = o.tp_size;
  if (n == 0) {
    KILN_ASSIGN_OR_RETURN(n, IntArg(world.empty() ? "1" : world, "KILN_WORLD_SIZE", 1, 4096));
  } else if (n < 1 || n > 4096) {
    return InvalidArgument("--tp must be an integer in [1, 4096], got '" + std::to_string(n) +
                           "'");
  }
  if (!world.empty() && world != std::to_string(n))
    return InvalidArgument("--tp " + std::to_string(n) + " but KILN_WORLD_SIZE is " + world);
  int rank = o.rank;
  if (rank < 0) {
    KILN_ASSIGN_OR_RETURN(
        rank, IntArg(Env("KILN_RANK").empty() ? "0" : Env("KILN_RANK"), "--rank", 0, n - 1));
  } else if (rank >= n) {
    return InvalidArgument("--rank must be an integer in [0, " + std::to_string(n - 1) +
                           "], got '" + std::to_string(rank) + "'");
  }
  out.load.tp_size = n;
  out.load.rank = rank;
  const std::string &backend = o.device;
  const bool cuda = backend.rfind("cuda", 0) == 0;
  const std::string kind = !o.comm.empty() ? o.comm : cuda ? "nccl" : "gloo";
  if (n == 1 && o.comm.empty())
    return out; // one rank needs no collectives
  RendezvousConfig config;
  config.rank = rank;
  config.world_size = n;
  config.store_dir = o.rendezvous.empty() ? Env("KILN_RENDEZVOUS") : o.rendezvous;
  if (comm::IsTcpAddress(config.store_dir)) { // a bad address fails before any wait
    std::string host;
    int port = 0;
    KILN_RETURN_IF_ERROR(comm::ParseTcpAddress(config.store_dir, &host, &port));
  }
  if (!Env("KILN_TP_HOST").empty())
    config.host = Env("KILN_TP_HOST");
  if (o.timeout_seconds < 1 || o.timeout_seconds > 86400)
    return InvalidArgument("--tp-timeout must be an integer in [1, 86400], got '" +
                           std::to_string(o.timeout_seconds) + "'");
  config.timeout = std::chrono::seconds(o.timeout_seconds);
  if (cuda) {
    // cuda:N names the device; plain cuda takes the rank's place on its
    // host (KILN_LOCAL_RANK, set by the launcher), one GPU per rank.
    const size_t colon = backend.find(':');
    const std::string local = Env("KILN_LOCAL_RANK");
    KILN_ASSIGN_OR_RETURN(config.device,
                          IntArg(colon != std::string::npos ? backend.substr(colon + 1)
                                 : local.empty()            ? std::to_string(rank)
                                                            : local,
                                 "the CUDA device", 0, 1024));
    out.device = "cuda:" + std::to_string(config.device);
  }
  out.needs_comm = true;
  out.comm_kind = kind;
  out.rendezvous = config;
  return out;
}

Status ConnectRank(Join &tp) {
  if (!tp.needs_comm)
    return Status::Ok();
  RendezvousConfig config = tp.rendezvous;
  const int n = config.world_size, rank = config.rank;
  bool own_dir = false;
  if (config.store_dir.empty()) {
    if (n > 1)
      return InvalidArgument("rank " + std::to_string(rank) +
                             " needs --rendezvous DIR or tcp://HOST:PORT (or KILN_RENDEZVOUS) "
                             "to find its peers");
    char tmpl[] = "/tmp/kiln-tp-XXXXXX"; // one rank meets only itself
    if (!::mkdtemp(tmpl))
      return Internal("cannot create a rendezvous directory");
    config.store_dir = tmpl;
    own_dir = true;
  }
  auto comm = CreateCommunicator(tp.comm_kind, config, nullptr);
  if (own_dir) {
    std::error_code ignored; // the rendezvous is over: one rank's own dir goes
    std::filesystem::remove_all(config.store_dir, ignored);
  }
  if (!comm.ok())
    return comm.status().WithContext("rank " + std::to_string(rank));
  tp.comm = std::move(*comm);
  return Status::Ok();
}

Status CheckSameBuild(Communicator *comm, const Plan &plan) {
  if (!comm || comm->size() == 1)
    return Status::Ok();
  // Rank 0's build id against each rank's; every rank learns the verdict,
  // so rank 0 reports a mismatch instead of waiting on a peer that quit.
  char id[256] = {};
  if (comm->rank() == 0)
    std::snprintf(id, sizeof(id), "%s", plan.build_id().c_str());
  KILN_RETURN_IF_ERROR(comm->Broadcast(id, sizeof(id), 0));
  const int64_t same = plan.build_id().substr(0, sizeof(id) - 1) == id ? 1 : 0;
  std::vector<int64_t> all(static_cast<size_t>(comm->size()));
  KILN_RETURN_IF_ERROR(
      comm->AllGather(&same, all.data(), std::vector<int64_t>(all.size(), 1), DType::kI64));
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r])
      return InvalidArgument("rank " + std::to_string(r) +
                             "'s plan comes from another build than rank 0's (build id '" +
                             std::string(id) + "'): every rank must run files of one build");
  return Status::Ok();
}

} // namespace

bool IsRankLauncher(const RankOptions &options) {
  return options.tp_size > 1 && options.rank < 0 && Env("KILN_RANK").empty();
}

int LaunchRanks(const RankOptions &options, const std::string &what) {
  const int n = WorldSize(options);
  std::string dir = options.rendezvous.empty() ? Env("KILN_RENDEZVOUS") : options.rendezvous;
  bool own_dir = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/kiln-tp-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::fprintf(stderr, "%s: cannot create a rendezvous directory: %s\n", what.c_str(),
                   std::strerror(errno));
      return kExitFailure;
    }
    dir = tmpl;
    own_dir = true;
  }
  const std::vector<std::string> args = SelfArgs();
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      // A rank dies with its launcher, so a killed launcher leaves nothing.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setenv("KILN_RANK", std::to_string(r).c_str(), 1);
      ::setenv("KILN_LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("KILN_WORLD_SIZE", std::to_string(n).c_str(), 1);
      ::setenv("KILN_RENDEZVOUS", dir.c_str(), 1);
      if (r != 0) // only rank 0 writes the command's output
        std::freopen("/dev/null", "w", stdout);
      std::vector<char *> argv;
      for (const std::string &s : args)
        argv.push_back(const_cast<char *>(s.c_str()));
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "%s: rank %d: cannot exec: %s\n", what.c_str(), r,
                   std::strerror(errno));
      std::_Exit(kExitFailure);
    }
    pids[static_cast<size_t>(r)] = pid;
  }
  g_rank0_pid = pids[0];
  struct sigaction forward = {};
  forward.sa_handler = ForwardToRank0;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &forward, nullptr);
  ::sigaction(SIGINT, &forward, nullptr);
  // The first rank to fail decides the outcome; the others are stopped
  // (they would fail on their own once their collectives see the dead peer,
  // but a rank blocked outside one would not).
  int running = n, code = kExitOk, rank0_code = kExitOk;
  std::string failure;
  while (running > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    int r = -1;
    for (int i = 0; i < n; ++i)
      if (pids[static_cast<size_t>(i)] == pid)
        r = i;
    if (r < 0)
      continue;
    pids[static_cast<size_t>(r)] = -1;
    if (r == 0)
      g_rank0_pid = 0; // its pid may be reused from now on
    --running;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r == 0 && WIFEXITED(status))
      rank0_code = WEXITSTATUS(status);
    if (!ok && failure.empty()) {
      failure = "rank " + std::to_string(r) + " of " + std::to_string(n) + " " + Describe(status);
      code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailure;
      for (pid_t other : pids)
        if (other > 0)
          ::kill(other, SIGTERM);
      // A rank that ignores SIGTERM for 5 s is killed.
      std::thread([pids] {
        std::this_thread::sleep_for(std::chrono::seconds(5));
        for (pid_t other : pids)
          if (other > 0)
            ::kill(other, SIGKILL);
      }).detach();
    }
  }
  if (own_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  if (!failure.empty()) {
    std::fprintf(stderr, "%s: tensor parallel: %s; stopped the other ranks\n", what.c_str(),
                 failure.c_str());
    return code == kExitOk ? kExitFailure : code;
  }
  return rank0_code;
}

OpenedRank::OpenedRank() = default;
OpenedRank::OpenedRank(OpenedRank &&) noexcept = default;
OpenedRank &OpenedRank::operator=(OpenedRank &&) noexcept = default;
OpenedRank::~OpenedRank() = default;

std::unique_ptr<Plan> OpenedRank::TakePlan() { return std::move(plan_); }
int OpenedRank::rank() const { return comm_ ? comm_->rank() : 0; }
int OpenedRank::size() const { return comm_ ? comm_->size() : 1; }

StatusOr<OpenedRank> OpenRank(const std::string &plan_path, const RankOptions &options) {
  KILN_ASSIGN_OR_RETURN(Join join, JoinRanks(options));
  OpenedRank out;
  KILN_ASSIGN_OR_RETURN(out.plan_, LoadPlan(plan_path, join.load));
  KILN_RETURN_IF_ERROR(ConnectRank(join));
  KILN_RETURN_IF_ERROR(CheckSameBuild(join.comm.get(), *out.plan_));
  out.comm_ = std::move(join.comm);
  out.device_ = join.device;
  return out;
}

Status InRankContext(const Status &st) {
  const std::string rank = Env("KILN_RANK");
  return st.ok() || rank.empty() ? st : st.WithContext("rank " + rank);
}

} // namespace kiln
