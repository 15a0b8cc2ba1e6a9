// `--tp N` for kiln run and bench (docs/tp-runtime.md): one process per
// rank. Without a rank (no --rank, no KILN_RANK) the command is the
// launcher: it starts N copies of itself, one per rank, watches them and
// stops the rest when one fails. With a rank it joins the run as that rank
// through the rendezvous directory.
#pragma once

#include "cli_args.h"
#include "dist/communicator.h"
#include "kiln/plan.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cli {

extern const std::vector<std::string> kTpOptions;
extern const char kTpUsage[];

// Launcher: when `a` asks for N > 1 ranks (or --comm) without naming this
// process's rank, runs the N rank processes to their end and returns true
// with the exit code to return; false when this process is to run itself.
bool LaunchRanks(const ParsedArgs &a, const char *command, int *exit_code);

// This process's place in the run: the plan part to load and, with more
// than one rank or --comm, the communicator it joins (ConnectRank).
struct TpRank {
  PlanLoadOptions load;
  bool needs_comm = false;
  std::string comm_kind;
  RendezvousConfig rendezvous;
  std::unique_ptr<Communicator> comm; // null: one rank, no collectives
  std::string backend;                // not empty: the device this rank runs on (cuda:N)
  bool follower() const { return comm && comm->rank() != 0; }
};
// Reads the flags and environment; connects nothing, so a plan that does not
// fit them fails before any rendezvous.
StatusOr<TpRank> JoinRanks(const ParsedArgs &a, const std::string &backend);
// Joins the other ranks (when tp.needs_comm), within --tp-timeout.
Status ConnectRank(TpRank &tp);
// Every rank's plan carries rank 0's build id (Plan::build_id), so rank
// files of different builds never run together. Collective.
Status CheckSameBuild(const TpRank &tp, const Plan &plan);
// `st` prefixed with "rank R: " in a rank process (KILN_RANK set).
Status RankContext(const Status &st);

} // namespace kiln::cli
