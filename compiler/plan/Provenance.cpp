//===- Provenance.cpp - where a plan comes from ---------------------------===//

#include "compiler/plan/Provenance.h"

#include "compiler/support/BuildError.h"
#include "sha256.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <ctime>
#include <unistd.h>

namespace kiln::plan {

SourceHasher::~SourceHasher() {
  if (pending.valid()) {
    cancel = true;
    pending.wait();
  }
}

void SourceHasher::start(const std::string &modelPath,
                         const std::vector<std::string> &externalData) {
  modelName = llvm::sys::path::filename(modelPath).str();
  locations = externalData;
  pending = std::async(std::launch::async, [this, modelPath, externalData] {
    Result r;
    auto hash = [&](const std::string &path, const std::string &recorded, SourceFileDesc &out) {
      out.path = recorded;
      r.error = Sha256File(path, &out.sha256, &out.size, &cancel);
      return r.error.empty();
    };
    if (!hash(modelPath, llvm::sys::path::filename(modelPath).str(), r.model))
      return r;
    llvm::StringRef dir = llvm::sys::path::parent_path(modelPath);
    for (const std::string &location : externalData) {
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, location);
      r.externalData.emplace_back();
      if (!hash(std::string(path), location, r.externalData.back()))
        return r;
    }
    return r;
  });
}

void SourceHasher::placeholders(SourceFileDesc &model,
                                std::vector<SourceFileDesc> &externalData) const {
  // Nonzero sizes: a zero would be left out of the FlatBuffer as a default,
  // so the real value can only take the same room or less.
  model = {modelName, ~0ULL, std::string(64, '0')};
  externalData.clear();
  for (const std::string &location : locations)
    externalData.push_back({location, ~0ULL, std::string(64, '0')});
}

llvm::Error SourceHasher::wait(SourceFileDesc &model, std::vector<SourceFileDesc> &externalData) {
  if (!pending.valid())
    return compiler::internalError("the model's files were never hashed");
  Result r = pending.get();
  if (!r.error.empty())
    return compiler::inputError("hashing the model's files for the plan's provenance: " + r.error);
  model = std::move(r.model);
  externalData = std::move(r.externalData);
  return llvm::Error::success();
}

std::string buildHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
    return "unknown";
  return name;
}

std::string utcTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  char text[32] = {};
  if (!::gmtime_r(&now, &utc) || std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc) == 0)
    return "unknown";
  return text;
}

} // namespace kiln::plan
