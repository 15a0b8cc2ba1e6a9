#include "serve/replica_supervisor.h"

#include "serve/auth.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

extern char **environ;

namespace kiln::serve {
namespace {

std::string Describe(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// The port of `kiln serve`'s first stdout line, "... on http://HOST:PORT (...)".
int PortOfLine(const std::string &line) {
  const size_t at = line.find("http://");
  if (at == std::string::npos)
    return 0;
  const size_t space = line.find(' ', at);
  const std::string url =
      line.substr(at, space == std::string::npos ? std::string::npos : space - at);
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos || colon < 7)
    return 0;
  return std::atoi(url.c_str() + colon + 1);
}

// In the child between fork and exec (async-signal-safe calls only): every
// descriptor but 0-2 closes, so a replica holds no other replica's pipes
// nor the front end's listening socket.
void CloseFrom3() {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
    return;
#endif
  const long max = ::sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < std::min(max < 0 ? 4096L : max, 65536L); ++fd)
    ::close(static_cast<int>(fd));
}

// kill() for one replica only: a pid of 0 or -1 would signal the process
// group or every process of the user.
void Signal(pid_t pid, int sig) {
  if (pid > 1)
    ::kill(pid, sig);
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

ReplicaSupervisor::ReplicaSupervisor(ReplicaOptions options, LeastLoaded *balancer,
                                     Metrics *metrics)
    : options_(std::move(options)), balancer_(balancer), metrics_(metrics) {
  procs_.resize(static_cast<size_t>(options_.count));
  for (int i = 0; i < options_.count; ++i)
    procs_[static_cast<size_t>(i)].index = i;
}

ReplicaSupervisor::~ReplicaSupervisor() { Stop(5); }

Status ReplicaSupervisor::Start() {
  KILN_ASSIGN_OR_RETURN(key_, NewApiKey());
  std::error_code ec;
  const std::string tmpl =
      (std::filesystem::temp_directory_path(ec) / "kiln-replicas-XXXXXX").string();
  std::vector<char> dir(tmpl.begin(), tmpl.end());
  dir.push_back('\0');
  if (::mkdtemp(dir.data()) == nullptr) // mode 0700
    return Internal("cannot create a directory for the replicas' keys file: " +
                    std::string(std::strerror(errno)));
  key_dir_ = dir.data();
  key_file_ = key_dir_ + "/replica-keys.jsonl";
  const int fd = ::open(key_file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  // Admin: the front end cancels a request on its replica (/admin/cancel)
  // when the client left, to read what it consumed for the key's tpm.
  const std::string line = KeyFileLine("front-end", key_, /*admin=*/true) + "\n";
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    if (fd >= 0)
      ::close(fd);
    RemoveKeyFile();
    return Internal("cannot write the replicas' keys file " + key_file_);
  }
  ::close(fd);
  {
    std::lock_guard<std::mutex> l(mu_);
    for (Proc &p : procs_)
      p.restart_at = Clock::now();
  }
  // Replicas are forked by the monitor thread, which lives until Stop:
  // PR_SET_PDEATHSIG fires when the forking *thread* ends.
  monitor_ = std::thread([this] { Monitor(); });
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] {
    return !start_failure_.empty() || std::all_of(procs_.begin(), procs_.end(), [](const Proc &p) {
      return p.phase == Phase::kUp;
    });
  });
  starting_ = false;
  if (start_failure_.empty())
    return Status::Ok();
  const std::string failure = start_failure_;
  const bool bad_input = start_failure_bad_input_;
  l.unlock();
  Stop(5);
  // A replica that found its input bad (exit 2: the plan, a flag) makes
  // the whole command's input bad.
  return bad_input ? InvalidArgument(failure) : Internal(failure);
}

void ReplicaSupervisor::Launch(Proc &p) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "kiln serve: replica %d: cannot create pipes: %s; retrying\n", p.index,
                 std::strerror(errno));
    p.restart_at = Clock::now() + std::chrono::seconds(1);
    return;
  }
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> args = options_.argv;
  args.push_back("--api-keys");
  args.push_back(key_file_);
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char **e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "KILN_REPLICA=", 13) != 0)
      env_text.emplace_back(*e);
  env_text.push_back("KILN_REPLICA=" + std::to_string(p.index));
  std::vector<char *> envp;
  for (std::string &e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) // the front end died before prctl
      ::_exit(1);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    CloseFrom3();
    ::execve(options_.exe.c_str(), argv.data(), envp.data());
    const char msg[] = "kiln serve: replica: cannot exec the kiln binary\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    std::fprintf(stderr, "kiln serve: replica %d: cannot fork: %s; retrying\n", p.index,
                 std::strerror(errno));
    p.restart_at = Clock::now() + std::chrono::seconds(1);
    return;
  }
  if (p.generation > 0) {
    ++p.restarts;
    metrics_->Add("kiln_replica_restarts_total", 1, std::to_string(p.index));
  }
  ++p.generation;
  p.pid = pid;
  p.port = 0;
  p.phase = Phase::kStarting;
  p.timed_out = false;
  p.started = Clock::now();
  const int index = p.index, generation = p.generation;
  p.readers.emplace_back(
      [this, fd = out[0], index, generation, pid] { ReadStdout(fd, index, generation, pid); });
  p.readers.emplace_back([this, fd = err[0], index] { ForwardStderr(fd, index); });
  std::fprintf(stderr, "kiln serve: replica %d: started (pid %d)\n", index, pid);
}

void ReplicaSupervisor::ReadStdout(int fd, int index, int generation, int pid) {
  FILE *in = ::fdopen(fd, "r");
  if (in == nullptr) {
    ::close(fd);
    return;
  }
  char *line = nullptr;
  size_t cap = 0;
  int port = 0;
  if (::getline(&line, &cap, in) > 0)
    port = PortOfLine(line);
  if (port > 0) {
    // The line comes after the replica's first engine step passed; /ready
    // with the internal key also proves its listener and its auth.
    const auto deadline = Clock::now() + std::chrono::microseconds(
                                             static_cast<int64_t>(options_.start_timeout_s * 1e6));
    while (Current(index, generation) && Clock::now() < deadline) {
      httplib::Client client("127.0.0.1", port);
      client.set_connection_timeout(2);
      client.set_read_timeout(60);
      auto res = client.Get("/ready", {{"Authorization", "Bearer " + key_}});
      if (res && res->status == 200) {
        Ready(index, generation, port);
        break;
      }
      if (!res && (pid <= 0 || ::kill(pid, 0) != 0))
        break; // it is gone; the monitor reports why
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  // Nothing else is expected on stdout; read it to its end (the process's).
  while (::getline(&line, &cap, in) > 0) {
  }
  std::free(line);
  std::fclose(in);
}

void ReplicaSupervisor::ForwardStderr(int fd, int index) {
  FILE *in = ::fdopen(fd, "r");
  if (in == nullptr) {
    ::close(fd);
    return;
  }
  const std::string prefix = "[replica " + std::to_string(index) + "] ";
  char *line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&line, &cap, in)) > 0) {
    std::string out = prefix + std::string(line, static_cast<size_t>(n));
    if (out.back() != '\n')
      out += '\n';
    std::fputs(out.c_str(), stderr); // one call: lines of replicas never interleave
  }
  std::free(line);
  std::fclose(in);
}

bool ReplicaSupervisor::Current(int index, int generation) const {
  std::lock_guard<std::mutex> l(mu_);
  const Proc &p = procs_[static_cast<size_t>(index)];
  return !stopping_ && p.generation == generation && p.phase == Phase::kStarting;
}

void ReplicaSupervisor::Ready(int index, int generation, int port) {
  std::lock_guard<std::mutex> l(mu_);
  Proc &p = procs_[static_cast<size_t>(index)];
  if (stopping_ || p.generation != generation || p.phase != Phase::kStarting)
    return;
  p.phase = Phase::kUp;
  p.port = port;
  p.ready_at = Clock::now();
  balancer_->SetUp(index, port, p.pid);
  std::fprintf(stderr, "kiln serve: replica %d (pid %d) ready on 127.0.0.1:%d after %.1f s\n",
               index, p.pid, port, Seconds(p.ready_at - p.started));
  cv_.notify_all();
}

void ReplicaSupervisor::Exited(Proc &p, int status) {
  balancer_->SetDown(p.index);
  const pid_t pid = p.pid;
  p.pid = -1;
  for (std::thread &t : p.readers)
    finished_readers_.push_back(std::move(t));
  p.readers.clear();
  const bool was_up = p.phase == Phase::kUp;
  if (stopping_) {
    p.phase = Phase::kStopped;
    return;
  }
  const std::string what =
      p.timed_out
          ? "was not ready within " + std::to_string(options_.start_timeout_s) + " s and was killed"
          : Describe(status);
  if (starting_) {
    p.phase = Phase::kStopped;
    if (start_failure_.empty()) {
      start_failure_ = "replica " + std::to_string(p.index) + " (pid " + std::to_string(pid) +
                       ") " + what + " before it was ready";
      start_failure_bad_input_ = WIFEXITED(status) && WEXITSTATUS(status) == 2;
    }
    return;
  }
  const bool fast = !was_up || Seconds(Clock::now() - p.ready_at) < options_.fast_crash_s;
  p.fast_crashes = fast ? p.fast_crashes + 1 : 1;
  if (p.fast_crashes > options_.max_fast_crashes) {
    p.phase = Phase::kGaveUp;
    std::fprintf(
        stderr,
        "kiln serve: replica %d (pid %d) %s; it crashed %d times in a row within %g s "
        "of starting: not restarting it (%d of %d replicas left)\n",
        p.index, pid, what.c_str(), p.fast_crashes, options_.fast_crash_s,
        static_cast<int>(std::count_if(procs_.begin(), procs_.end(),
                                       [](const Proc &q) { return q.phase != Phase::kGaveUp; })),
        options_.count);
    return;
  }
  const double delay = std::min(options_.backoff_max_s,
                                options_.backoff_initial_s * std::pow(2.0, p.fast_crashes - 1));
  p.phase = Phase::kWaiting;
  p.restart_at = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(delay * 1e6));
  std::fprintf(stderr,
               "kiln serve: replica %d (pid %d) %s; its requests in flight failed; restarting "
               "it in %.1f s\n",
               p.index, pid, what.c_str(), delay);
}

void ReplicaSupervisor::Monitor() {
  std::unique_lock<std::mutex> l(mu_);
  while (!monitor_quit_) {
    for (Proc &p : procs_) {
      if (p.pid > 0) {
        int status = 0;
        if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
          Exited(p, status);
          cv_.notify_all();
        }
      }
      if (p.phase == Phase::kStarting && p.pid > 0 && !p.timed_out &&
          Seconds(Clock::now() - p.started) > options_.start_timeout_s) {
        p.timed_out = true;
        Signal(p.pid, SIGKILL);
      }
      if (p.phase == Phase::kWaiting && !stopping_ && Clock::now() >= p.restart_at)
        Launch(p);
    }
    if (!finished_readers_.empty()) {
      // The process is gone, so its pipes reach their end: the readers end.
      std::vector<std::thread> done = std::move(finished_readers_);
      finished_readers_.clear();
      l.unlock();
      for (std::thread &t : done)
        t.join();
      l.lock();
      continue;
    }
    cv_.wait_for(l, std::chrono::milliseconds(50));
  }
}

void ReplicaSupervisor::Stop(double grace_s) {
  std::unique_lock<std::mutex> l(mu_);
  if (!monitor_.joinable()) {
    l.unlock();
    RemoveKeyFile();
    return;
  }
  stopping_ = true;
  for (Proc &p : procs_) {
    if (p.pid > 0)
      Signal(p.pid, SIGTERM);
    if (p.phase == Phase::kWaiting)
      p.phase = Phase::kStopped;
  }
  auto none_running = [this] {
    return std::none_of(procs_.begin(), procs_.end(), [](const Proc &p) { return p.pid > 0; });
  };
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(grace_s * 1e6));
  if (!cv_.wait_until(l, deadline, none_running)) {
    for (Proc &p : procs_)
      if (p.pid > 0) {
        std::fprintf(stderr, "kiln serve: replica %d (pid %d) still runs after %g s: killing it\n",
                     p.index, p.pid, grace_s);
        Signal(p.pid, SIGKILL);
      }
    cv_.wait(l, none_running);
  }
  monitor_quit_ = true;
  cv_.notify_all();
  l.unlock();
  monitor_.join();
  for (std::thread &t : finished_readers_)
    t.join();
  finished_readers_.clear();
  RemoveKeyFile();
}

bool ReplicaSupervisor::Serviceable() const {
  std::lock_guard<std::mutex> l(mu_);
  return std::any_of(procs_.begin(), procs_.end(),
                     [](const Proc &p) { return p.phase != Phase::kGaveUp; });
}

ReplicaSupervisor::View ReplicaSupervisor::Replica(int index) const {
  std::lock_guard<std::mutex> l(mu_);
  const Proc &p = procs_.at(static_cast<size_t>(index));
  View v;
  v.pid = p.pid;
  v.port = p.port;
  v.up = p.phase == Phase::kUp;
  v.gave_up = p.phase == Phase::kGaveUp;
  v.restarts = p.restarts;
  return v;
}

void ReplicaSupervisor::RemoveKeyFile() {
  if (key_dir_.empty())
    return;
  std::error_code ignored;
  std::filesystem::remove_all(key_dir_, ignored);
  key_dir_.clear();
}

} // namespace kiln::serve
