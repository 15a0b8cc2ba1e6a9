// What a loaded plan says about its model, typed: the model-wide fields of
// schemas/plan.fbs (metadata, tokenizer, chat template, generation defaults,
// pooling, sections, tensor parallelism) and which interface its graph has.
// Tools and servers read these instead of the FlatBuffer, so the schema can
// change behind them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Plan; // kiln/plan.h

// ModelMetadata: what the ONNX export and its config said.
struct ModelInfo {
  bool present = false; // false: the plan has no metadata table (fields keep their defaults)
  std::string architecture; // e.g. "llama", "gpt2"
  std::string model_name;
  std::string producer;     // ONNX producer name and version
  int64_t vocab_size = 0;
  int64_t context_length = 0; // 0: not known
  int num_layers = 0;
  int64_t hidden_size = 0;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = -1;
  int opset = 0;
};

// GenerationDefaults: the model's generation_config.json at build time.
struct GenerationInfo {
  bool present = false;
  int max_new_tokens = 128;
  float temperature = 0;
  int top_k = 0;
  float top_p = 1;
  float repetition_penalty = 1;
};

// An encoder's sentence-transformers pooling (kiln embed).
struct PoolingInfo {
  bool present = false;
  std::string mode; // "mean", "cls", or another sentence-transformers mode
  bool normalize = false;
};

// A weight section of the file.
struct SectionInfo {
  std::string name;
  int rank = -1; // -1: shared by every rank
  uint64_t offset = 0, size = 0, checksum = 0;
};

// Which interface the graph this process runs has (Plan::graph()).
enum class PlanInterface {
  kRagged,  // paged KV cache, ragged batches: the engine batches it
  kDecoder, // dense decoder: past/present KV tensors and logits
  kEncoder, // no logits: token states (kiln embed)
};
const char *PlanInterfaceName(PlanInterface i); // "ragged", "dense", "encoder"

struct PlanInfo {
  uint32_t format_major = 0, format_minor = 0;
  std::string compiler_version;
  ModelInfo model;
  GenerationInfo generation;
  PoolingInfo pooling;
  // Empty when the plan has none. Views into the mapped plan: valid while
  // the Plan lives.
  std::string_view tokenizer_json;
  std::string_view chat_template;
  std::string_view build_config_json;
  std::string_view injection_report;
  std::vector<SectionInfo> sections;
  // Tensor parallelism (Plan.tensor_parallel): 1 and empty without it.
  int tp_size = 1;
  std::string build_id;
  std::string partition_report;
  std::vector<int> tp_ranks; // the ranks whose programs the file holds
  PlanInterface interface = PlanInterface::kEncoder;
};

// Decodes the plan's model-wide fields (the loader verified them).
PlanInfo DescribePlan(const Plan &plan);

// The graph's interface alone.
PlanInterface GraphInterface(const Plan &plan);

// Whether an ONNX file, and the external-data files beside it that the
// plan's provenance names, are the model the plan was built from (SHA-256
// and size against Plan.provenance): kiln verify --onnx.
struct SourceCheck {
  enum Result {
    kMatch,        // every file matches
    kMismatch,     // a file differs, or an external-data file is missing
    kUnreadable,   // the ONNX file itself cannot be read
    kNoProvenance, // the plan records none (built before format 1.3)
  };
  Result result = kMatch;
  std::string message;       // why not, naming the file and both hashes
  size_t external_files = 0; // external-data files checked
};
SourceCheck CheckPlanSource(const Plan &plan, const std::string &onnx_path);

} // namespace kiln
