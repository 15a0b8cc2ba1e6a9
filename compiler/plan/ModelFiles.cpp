//===- ModelFiles.cpp - read Hugging Face files next to a model ----------===//

#include "compiler/plan/ModelFiles.h"

#include "kiln/chat_template.h"
#include "kiln/tokenizer.h"
#include "nlohmann/json.hpp"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

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
  if (info.slidingWindow > 0 && j.contains("layer_types") && j["layer_types"].is_array()) {
    for (const auto &t : j["layer_types"]) {
      if (!t.is_string())
        return err(file + ": \"layer_types\" must be a list of strings");
      info.slidingLayers.push_back(t.get<std::string>() == "sliding_attention");
    }
  }
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

/// Adds `t`, replacing a template of the same name: transformers keeps named
/// templates in a dict, so the last one of a name wins.
void setTemplate(std::vector<NamedChatTemplate> &templates, NamedChatTemplate t) {
  for (NamedChatTemplate &old : templates)
    if (old.name == t.name) {
      old = std::move(t);
      return;
    }
  templates.push_back(std::move(t));
}

/// chat_template is a string (the default template) or a list of
/// {"name": ..., "template": ...}.
llvm::Error readTokenizerConfig(const json &j, const std::string &file, ModelInfo &info) {
  if (!j.contains("chat_template") || j["chat_template"].is_null())
    return llvm::Error::success();
  const json &t = j["chat_template"];
  if (t.is_string()) {
    info.chatTemplates.push_back({"default", t.get<std::string>(), file});
    return llvm::Error::success();
  }
  if (!t.is_array())
    return err(file + ": \"chat_template\" must be a string or a list");
  for (const json &e : t) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("template") || !e["template"].is_string())
      return err(file + ": \"chat_template\" entries need a \"name\" and a \"template\" string");
    setTemplate(info.chatTemplates,
                {e["name"].get<std::string>(), e["template"].get<std::string>(), file});
  }
  return llvm::Error::success();
}

std::string join(const std::string &dir, const char *name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// sentence-transformers' pooling flags, by the name kiln uses for each mode.
constexpr std::pair<const char *, const char *> kPoolingModes[] = {
    {"pooling_mode_cls_token", "cls"},
    {"pooling_mode_mean_tokens", "mean"},
    {"pooling_mode_max_tokens", "max"},
    {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"},
    {"pooling_mode_weightedmean_tokens", "weightedmean"},
    {"pooling_mode_lasttoken", "lasttoken"},
};

/// The Pooling module's config.json: the modes switched on, joined by '+'
/// (sentence-transformers concatenates several).
llvm::Error readPoolingConfig(const json &j, const std::string &file, ModelInfo &info) {
  std::string mode;
  for (const auto &[key, name] : kPoolingModes) {
    if (!j.contains(key) || j[key].is_null())
      continue;
    if (!j[key].is_boolean())
      return err(file + ": \"" + key + "\" must be true or false");
    if (j[key].get<bool>())
      mode += (mode.empty() ? "" : "+") + std::string(name);
  }
  if (mode.empty())
    return err(file + ": no pooling_mode_* is true");
  info.poolingMode = mode;
  if (mode != "mean" && mode != "cls")
    info.warnings.push_back(file + ": pooling '" + mode +
                            "' is stored, but kiln embed pools only 'mean' or 'cls' and will "
                            "refuse this plan");
  return llvm::Error::success();
}

/// modules.json of a sentence-transformers export: a list of modules run in
/// order. kiln embed applies the transformer, the pooling and a Normalize;
/// any other module after the transformer (Dense, ...) would change the
/// vectors, so it is reported.
llvm::Error readModules(const std::string &modelDir, ModelInfo &info) {
  const std::string file = join(modelDir, "modules.json");
  auto text = readIfExists(file);
  if (!text)
    return text.takeError();
  if (!*text)
    return llvm::Error::success();
  json modules = json::parse(**text, nullptr, /*allow_exceptions=*/false);
  if (modules.is_discarded() || !modules.is_array())
    return err(file + ": not a JSON list (expected sentence-transformers modules)");
  info.filesUsed.push_back(file);
  std::string poolingPath;
  for (const json &m : modules) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string())
      return err(file + ": every module needs a \"type\" string");
    const std::string type = m["type"].get<std::string>();
    const std::string name = type.substr(type.rfind('.') + 1);
    if (name == "Pooling") {
      if (!m.contains("path") || !m["path"].is_string())
        return err(file + ": the Pooling module needs a \"path\" string");
      poolingPath = m["path"].get<std::string>();
    } else if (name == "Normalize") {
      info.poolingNormalize = true;
    } else if (name != "Transformer") {
      info.warnings.push_back(file + ": module '" + type +
                              "' is not applied by kiln embed, so its vectors will differ "
                              "from sentence-transformers'");
    }
  }
  if (poolingPath.empty())
    return llvm::Error::success();
  const std::string config = join(join(modelDir, poolingPath.c_str()), "config.json");
  auto j = readJsonIfExists(config);
  if (!j)
    return j.takeError();
  if (!*j)
    return err(config + ": not found (modules.json names a Pooling module there)");
  info.filesUsed.push_back(config);
  return readPoolingConfig(**j, config, info);
}

/// transformers' own template files in `dir` (where tokenizer_config.json
/// is): chat_template.jinja, the default template, and
/// additional_chat_templates/NAME.jinja, named ones (sorted by name, so the
/// build does not depend on the directory's order). An empty list when there
/// are none.
llvm::Expected<std::vector<NamedChatTemplate>> readTemplateFiles(const std::string &dir,
                                                                 ModelInfo &info) {
  std::vector<NamedChatTemplate> found;
  const std::string main = join(dir, "chat_template.jinja");
  auto text = readIfExists(main);
  if (!text)
    return text.takeError();
  if (*text) {
    found.push_back({"default", std::move(**text), main});
    info.filesUsed.push_back(main);
  }
  const std::string extraDir = join(dir, "additional_chat_templates");
  if (!llvm::sys::fs::is_directory(extraDir))
    return found;
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(extraDir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".jinja" &&
        llvm::sys::fs::is_regular_file(it->path()))
      paths.push_back(it->path());
  if (ec)
    return err(extraDir + ": cannot list: " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const std::string &path : paths) {
    auto extra = readIfExists(path);
    if (!extra)
      return extra.takeError();
    if (!*extra)
      continue; // removed while listing
    setTemplate(found, {std::string(llvm::sys::path::stem(path)), std::move(**extra), path});
    info.filesUsed.push_back(path);
  }
  return found;
}

/// Picks the template the plan stores and compiles every template with the
/// runtime's own renderer, so a construct it lacks fails the build (exit 2)
/// naming the file, the template and the construct, not the first chat
/// request. Named templates the plan does not store are checked too: they
/// are part of the model, and a build that passes should mean every one of
/// its templates renders.
llvm::Error checkChatTemplates(bool allowUnsupported, ModelInfo &info) {
  if (info.chatTemplates.empty())
    return llvm::Error::success();
  const NamedChatTemplate *stored = &info.chatTemplates.front();
  for (const NamedChatTemplate &t : info.chatTemplates)
    if (t.name == "default")
      stored = &t;
  info.chatTemplate = stored->source;
  std::string others;
  for (const NamedChatTemplate &t : info.chatTemplates) {
    if (&t != stored)
      others += (others.empty() ? "'" : ", '") + t.name + "'";
    auto compiled = kiln::ChatTemplate::Compile(t.source);
    if (compiled.ok())
      continue;
    // The renderer's message starts with "chat template: "; the name goes
    // in its place.
    std::string message = compiled.status().message();
    const std::string prefix = "chat template: ";
    if (message.compare(0, prefix.size(), prefix) == 0)
      message.erase(0, prefix.size());
    std::string what = t.file + ": chat template '" + t.name + "': " + message;
    if (!allowUnsupported)
      return err(what + (&t == stored
                             ? " (see docs/chat-templates.md; --allow-unsupported-template stores "
                               "it anyway, and chat requests on the plan then fail)"
                             : " (see docs/chat-templates.md; --allow-unsupported-template builds "
                               "anyway, without this template)"));
    info.warnings.push_back(what + (&t == stored ? "; stored because of "
                                                   "--allow-unsupported-template, but kiln "
                                                   "cannot render it"
                                                 : "; ignored because of "
                                                   "--allow-unsupported-template"));
  }
  // A plan holds one template (schemas/plan.fbs), so the others are only
  // checked; say so, because transformers renders 'tool_use' for requests
  // that pass tools and kiln renders the stored one for every request.
  if (!others.empty())
    info.warnings.push_back(stored->file + ": the plan stores chat template '" + stored->name +
                            "'; the model's other templates (" + others +
                            ") compile but are not stored, and every request renders '" +
                            stored->name + "'");
  return llvm::Error::success();
}

/// A tokenizer the runtime cannot load is still stored (another runtime may
/// use it), but the build says so, naming what is unsupported.
void checkTokenizerRuns(const std::string &file, ModelInfo &info) {
  auto tokenizer = kiln::Tokenizer::FromJson(info.tokenizerJson);
  if (!tokenizer.ok())
    info.warnings.push_back(file + ": kiln's runtime cannot run this tokenizer (" +
                            tokenizer.status().message() +
                            "); it is stored, but kiln run and kiln embed will refuse the plan");
}

} // namespace

llvm::Expected<ModelInfo> readModelFiles(const std::string &modelDir,
                                         const std::string &tokenizerPath,
                                         bool allowUnsupportedTemplate) {
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
    checkTokenizerRuns(tokFile, info);
  }
  if (tokDir.empty())
    tokDir = ".";
  if (auto e = apply(join(tokDir, "tokenizer_config.json"), readTokenizerConfig))
    return std::move(e);
  // Template files take precedence over tokenizer_config.json's key, as in
  // transformers, whose recent versions save the template to
  // chat_template.jinja instead of the key.
  auto files = readTemplateFiles(tokDir, info);
  if (!files)
    return files.takeError();
  if (!files->empty())
    info.chatTemplates = std::move(*files);
  if (auto e = checkChatTemplates(allowUnsupportedTemplate, info))
    return std::move(e);
  if (auto e = readModules(modelDir, info))
    return std::move(e);
  return info;
}

} // namespace kiln::plan
