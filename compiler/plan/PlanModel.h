//===- PlanModel.h - the plan as plain C++ values ----------------*- C++ -*-===//
//
// The plan writer works in two steps: collect everything from the MLIR
// module into these structs, then serialize them to a FlatBuffer. The split
// exists because WritePlanFile (schemas/plan_file.h) may ask for the
// FlatBuffer more than once, with different section offsets, and because the
// structs are easy to check in isolation. Field meanings are those of
// schemas/plan.fbs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_PLANMODEL_H
#define KILN_COMPILER_PLAN_PLANMODEL_H

#include "compiler/plan/ModelFiles.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::plan {

/// fb::AttrKind values.
enum class AttrKind { Int = 0, Float = 1, String = 2, Ints = 3, Floats = 4 };
/// fb::TensorKind values.
enum class TensorKind { Activation = 0, Weight = 1, Input = 2 };

struct AttrDesc {
  std::string name;
  AttrKind kind = AttrKind::Int;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

struct DimDesc {
  int64_t value = -1; // -1: dynamic
  std::string symbol; // e.g. "batch", "past_sequence_length + sequence_length"
};

/// One rank's slice of an unsplit weight (fb::ShardSpec).
struct ShardDesc {
  std::string fullName; // empty: not a shard
  int32_t axis = 0;
  int64_t offset = 0;
  int64_t fullDim = 0;
  int32_t groups = 1;
};

struct TensorDesc {
  std::string name;
  int dtype = 0; // fb::DType number
  std::vector<DimDesc> shape;
  TensorKind kind = TensorKind::Activation;
  int section = -1; // weights
  uint64_t offset = 0;
  uint64_t size = 0;
  int slot = -1; // activations
  bool host = false;
  ShardDesc shard; // weights a tensor-parallel build split
};

struct OpDesc {
  std::string type;            // op name without "kiln."
  std::string name;            // ONNX node name
  std::vector<int32_t> inputs; // -1: omitted optional operand
  std::vector<int32_t> outputs;
  std::vector<AttrDesc> attrs; // sorted by name
};

struct MemoryPlanDesc {
  int32_t numSlots = 0;
  std::vector<int64_t> slotStaticBytes;
  int64_t unsharedStaticBytes = -1;
};

struct DecoderDesc {
  int32_t inputIds = -1;
  int32_t attentionMask = -1;
  int32_t positionIds = -1;
  int32_t logits = -1;
  std::vector<std::pair<int32_t, int32_t>> kv; // (past input, present output)
};

/// The serving engine's inputs after kiln-ragged (Plan.ragged), by name.
/// `present` is false for a dense plan.
struct RaggedDesc {
  bool present = false;
  int32_t inputIds = -1, positionIds = -1, kvSlots = -1, queryStart = -1, contextLens = -1,
          blockTables = -1, logitsIndices = -1, logits = -1;
  std::vector<std::pair<int32_t, int32_t>> kvCache; // (key input, value input) per layer
};

/// The graph part, collected from the module.
struct GraphDesc {
  std::vector<TensorDesc> tensors;
  std::vector<OpDesc> ops;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  MemoryPlanDesc memory;
  /// Size of section 0, which holds every weight at kTensorAlign (where each
  /// one's bytes come from is GraphCollector's CollectedGraph::weights).
  uint64_t weightBytes = 0;
};

/// A file the plan was built from (fb::SourceFile).
struct SourceFileDesc {
  std::string path; // ONNX: file name; external data: location from the ONNX file's directory
  uint64_t size = 0;
  std::string sha256; // 64 lowercase hex digits
};

/// Where the plan came from (Plan.provenance); absent when `present` is false.
struct ProvenanceDesc {
  bool present = false;
  std::string kilnVersion;
  std::string sourceCommit; // "unknown" outside a git checkout
  std::string buildHost;
  std::string buildTime; // UTC, ISO 8601
  std::string buildConfigJson;
  SourceFileDesc model;
  std::vector<SourceFileDesc> externalData;
};

/// A tensor-parallel plan's TensorParallel table: each rank's program is
/// a finished nested Plan FlatBuffer.
struct TensorParallelDesc {
  int32_t tpSize = 1;
  std::string buildId;
  std::string partitionReport;
  std::vector<std::vector<uint8_t>> programs; // in rank order
  /// A rank file (kiln reshard --split): `programs` holds only this rank's
  /// program, and the sections are the shared one and this rank's. -1: all.
  int32_t onlyRank = -1;
};

/// Everything that is not the graph.
struct PlanExtras {
  std::string compilerVersion;
  ModelInfo model;
  std::string producer; // ONNX producer_name + " " + producer_version
  int32_t opset = 0;
  std::string buildConfigJson;
  std::string injectionReport;
  /// From the build config; overrides the model's generation default.
  std::optional<int64_t> maxOutTokens;
  ProvenanceDesc provenance;
  /// Set for a tensor-parallel plan: the outer Plan then has no graph, and
  /// its sections are the shared one and one per rank.
  std::optional<TensorParallelDesc> tensorParallel;
  /// Plan.source_graph.bytes: the unpartitioned module as MLIR bytecode
  /// without weight data (SourceGraph.h); empty: none is stored.
  std::string sourceGraph;
  /// When set, called once the weights are written and before the plan's
  /// FlatBuffer is final, to replace `provenance`'s placeholder hashes (of
  /// the same width) with the real ones, which are computed meanwhile.
  std::function<llvm::Error(ProvenanceDesc &)> completeProvenance;
  /// When set, called with the path of the complete plan file before it
  /// replaces the output; an error removes it and is writePlan's error.
  std::function<llvm::Error(const std::string &path)> checkBeforeCommit;
};

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PLANMODEL_H
