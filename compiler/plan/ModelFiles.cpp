//===- ModelFiles.cpp - read Hugging Face files next to a model ----------===//

#include "compiler/plan/ModelFiles.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace kiln::plan {
namespace {

using nlohmann::json;

llvm::Error err(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Contents of `path`, or std::nullopt when it does not exist.
llvm::Expected<std::optional<std::string>> readIfExists(const std::string &path) {
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return err(path + ": cannot read: " + buffer.getError().message());
  return std::optional<std::string>((*buffer)->getBuffer().str());
}

llvm::Expected<std::optional<json>> readJsonIfExists(const std::string &path) {
  auto text = readIfExists(path);
  if (!text)
    return text.takeError();
  if (!*text)
    return std::nullopt;
  json j = json::parse(**text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return err(path + ": not a JSON object");
  return std::optional<json>(std::move(j));
}

/// Reads the first of `keys` present in `j` as an integer. A present key of
/// the wrong type is an error: a plan with a garbage vocab size is worse
/// than no plan.
llvm::Error readInt(const json &j, std::initializer_list<const char *> keys,
                    const std::string &file, int64_t &out) {
  for (const char *k : keys) {
    if (!j.contains(k) || j[k].is_null())
      continue;
    if (!j[k].is_number_integer())
      return err(file + ": \"" + k + "\" must be an integer");
    out = j[k].get<int64_t>();
    return llvm::Error::success();
  }
  return llvm::Error::success();
}

llvm::Error readFloat(const json &j, const char *key, const std::string &file, float &out) {
  if (!j.contains(key) || j[key].is_null())
    return llvm::Error::success();
  if (!j[key].is_number())
    return err(file + ": \"" + key + "\" must be a number");
  out = j[key].get<float>();
  return llvm::Error::success();
}

/// eos_token_id is an integer or a list of integers in Hugging Face configs.
llvm::Error readTokenIds(const json &j, const char *key, const std::string &file,
                         std::vector<int64_t> &out) {
  if (!j.contains(key) || j[key].is_null())
    return llvm::Error::success();
  const json &v = j[key];
  std::vector<int64_t> ids;
  if (v.is_number_integer()) {
    ids.push_back(v.get<int64_t>());
  } else if (v.is_array()) {
    for (const json &e : v) {
      if (!e.is_number_integer())
        return err(file + ": \"" + key + "\" must hold integers");
      ids.push_back(e.get<int64_t>());
    }
  } else {
    return err(file + ": \"" + key + "\" must be an integer or a list of integers");
  }
  out = std::move(ids);
  return llvm::Error::success();
}

llvm::Error readConfig(const json &j, const std::string &file, ModelInfo &info) {
  if (j.contains("model_type") && j["model_type"].is_string())
    info.architecture = j["model_type"].get<std::string>();
  if (j.contains("_name_or_path") && j["_name_or_path"].is_string())
    info.modelName = j["_name_or_path"].get<std::string>();
  if (info.modelName.empty() && j.contains("architectures") && j["architectures"].is_array() &&
      !j["architectures"].empty() && j["architectures"][0].is_string())
    info.modelName = j["architectures"][0].get<std::string>();
  int64_t layers = 0;
  // Key spellings differ by architecture (GPT-2 uses n_positions/n_layer/n_embd).
  if (auto e = readInt(j, {"vocab_size"}, file, info.vocabSize))
    return e;
  if (auto e = readInt(j, {"max_position_embeddings", "n_positions", "n_ctx", "seq_length"}, file,
                       info.contextLength))
    return e;
  if (auto e = readInt(j, {"num_hidden_layers", "n_layer", "num_layers"}, file, layers))
    return e;
  // null or absent: no window. Qwen2 keeps a window size it does not use.
  if (j.contains("sliding_window") && j["sliding_window"].is_number_integer() &&
      !(j.contains("use_sliding_window") && j["use_sliding_window"].is_boolean() &&
        !j["use_sliding_window"].get<bool>()))
    info.slidingWindow = std::max<int64_t>(0, j["sliding_window"].get<int64_t>());
  info.numLayers = static_cast<int32_t>(layers);
  if (auto e = readInt(j, {"hidden_size", "n_embd", "d_model"}, file, info.hiddenSize))
    return e;
  if (auto e = readInt(j, {"bos_token_id"}, file, info.bosTokenId))
    return e;
  if (auto e = readInt(j, {"pad_token_id"}, file, info.padTokenId))
    return e;
  return readTokenIds(j, "eos_token_id", file, info.eosTokenIds);
}

/// generation_config.json overrides config.json's token ids and sets the
/// sampling defaults. max_length is deliberately not read: Hugging Face's
/// default of 20 total tokens is a notorious source of truncated output.
llvm::Error readGenerationConfig(const json &j, const std::string &file, ModelInfo &info) {
  if (auto e = readInt(j, {"bos_token_id"}, file, info.bosTokenId))
    return e;
  if (auto e = readInt(j, {"pad_token_id"}, file, info.padTokenId))
    return e;
  if (auto e = readTokenIds(j, "eos_token_id", file, info.eosTokenIds))
    return e;
  int64_t maxNew = 0;
  if (auto e = readInt(j, {"max_new_tokens"}, file, maxNew))
    return e;
  if (maxNew > 0)
    info.maxNewTokens = static_cast<int32_t>(std::min<int64_t>(maxNew, INT32_MAX));

  // Hugging Face applies the repetition penalty to greedy search too.
  if (auto e = readFloat(j, "repetition_penalty", file, info.repetitionPenalty))
    return e;

  bool sample =
      j.contains("do_sample") && j["do_sample"].is_boolean() && j["do_sample"].get<bool>();
  if (!sample)
    return llvm::Error::success(); // greedy: temperature 0, no top-k/top-p
  info.temperature = 1.0f;
  info.topK = 50; // Hugging Face's default when sampling
  int64_t topK = info.topK;
  if (auto e = readFloat(j, "temperature", file, info.temperature))
    return e;
  if (auto e = readInt(j, {"top_k"}, file, topK))
    return e;
  info.topK = static_cast<int32_t>(topK);
  return readFloat(j, "top_p", file, info.topP);
}

/// chat_template is a string, or a list of {name, template} of which the one
/// named "default" (else the first) applies.
llvm::Error readTokenizerConfig(const json &j, const std::string &file, ModelInfo &info) {
  if (!j.contains("chat_template") || j["chat_template"].is_null())
    return llvm::Error::success();
  const json &t = j["chat_template"];
  if (t.is_string()) {
    info.chatTemplate = t.get<std::string>();
    return llvm::Error::success();
  }
  if (!t.is_array())
    return err(file + ": \"chat_template\" must be a string or a list");
  for (const json &e : t) {
    if (!e.is_object() || !e.contains("template") || !e["template"].is_string())
      return err(file + ": \"chat_template\" entries need a \"template\" string");
    bool isDefault = e.contains("name") && e["name"] == "default";
    if (info.chatTemplate.empty() || isDefault)
      info.chatTemplate = e["template"];
    if (isDefault)
      break;
  }
  return llvm::Error::success();
}

std::string join(const std::string &dir, const char *name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

} // namespace

llvm::Expected<ModelInfo> readModelFiles(const std::string &modelDir,
                                         const std::string &tokenizerPath) {
  ModelInfo info;
  using Reader = llvm::Error (*)(const json &, const std::string &, ModelInfo &);
  auto apply = [&](const std::string &path, Reader reader) -> llvm::Error {
    auto j = readJsonIfExists(path);
    if (!j)
      return j.takeError();
    if (!*j)
      return llvm::Error::success();
    info.filesUsed.push_back(path);
    return reader(**j, path, info);
  };
  if (auto e = apply(join(modelDir, "config.json"), readConfig))
    return std::move(e);
  if (auto e = apply(join(modelDir, "generation_config.json"), readGenerationConfig))
    return std::move(e);

  // The tokenizer comes from beside the model unless --tokenizer says where.
  std::string tokDir = modelDir, tokFile = join(modelDir, "tokenizer.json");
  if (!tokenizerPath.empty()) {
    if (llvm::sys::fs::is_directory(tokenizerPath)) {
      tokDir = tokenizerPath;
      tokFile = join(tokenizerPath, "tokenizer.json");
    } else {
      tokDir = std::string(llvm::sys::path::parent_path(tokenizerPath));
      tokFile = tokenizerPath;
    }
    if (!llvm::sys::fs::exists(tokFile))
      return err(tokFile + ": tokenizer file not found");
  }
  auto tok = readIfExists(tokFile);
  if (!tok)
    return tok.takeError();
  if (*tok) {
    json parsed = json::parse(**tok, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object())
      return err(tokFile + ": not a JSON object (expected a Hugging Face tokenizer.json)");
    info.tokenizerJson = std::move(**tok);
    info.filesUsed.push_back(tokFile);
  }
  if (auto e =
          apply(join(tokDir.empty() ? "." : tokDir, "tokenizer_config.json"), readTokenizerConfig))
    return std::move(e);
  return info;
}

} // namespace kiln::plan
