// The tensor-parallel flags of kiln run, bench and serve (tp_launch.h); the
// launcher and a rank's join are the runtime's (kiln/rank.h).
#include "tp_launch.h"

#include "cli.h"

#include <cstdlib>

namespace kiln::cli {

const std::vector<std::string> kTpOptions = {"--tp", "--rank", "--rendezvous", "--comm",
                                             "--tp-timeout"};

const char kTpUsage[] =
    "tensor parallelism (docs/tp-runtime.md):\n"
    "  --tp N                   run on N ranks, one process each; a plan built with\n"
    "                           tensor_parallel.tp_size N needs exactly --tp N. Without\n"
    "                           --rank this process launches the N ranks and watches them\n"
    "  --rank R                 join as rank R (or KILN_RANK) instead of launching; every\n"
    "                           rank gives the same --tp and --rendezvous\n"
    "  --rendezvous DIR|tcp://HOST:PORT\n"
    "                           where the ranks meet (or KILN_RENDEZVOUS): an empty\n"
    "                           directory every rank can write (a shared filesystem\n"
    "                           across hosts), or rank 0's address, where rank 0 serves\n"
    "                           the rendezvous store (no shared filesystem needed)\n"
    "  --comm gloo|nccl         the collectives (default: gloo on cpu, nccl on cuda);\n"
    "                           --tp 1 --comm nccl runs one rank through NCCL; nccl\n"
    "                           opens libnccl.so.2 (KILN_NCCL_LIBRARY names another)\n"
    "  --tp-timeout SECONDS     a rank waiting longer on a peer fails (default 60)\n";

namespace {

StatusOr<int> IntFlag(const ParsedArgs &a, const std::string &flag, int fallback, int lo, int hi) {
  if (!a.Has(flag))
    return fallback;
  const std::string text = a.Get(flag);
  char *end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi)
    return InvalidArgument(flag + " must be an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got '" + text + "'");
  return static_cast<int>(v);
}

} // namespace

StatusOr<RankOptions> RankFlags(const ParsedArgs &a, const std::string &device) {
  RankOptions o;
  KILN_ASSIGN_OR_RETURN(o.tp_size, IntFlag(a, "--tp", 0, 1, 4096));
  KILN_ASSIGN_OR_RETURN(o.rank, IntFlag(a, "--rank", -1, 0, 4095));
  KILN_ASSIGN_OR_RETURN(o.timeout_seconds, IntFlag(a, "--tp-timeout", 60, 1, 86400));
  o.rendezvous = a.Get("--rendezvous");
  o.comm = a.Get("--comm");
  o.device = device;
  return o;
}

bool LaunchRanks(const ParsedArgs &a, const char *command, int *exit_code) {
  StatusOr<RankOptions> o = RankFlags(a, "cpu");
  if (!o.ok() || !IsRankLauncher(*o))
    return false; // one rank, a rank joining, or bad flags the command reports
  *exit_code = kiln::LaunchRanks(*o, std::string("kiln ") + command);
  return true;
}

} // namespace kiln::cli
