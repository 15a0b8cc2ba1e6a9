//===- PlanReader.h - a written plan back as writer inputs -------*- C++ -*-===//
//
// `kiln reshard` writes a plan from another plan, without the ONNX file or
// the model's side files: the model-wide fields (metadata, tokenizer, chat
// template, generation defaults, reports, provenance, source graph) are read
// back from the input plan's outer FlatBuffer, and every weight of the
// source graph is found by name among its tensors, whole or reassembled from
// the shards of its ranks. The caller opens and verifies the files (the
// runtime's loader does, in the tool); this unit only reads verified
// FlatBuffers and byte ranges, so the compiler stays free of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_PLANREADER_H
#define KILN_COMPILER_PLAN_PLANREADER_H

#include "compiler/plan/PlanModel.h"
#include "compiler/plan/SourceGraph.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::fb {
struct Plan;
} // namespace kiln::fb

namespace kiln::plan {

/// The writer's extras as `outer` (a verified plan's root) records them:
/// every model-wide field, the provenance and the source graph. The
/// generation default's max_new_tokens is kept as it was (maxOutTokens).
/// compilerVersion and the tensor-parallel table are left to the caller.
PlanExtras extrasFromPlan(const fb::Plan &outer);

/// Rebuilds unsplit weights from the pieces a plan holds: whole tensors (a
/// one-rank plan, a tensor-parallel plan's shared section) and shards
/// (ShardSpec: a range [offset, offset + n) of `full_dim` along `axis`).
/// Pieces point into the caller's mapped files, which must outlive this.
class WeightAssembler {
public:
  /// A weight as it is; the first bytes given for a name are kept.
  void addWhole(const std::string &name, const void *data, uint64_t size);
  /// One rank's shard of `fullName`: `shape` is the shard's (static),
  /// `elementBytes` its dtype's size.
  void addShard(const std::string &fullName, int rank, const void *data,
                std::vector<int64_t> shape, int64_t elementBytes, int axis, int64_t offset,
                int64_t fullDim);
  /// The bytes of `name`: the whole tensor, else its shards put together
  /// (once; the result is kept). Fails when the name is unknown, when the
  /// shards disagree on the full shape, leave part of it uncovered, or
  /// overlap with different bytes (replicated GQA heads must be equal).
  llvm::Expected<WeightBytesRef> lookup(const std::string &name);
  /// Names of weights with shards (for the summary).
  size_t numSharded() const { return shards.size(); }

private:
  struct Shard {
    int rank;
    const void *data;
    std::vector<int64_t> shape;
    int64_t elementBytes;
    int axis;
    int64_t offset, fullDim;
  };
  llvm::Expected<WeightBytesRef> assemble(const std::string &name, const std::vector<Shard> &s);

  std::map<std::string, WeightBytesRef> whole;
  std::map<std::string, std::vector<Shard>> shards;
  std::map<std::string, std::unique_ptr<std::vector<uint8_t>>> assembled;
};

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PLANREADER_H
