// kiln verify: recheck a plan's integrity and, given an ONNX model, whether
// that model (and its external data) is the one the plan was built from.
// Integrity is exactly what the runtime checks on every load (LoadPlan):
// header, FlatBuffer and every weight section against their checksums, the
// FlatBuffers verifier and the graph invariants; the source check compares
// SHA-256 hashes with Plan.provenance.
#include "cli.h"
#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"

#include <cstdio>
#include <string>

namespace kiln::cli {
namespace {

// The plan is intact, but the ONNX given is not its source.
constexpr int kExitMismatch = 3;

const char kUsage[] =
    "usage: kiln verify model.plan [--onnx model.onnx]\n"
    "\n"
    "Rechecks every byte of a plan as the runtime does on load: the header, the\n"
    "FlatBuffer and each weight section against the checksums stored in the plan,\n"
    "then the graph's structure. A damaged plan is reported with the region that\n"
    "failed (e.g. \"section 0 'shared': checksum mismatch\").\n"
    "\n"
    "With --onnx, also checks that model.onnx is the file the plan was built from:\n"
    "its SHA-256 and that of each external-data file the plan records (looked up\n"
    "by its location next to model.onnx) must equal the hashes `kiln build` stored\n"
    "in the plan's provenance (see `kiln inspect`).\n"
    "\n"
    "options:\n"
    "  --onnx PATH   the ONNX model to check against the plan's provenance\n"
    "\n"
    "exit status:\n"
    "  0  the plan is intact (and, with --onnx, the model is its source)\n"
    "  2  bad arguments, an unreadable or corrupt plan, an unreadable model.onnx,\n"
    "     or a plan without provenance (built before plan format 1.3) with --onnx\n"
    "  3  the plan is intact but model.onnx or one of its external-data files is\n"
    "     not the plan's source (the message names the file)\n";

int CheckSource(const Plan &plan, const std::string &onnx) {
  const SourceCheck check = CheckPlanSource(plan, onnx);
  switch (check.result) {
  case SourceCheck::kMatch:
    std::printf("source OK: %s and its %zu external-data file%s are the plan's source (SHA-256)\n",
                onnx.c_str(), check.external_files, check.external_files == 1 ? "" : "s");
    return kExitOk;
  case SourceCheck::kMismatch:
    std::fprintf(stderr, "kiln verify: %s\n", check.message.c_str());
    return kExitMismatch;
  case SourceCheck::kUnreadable:
  case SourceCheck::kNoProvenance:
    break;
  }
  std::fprintf(stderr, "kiln verify: %s\n", check.message.c_str());
  return kExitBadInput;
}

} // namespace

int VerifyMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err = ParseArgs(args, {"--onnx"}, {}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("verify", err, kUsage);
  if (a.positional.size() != 1)
    return Usage("verify", "expected one plan file", kUsage);
  if (a.All("--onnx").size() > 1)
    return Usage("verify", "--onnx is given more than once", kUsage);
  const std::string &path = a.positional[0];
  auto plan = LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, 0});
  if (!plan.ok()) {
    std::fprintf(stderr, "kiln verify: %s is not an intact plan: %s\n", path.c_str(),
                 plan.status().message().c_str());
    return ExitCodeFor(plan.status());
  }
  // Rank 0's load checks the shared section and its own; each other rank's
  // load checks its program and its section.
  for (int rank = 1; rank < (*plan)->tp_size(); ++rank) {
    auto other = LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, rank});
    if (!other.ok()) {
      std::fprintf(stderr, "kiln verify: %s is not an intact plan: rank %d: %s\n", path.c_str(),
                   rank, other.status().message().c_str());
      return ExitCodeFor(other.status());
    }
  }
  const Plan &p = **plan;
  const PlanInfo info = DescribePlan(p);
  const size_t sections = info.sections.size();
  uint64_t section_bytes = 0;
  for (const SectionInfo &s : info.sections)
    section_bytes += s.size;
  std::printf("plan OK: %s: header, graph and %zu weight section%s (%llu bytes) match their "
              "checksums\n",
              path.c_str(), sections, sections == 1 ? "" : "s",
              static_cast<unsigned long long>(section_bytes));
  if (a.All("--onnx").empty())
    return kExitOk;
  return CheckSource(p, a.All("--onnx")[0]);
}

} // namespace kiln::cli
