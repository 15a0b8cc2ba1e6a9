// Tensor parallelism across processes (docs/tp-runtime.md): one process per
// rank. A command asked for N > 1 ranks without being told its own is the
// launcher (LaunchRanks): it starts N copies of itself, one per rank, watches
// them and stops the rest when one fails. Each rank then opens its part of
// the plan and joins the others (OpenRank). The launcher passes each rank its
// place through the environment, as torchrun does, so a rank started by hand
// (on another host) joins the same way:
//   KILN_RANK, KILN_WORLD_SIZE, KILN_RENDEZVOUS (a directory or tcp://HOST:PORT),
//   KILN_TP_HOST (the address this rank's transport listens on),
//   KILN_LOCAL_RANK (the rank's place on its host: its GPU under --device cuda).
// The same code opens the one rank of a run without tensor parallelism.
#pragma once

#include "kiln/status.h"

#include <memory>
#include <string>

namespace kiln {

class Communicator; // runtime/src/comm/communicator.h: the collectives
class Plan;         // kiln/plan.h

// What the caller asked for (kiln run/bench/serve's --tp, --rank,
// --rendezvous, --comm, --tp-timeout); unset fields fall back to the
// environment above.
struct RankOptions {
  int tp_size = 0;        // ranks; 0: not given (KILN_WORLD_SIZE, else one rank)
  int rank = -1;          // this process's rank; -1: KILN_RANK, else 0
  std::string rendezvous; // a directory or tcp://HOST:PORT; empty: KILN_RENDEZVOUS
  // "gloo" or "nccl"; empty: gloo on the cpu, nccl on cuda. Given, a run of
  // one rank also goes through the communicator.
  std::string comm;
  int timeout_seconds = 60; // a rank waiting longer on a peer fails
  std::string device = "cpu"; // what runs the plan (kiln/device.h); plain "cuda"
                              // becomes cuda:<local rank>, one GPU per rank
};

// Whether this process is the launcher: more than one rank asked for in
// RankOptions::tp_size and no rank given (neither RankOptions::rank nor
// KILN_RANK).
bool IsRankLauncher(const RankOptions &options);

// The launcher: runs options.tp_size copies of this process (the same
// executable and arguments) with their place in the environment; only rank
// 0 keeps stdout. SIGTERM and SIGINT go to rank 0. The first rank to fail
// stops the others and decides the exit status, reported on stderr with
// `what` (e.g. "kiln run") first; else rank 0's. Returns that status.
int LaunchRanks(const RankOptions &options, const std::string &what);

// One rank of a run, open: its part of the plan, and the communicator it
// joined (none for one rank without RankOptions::comm).
class OpenedRank {
public:
  OpenedRank();
  OpenedRank(OpenedRank &&) noexcept;
  OpenedRank &operator=(OpenedRank &&) noexcept;
  ~OpenedRank();

  const Plan &plan() const { return *plan_; }
  std::unique_ptr<Plan> TakePlan(); // for a caller that owns the plan past the rank
  Communicator *comm() const { return comm_.get(); } // PipelineOptions::comm
  const std::string &device() const { return device_; }
  int rank() const;
  int size() const;
  // A rank other than 0: it follows rank 0's steps (RunFollower).
  bool follower() const { return comm_ && rank() != 0; }

private:
  friend StatusOr<OpenedRank> OpenRank(const std::string &, const RankOptions &);
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<Communicator> comm_;
  std::string device_;
};

// Reads the options and environment (InvalidArgument for a bad value,
// before any wait), loads this rank's part of the plan, joins the other
// ranks within the timeout, and checks that every rank runs files of one
// build (rank 0's build id; collective).
StatusOr<OpenedRank> OpenRank(const std::string &plan_path, const RankOptions &options);

// `st` prefixed with "rank R: " in a rank process (KILN_RANK set).
Status InRankContext(const Status &st);

} // namespace kiln
