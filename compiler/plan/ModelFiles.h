//===- ModelFiles.h - Hugging Face files next to a model ---------*- C++ -*-===//
//
// A model exported from Hugging Face usually sits beside config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json and (from
// recent transformers) chat_template.jinja. The plan
// embeds what the runtime needs from them (metadata, generation defaults,
// tokenizer, chat template) so that a deployment host needs only the plan.
// Every file is optional; a file that exists but does not parse is an error,
// because silently building a plan without its tokenizer would surface only
// at serving time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PLAN_MODELFILES_H
#define KILN_COMPILER_PLAN_MODELFILES_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::plan {

/// One chat template of a model folder and the file it came from.
struct NamedChatTemplate {
  std::string name; // "default" for a single template or chat_template.jinja
  std::string source;
  std::string file;
};

/// What the plan records about the model beyond its graph. Fields stay at
/// their defaults when no file provides them.
struct ModelInfo {
  // ModelMetadata
  std::string architecture; // config.json model_type, e.g. "llama"
  std::string modelName;    // _name_or_path, else architectures[0]
  int64_t vocabSize = 0;
  int64_t contextLength = 0;
  // Sliding-window attention span (config sliding_window, unless
  // use_sliding_window is false); 0: every position sees the whole context.
  int64_t slidingWindow = 0;
  // Per layer, from config.json layer_types ("sliding_attention" or
  // "full_attention"): true where the layer uses the window. Empty when the
  // config has no such list (every layer then uses it, as Mistral's).
  std::vector<bool> slidingLayers;
  int32_t numLayers = 0;
  int64_t hiddenSize = 0;
  int64_t bosTokenId = -1;
  std::vector<int64_t> eosTokenIds;
  int64_t padTokenId = -1;

  // GenerationDefaults, with Hugging Face's semantics: greedy unless
  // do_sample is true.
  std::optional<int32_t> maxNewTokens;
  float temperature = 0;
  int32_t topK = 0;
  float topP = 1.0f;
  float repetitionPenalty = 1.0f;

  std::string tokenizerJson; // tokenizer.json contents
  // The template the plan stores: the one named "default", else the first.
  std::string chatTemplate;
  // Every template found, the stored one included, each compiled by the
  // build: chat_template.jinja and additional_chat_templates/NAME.jinja when
  // either exists (as in transformers, they take precedence), else
  // tokenizer_config.json's chat_template (a string, or named templates).
  std::vector<NamedChatTemplate> chatTemplates;

  // sentence-transformers pooling (modules.json, <Pooling path>/config.json):
  // "mean", "cls", another of its modes, or empty without a config.
  std::string poolingMode;
  bool poolingNormalize = false; // a Normalize module follows the pooling

  /// What the build should warn about: a tokenizer the runtime cannot run,
  /// a pooling config kiln embed cannot apply.
  std::vector<std::string> warnings;

  /// Paths that contributed, for the build's progress output.
  std::vector<std::string> filesUsed;
};

/// Reads the Hugging Face files in `modelDir`. `tokenizerPath`, when not
/// empty, overrides where the tokenizer comes from: a tokenizer.json file or
/// a directory holding tokenizer.json (and optionally tokenizer_config.json);
/// unlike the files found by looking beside the model, it must exist.
/// A chat template outside the runtime's Jinja subset (any of them, named
/// ones too) is an error naming its file, its name and the construct, or with
/// allowUnsupportedTemplate a warning (it is stored).
llvm::Expected<ModelInfo> readModelFiles(const std::string &modelDir,
                                         const std::string &tokenizerPath,
                                         bool allowUnsupportedTemplate = false);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_MODELFILES_H
