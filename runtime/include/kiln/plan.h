// A loaded, verified engine plan (schemas/plan.fbs): the mmapped file, the
// FlatBuffer inside it, and the tensor table decoded for the executor.
//
// LoadPlan trusts nothing in the file. Beyond checksums and the FlatBuffers
// verifier it enforces what the executor relies on, so a plan that loads can
// be executed without further checks on its structure:
//   - every tensor has a known dtype; weights have static shapes, lie inside
//     their section at kTensorAlign and have size == bytes of dtype x shape;
//   - ops are in execution order: every operand is a weight, a graph input or
//     produced by an earlier op; every activation is produced by exactly one
//     op; op outputs are activations;
//   - every activation that is not `host` has a slot < memory_plan.num_slots,
//     and tensors sharing a slot have disjoint lifetimes [producer, last use]
//     (graph outputs live to the end);
//   - an op's outputs are either all `host` or none;
//   - every op type is known to the CPU backend.
//
// A tensor-parallel plan (Plan.tensor_parallel, format 1.4) is loaded for one
// rank: its graph is that rank's nested program (RankProgram), verified with
// the same checks, and only the shared section and the rank's own section
// are checksummed and read, so a rank's resident memory holds its own weights
// and the replicated ones, not its peers'.
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace fb {
struct Plan; // kiln_schema/plan_generated.h (target kiln_schema)
}

enum class TensorKind { kActivation = 0, kWeight = 1, kInput = 2 };

// One dimension: static when value >= 0, else dynamic (named by `symbol` when
// the compiler knows it).
struct PlanDim {
  int64_t value = -1;
  std::string symbol;
};

// A weight of a tensor-parallel rank program that is a slice of a whole
// weight (Tensor.shard in schemas/plan.fbs): what kiln reshard reassembles.
struct PlanShard {
  std::string full_name; // the unsplit weight's name
  int axis = 0;          // the axis it was cut along
  int64_t offset = 0;    // where this slice starts on that axis
  int64_t full_dim = 0;  // the axis's extent in the unsplit weight
};

struct PlanTensor {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<PlanDim> dims;
  TensorKind kind = TensorKind::kActivation;
  int slot = -1;
  bool host = false;
  int section = -1;           // weights: index in Plan.sections; -1 for an empty
                              // weight in a plan without that section
  const void *data = nullptr; // weights: bytes inside the mapped section
  uint64_t size = 0;          // weights: byte size
  bool sharded = false;       // weights of a rank program: a slice, described by `shard`
  PlanShard shard;

  bool IsStatic() const;
  Shape StaticShape() const; // dynamic dims as -1
  // e.g. "[batch, 16, ?]".
  std::string DimsToString() const;
};

// A file a plan was built from (Plan.provenance in schemas/plan.fbs).
struct PlanSourceFile {
  std::string path; // ONNX: file name; external data: location from the ONNX file's directory
  uint64_t size = 0;
  std::string sha256; // 64 lowercase hex digits
};

// Where a plan came from: the kiln that built it, when and where, with which
// config, from which files.
struct PlanProvenance {
  std::string kiln_version;
  std::string source_commit;
  std::string build_host;
  std::string build_time; // UTC, ISO 8601
  std::string build_config_json;
  PlanSourceFile model;
  std::vector<PlanSourceFile> external_data;
};

// Which part of a plan a process runs (LoadPlan).
struct PlanLoadOptions {
  // The rank count the caller runs (`--tp N`); 0: not given, which loads a
  // plan without tensor parallelism and refuses a tensor-parallel one;
  // kAsBuilt: whatever the plan was built for (inspect, verify, build's
  // own check of what it wrote).
  static constexpr int kAsBuilt = -1;
  // As `rank`: the first rank program the file holds (with kAsBuilt: check a
  // rank file of kiln reshard --split without knowing its rank).
  static constexpr int kFirstHeldRank = -1;
  int tp_size = 0;
  int rank = 0; // in [0, tp_size)
};

class Plan {
public:
  ~Plan();
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  // The verified FlatBuffer, for the model-wide fields (metadata, tokenizer,
  // generation defaults, sections, provenance). Valid for the Plan's lifetime.
  const fb::Plan &fb() const { return *fb_; }
  // The FlatBuffer of the graph this process runs (ops, memory_plan, ragged,
  // decoder; tensors(), inputs() and outputs() are decoded from it): fb()
  // itself, or in a tensor-parallel plan this rank's nested program.
  const fb::Plan &graph() const { return *graph_; }
  // 1 for a plan without tensor parallelism.
  int tp_size() const { return tp_size_; }
  int rank() const { return rank_; }
  // Tensor-parallel plans: the build id every rank file of one build shares.
  const std::string &build_id() const { return build_id_; }
  const std::vector<PlanTensor> &tensors() const { return tensors_; }
  const std::vector<int> &inputs() const { return inputs_; }   // tensor ids
  const std::vector<int> &outputs() const { return outputs_; } // tensor ids
  int num_ops() const;
  // Tensor id by name, or -1.
  int FindTensor(const std::string &name) const;
  // Position of a tensor id in inputs()/outputs(), or -1.
  int InputIndex(int tensor_id) const;
  int OutputIndex(int tensor_id) const;
  // Whole file size, and bytes in the weight sections this rank reads (all
  // of them without tensor parallelism).
  uint64_t file_size() const { return file_size_; }
  uint64_t weight_bytes() const;
  // Bytes of weights one token reads at batch 1: weight_bytes(), less the
  // experts a moe op leaves idle (of its E experts' weights, top_k / E are
  // read). The bandwidth floor of a decode step.
  uint64_t token_weight_bytes() const;
  const std::string &source() const { return source_; }
  // The plan's provenance; false when it has none (built before format 1.2).
  bool provenance(PlanProvenance *out) const;

private:
  friend class PlanLoader;
  Plan() = default;

  std::string source_;
  // The file's bytes: a read-only mapping, or (LoadPlanFromBytes) an owned,
  // page-aligned copy.
  void *bytes_ = nullptr;
  uint64_t bytes_size_ = 0;
  bool mapped_ = false;
  uint64_t file_size_ = 0;
  const fb::Plan *fb_ = nullptr;
  const fb::Plan *graph_ = nullptr;
  // A rank program the file holds off 8-byte alignment, copied (graph_
  // then points here).
  std::vector<uint64_t> graph_copy_;
  int tp_size_ = 1, rank_ = 0;
  std::string build_id_;
  // Plan.sections index of each value a graph tensor's `section` takes: the
  // identity without tensor parallelism, {shared, own} in a rank program.
  std::vector<int> section_of_role_;
  std::vector<PlanTensor> tensors_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
};

// Maps and verifies a plan file. Corrupt or inconsistent files are DataLoss
// or InvalidArgument with a message naming the offending field; a missing or
// unreadable file is NotFound/InvalidArgument. Never crashes on any bytes.
StatusOr<std::unique_ptr<Plan>> LoadPlan(const std::string &path,
                                         const PlanLoadOptions &options = {});

// The same checks over bytes in memory (copied), for tests and fuzzers.
StatusOr<std::unique_ptr<Plan>> LoadPlanFromBytes(const void *data, size_t size,
                                                  const std::string &source = "<memory>",
                                                  const PlanLoadOptions &options = {});

const char *TensorKindName(TensorKind k);

} // namespace kiln
