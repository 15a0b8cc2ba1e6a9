// kiln verify: recheck a plan's integrity and, given an ONNX model, whether
// that model (and its external data) is the one the plan was built from.
// Integrity is exactly what the runtime checks on every load (LoadPlan):
// header, FlatBuffer and every weight section against their checksums, the
// FlatBuffers verifier and the graph invariants; the source check compares
// SHA-256 hashes with Plan.provenance.
#include "cli.h"
#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"
#include "sha256.h"

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

std::string DirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// "" when `path` hashes to `recorded`, else why not.
std::string Compare(const std::string &path, const PlanSourceFile &recorded, bool *unreadable) {
  std::string sha;
  uint64_t size = 0;
  std::string err = Sha256File(path, &sha, &size);
  if (!err.empty()) {
    *unreadable = true;
    return err;
  }
  if (sha == recorded.sha256 && size == recorded.size)
    return "";
  return "'" + path + "' is not the plan's source: its SHA-256 is " + sha + " (" +
         std::to_string(size) + " bytes), but the plan was built from '" + recorded.path +
         "' with SHA-256 " + recorded.sha256 + " (" + std::to_string(recorded.size) + " bytes)";
}

int CheckSource(const Plan &plan, const std::string &onnx) {
  PlanProvenance p;
  if (!plan.provenance(&p)) {
    std::fprintf(stderr, "kiln verify: the plan records no provenance (it was built by a kiln "
                         "older than plan format 1.3); rebuild it to check its source\n");
    return kExitBadInput;
  }
  bool unreadable = false;
  std::string why = Compare(onnx, p.model, &unreadable);
  if (!why.empty()) {
    std::fprintf(stderr, "kiln verify: %s\n", why.c_str());
    return unreadable ? kExitBadInput : kExitMismatch;
  }
  for (const PlanSourceFile &f : p.external_data) {
    std::string path = DirOf(onnx) + f.path;
    unreadable = false;
    why = Compare(path, f, &unreadable);
    if (!why.empty()) {
      // The ONNX file matched, so it names this file: a missing or changed
      // one means the model's data is not what the plan was built from.
      std::fprintf(stderr, "kiln verify: external data: %s\n", why.c_str());
      return kExitMismatch;
    }
  }
  std::printf("source OK: %s and its %zu external-data file%s are the plan's source (SHA-256)\n",
              onnx.c_str(), p.external_data.size(), p.external_data.size() == 1 ? "" : "s");
  return kExitOk;
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
  size_t sections = p.fb().sections() ? p.fb().sections()->size() : 0;
  uint64_t section_bytes = 0;
  for (size_t i = 0; i < sections; ++i)
    section_bytes += p.fb().sections()->Get(static_cast<flatbuffers::uoffset_t>(i))->size();
  std::printf("plan OK: %s: header, graph and %zu weight section%s (%llu bytes) match their "
              "checksums\n",
              path.c_str(), sections, sections == 1 ? "" : "s",
              static_cast<unsigned long long>(section_bytes));
  if (a.All("--onnx").empty())
    return kExitOk;
  return CheckSource(p, a.All("--onnx")[0]);
}

} // namespace kiln::cli
