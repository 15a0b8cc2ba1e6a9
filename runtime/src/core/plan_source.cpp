// Whether an ONNX file is a plan's source (kiln/plan_info.h, kiln verify).
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "sha256.h"

namespace kiln {
namespace {

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

} // namespace

SourceCheck CheckPlanSource(const Plan &plan, const std::string &onnx) {
  SourceCheck out;
  PlanProvenance p;
  if (!plan.provenance(&p)) {
    out.result = SourceCheck::kNoProvenance;
    out.message = "the plan records no provenance (it was built by a kiln older than plan "
                  "format 1.3); rebuild it to check its source";
    return out;
  }
  bool unreadable = false;
  out.message = Compare(onnx, p.model, &unreadable);
  if (!out.message.empty()) {
    out.result = unreadable ? SourceCheck::kUnreadable : SourceCheck::kMismatch;
    return out;
  }
  for (const PlanSourceFile &f : p.external_data) {
    unreadable = false;
    const std::string why = Compare(DirOf(onnx) + f.path, f, &unreadable);
    if (!why.empty()) {
      // The ONNX file matched, so it names this file: a missing or changed
      // one means the model's data is not what the plan was built from.
      out.result = SourceCheck::kMismatch;
      out.message = "external data: " + why;
      return out;
    }
  }
  out.external_files = p.external_data.size();
  return out;
}

} // namespace kiln
