// `--tp N` for kiln run, bench and serve (docs/tp-runtime.md): the flags,
// read into the runtime's RankOptions (kiln/rank.h), which launches the
// ranks and opens each one.
#pragma once

#include "cli_args.h"
#include "kiln/rank.h"

#include <string>
#include <vector>

namespace kiln::cli {

extern const std::vector<std::string> kTpOptions;
extern const char kTpUsage[];

// --tp, --rank, --rendezvous, --comm and --tp-timeout; `device` is what the
// command runs on (plain "cuda" becomes one GPU per rank).
StatusOr<RankOptions> RankFlags(const ParsedArgs &a, const std::string &device);

// The launcher: when the flags ask for N > 1 ranks without naming this
// process's rank, runs the N rank processes to their end and returns true
// with the exit code to return; false when this process is to run itself.
bool LaunchRanks(const ParsedArgs &a, const char *command, int *exit_code);

} // namespace kiln::cli
