// The replica processes of `kiln serve --replicas N` (docs/serve.md#replicas):
// starts N `kiln serve` processes on loopback, learns each one's port from
// its first stdout line, waits for its /ready, and tells the balancer which
// replicas are up. A replica that exits without being asked is restarted
// with a growing delay; one that keeps crashing soon after it starts is
// given up on. Replicas die with the front end (PR_SET_PDEATHSIG).
//
// Replicas accept only an internal key: the supervisor draws a fresh one,
// keeps it in memory, and gives each replica a keys file (mode 0600 in a
// private temporary directory) that holds only its SHA-256, like any keys
// file. The front end sends the key on every request it forwards.
#pragma once

#include "kiln/status.h"
#include "serve/metrics.h"
#include "serve/replica_balancer.h"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::serve {

struct ReplicaOptions {
  std::string exe = "/proc/self/exe";
  // One replica's command line, argv[0] first; the supervisor appends
  // `--api-keys FILE` (the internal key's file).
  std::vector<std::string> argv;
  int count = 2;
  double start_timeout_s = 600; // from the process's start to its /ready
  // A crash before the replica was ready, or within this long after, is
  // "fast"; after `max_fast_crashes` fast crashes in a row the replica is
  // not restarted again. The delay before a restart doubles with each fast
  // crash, from backoff_initial_s up to backoff_max_s.
  double fast_crash_s = 30;
  int max_fast_crashes = 5;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
};

class ReplicaSupervisor {
public:
  // `balancer` has options.count replicas; `metrics` declares
  // kiln_replica_restarts_total.
  ReplicaSupervisor(ReplicaOptions options, LeastLoaded *balancer, Metrics *metrics);
  ~ReplicaSupervisor(); // stops what still runs (SIGTERM, then SIGKILL)

  // Starts every replica and waits until each one is ready. An error names
  // the replica that exited (or was not ready within start_timeout_s); the
  // others are then stopped.
  Status Start();
  // Asks every replica to drain (SIGTERM) and waits up to `grace_s`, then
  // kills the rest (SIGKILL). No restarts from then on.
  void Stop(double grace_s);

  // The key that replicas accept ("Bearer KEY").
  const std::string &key() const { return key_; }
  // False once every replica has been given up on: nothing can serve.
  bool Serviceable() const;

  struct View {
    int pid = -1; // -1: not running
    int port = 0;
    bool up = false;
    bool gave_up = false;
    int restarts = 0;
  };
  View Replica(int index) const;

private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kWaiting, kStarting, kUp, kGaveUp, kStopped };
  struct Proc {
    int index = 0;
    pid_t pid = -1;
    int port = 0;
    Phase phase = Phase::kWaiting;
    int generation = 0; // launches so far
    int restarts = 0;
    int fast_crashes = 0;
    bool timed_out = false; // killed for not being ready in time
    Clock::time_point started, ready_at, restart_at;
    std::vector<std::thread> readers; // this process's stdout and stderr readers
  };

  void Monitor();
  void Launch(Proc &p);             // under mu_
  void Exited(Proc &p, int status); // under mu_
  void ReadStdout(int fd, int index, int generation, int pid);
  void ForwardStderr(int fd, int index);
  bool Current(int index, int generation) const;
  void Ready(int index, int generation, int port);
  void RemoveKeyFile();

  ReplicaOptions options_;
  LeastLoaded *balancer_;
  Metrics *metrics_;
  std::string key_, key_dir_, key_file_;
  mutable std::mutex mu_;
  std::condition_variable cv_; // a replica came up or exited; Stop
  std::vector<Proc> procs_;
  bool starting_ = true; // Start has not returned: an exit fails the start
  std::string start_failure_;
  bool start_failure_bad_input_ = false; // the replica exited 2 (bad input)
  bool stopping_ = false;
  bool monitor_quit_ = false;
  std::thread monitor_;
  std::vector<std::thread> finished_readers_; // joined by the monitor, outside mu_
};

} // namespace kiln::serve
