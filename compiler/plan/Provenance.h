//===- Provenance.h - where a plan comes from ---------------------*- C++ -*-===//
//
// The plan records the SHA-256 of its source ONNX file and external-data
// files (Plan.provenance), so `kiln verify --onnx` can tell whether a model
// is the one a plan was built from. Hashing a multi-GB model takes seconds,
// so SourceHasher does it on a second thread while the compiler phases run,
// reading the files with plain read()s (no resident memory beyond a 1 MB
// buffer). It cannot ride on the plan writer's stream: the writer sees only
// the weights the graph still uses, reordered and some fused, not the files.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_PROVENANCE_H
#define KILN_COMPILER_PLAN_PROVENANCE_H

#include "compiler/plan/PlanModel.h"

#include "llvm/Support/Error.h"

#include <atomic>
#include <future>
#include <string>
#include <vector>

namespace kiln::plan {

/// Hashes a model's files in the background.
class SourceHasher {
public:
  SourceHasher() = default;
  SourceHasher(const SourceHasher &) = delete;
  SourceHasher &operator=(const SourceHasher &) = delete;
  /// Stops a hash still running (a build that failed) and waits for it.
  ~SourceHasher();

  /// Starts hashing `modelPath` and, relative to its directory, each of
  /// `externalData`.
  void start(const std::string &modelPath, const std::vector<std::string> &externalData);

  /// The files start() hashes, with placeholder hashes and sizes as wide
  /// as the real ones, so a plan can be laid out before wait() returns.
  void placeholders(SourceFileDesc &model, std::vector<SourceFileDesc> &externalData) const;

  /// Waits for the hashes: the ONNX file (path = its file name) and the
  /// external-data files (path = location as given). An unreadable file is
  /// an error naming it.
  llvm::Error wait(SourceFileDesc &model, std::vector<SourceFileDesc> &externalData);

private:
  struct Result {
    std::string error;
    SourceFileDesc model;
    std::vector<SourceFileDesc> externalData;
  };
  std::string modelName;
  std::vector<std::string> locations;
  std::atomic<bool> cancel{false};
  std::future<Result> pending;
};

/// This machine's host name, or "unknown".
std::string buildHostName();

/// The current time as UTC ISO 8601, e.g. "2026-12-03T07:37:41Z".
std::string utcTimestamp();

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PROVENANCE_H
