// Parsing and validation of the build config; the rules are listed in
// BuildConfig.h and each key is documented in docs/build-config.md.
#include "compiler/driver/BuildConfig.h"

#include "nlohmann/json.hpp"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace kiln::compiler {
namespace {

using nlohmann::json;

// How a key's value is checked. kNullOnly marks DeepSpeed fields whose feature
// kiln lacks: null (DeepSpeed's default) is accepted, anything else refused.
enum class Kind { kDtype, kPositiveInt, kBool, kNullOnly, kObject, kString, kPolicy };

struct KeyInfo {
  const char *name;      // as accepted in JSON
  const char *canonical; // the DeepSpeed name it resolves to
  Kind kind;
  const char *replacement = nullptr; // set for deprecated names
};

// Top level. Aliases follow DeepSpeedInferenceConfig.
const KeyInfo kTopKeys[] = {
    {"dtype", "dtype", Kind::kDtype},
    {"tensor_parallel", "tensor_parallel", Kind::kObject},
    {"tp", "tensor_parallel", Kind::kObject},
    {"mp_size", "tensor_parallel.tp_size", Kind::kPositiveInt, "tensor_parallel.tp_size"},
    {"replace_with_kernel_inject", "replace_with_kernel_inject", Kind::kBool},
    {"kernel_inject", "replace_with_kernel_inject", Kind::kBool},
    {"max_out_tokens", "max_out_tokens", Kind::kPositiveInt},
    {"max_tokens", "max_out_tokens", Kind::kPositiveInt},
    {"min_out_tokens", "min_out_tokens", Kind::kPositiveInt},
    {"min_tokens", "min_out_tokens", Kind::kPositiveInt},
    {"triangular_masking", "triangular_masking", Kind::kBool},
    {"tm", "triangular_masking", Kind::kBool},
    {"checkpoint", "checkpoint", Kind::kNullOnly},
    {"training_mp_size", "training_mp_size", Kind::kPositiveInt},
    {"save_mp_checkpoint_path", "save_mp_checkpoint_path", Kind::kNullOnly},
    {"injection_policy", "injection_policy", Kind::kPolicy},
    {"injection_dict", "injection_policy", Kind::kPolicy},
    {"quant", "quant", Kind::kObject},
    {"enable_cuda_graph", "enable_cuda_graph", Kind::kBool},
    {"ragged_batching", "ragged_batching", Kind::kBool},
    {"target", "target", Kind::kString},
};

const KeyInfo kTensorParallelKeys[] = {
    {"tp_size", "tensor_parallel.tp_size", Kind::kPositiveInt},
    {"enabled", "tensor_parallel.enabled", Kind::kBool},
    {"tp_grain_size", "tensor_parallel.tp_grain_size", Kind::kNullOnly},
    {"mpu", "tensor_parallel.mpu", Kind::kNullOnly},
    {"tp_group", "tensor_parallel.tp_group", Kind::kNullOnly},
};

const KeyInfo kQuantKeys[] = {
    {"enabled", "quant.enabled", Kind::kBool},
    {"activation", "quant.activation", Kind::kNullOnly},
    {"weight", "quant.weight", Kind::kNullOnly},
    {"qkv", "quant.qkv", Kind::kNullOnly},
    // kiln's own: "f32" (weight-only int8, the default) or "int8" (each
    // product's activation rows quantized too, multiplied int8 x int8).
    {"activations", "quant.activations", Kind::kString},
};

template <size_t N> const KeyInfo *Find(const KeyInfo (&table)[N], const std::string &name) {
  for (const KeyInfo &k : table)
    if (name == k.name)
      return &k;
  return nullptr;
}

template <size_t N> std::string KnownNames(const KeyInfo (&table)[N]) {
  std::string out;
  for (const KeyInfo &k : table)
    out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

const KeyInfo *FindTop(const std::string &name) { return Find(kTopKeys, name); }

// The subtable of an object-valued key, by canonical name.
const KeyInfo *FindSub(const std::string &parent, const std::string &name) {
  if (parent == "tensor_parallel")
    return Find(kTensorParallelKeys, name);
  if (parent == "quant")
    return Find(kQuantKeys, name);
  return nullptr;
}

std::string SubNames(const std::string &parent) {
  return parent == "tensor_parallel" ? KnownNames(kTensorParallelKeys) : KnownNames(kQuantKeys);
}

// Canonical dtype spelling, or "" when the spelling is unknown. These are
// DeepSpeed's DtypeEnum names; it also takes torch dtypes, which in JSON can
// only arrive spelled as strings ("torch.half" is how torch.half prints).
std::string CanonicalDtype(const std::string &s) {
  static const std::map<std::string, std::string> kSpellings = {
      {"fp32", "fp32"},          {"float32", "fp32"},        {"float", "fp32"},
      {"torch.float32", "fp32"}, {"torch.float", "fp32"},    {"fp16", "fp16"},
      {"float16", "fp16"},       {"half", "fp16"},           {"torch.float16", "fp16"},
      {"torch.half", "fp16"},    {"bf16", "bf16"},           {"bfloat16", "bf16"},
      {"bfloat", "bf16"},        {"torch.bfloat16", "bf16"}, {"int8", "int8"},
      {"torch.int8", "int8"},
  };
  auto it = kSpellings.find(s);
  return it == kSpellings.end() ? "" : it->second;
}

// The spellings a plan can be built with, for the unknown-dtype message.
std::string DtypeSpellings() {
  return "fp32, float32, float, torch.float32, torch.float; fp16, float16, half, "
         "torch.float16, torch.half; bf16, bfloat16, bfloat, torch.bfloat16";
}

llvm::Error Err(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// Parses `text`, failing on syntax errors and on a key repeated within one
// object (nlohmann would silently keep the last one).
llvm::Expected<json> ParseStrict(const std::string &text, const std::string &origin) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::object_start)
      open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty())
      open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json root = json::parse(text, on_event, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return Err(origin + ": not valid JSON");
  if (!duplicate.empty())
    return Err(origin + ": key \"" + duplicate + "\" appears twice in one object");
  return root;
}

struct Normalized {
  std::string error; // non-empty: the value has the wrong type
  json value;        // comparable form
};

// kiln's injection_policy (docs/build-config.md): DeepSpeed maps a module
// class to the names of its row-parallel linears; kiln's ONNX graphs have no
// module classes, so the key is a label for messages and the value lists
// node-name globs. A bare list is the same with no label. The comparable
// form is the object, so {"x": [..]} and [..] with the same globs differ
// only when their labels do.
Normalized NormalizePolicy(const json &v) {
  if (v.is_null())
    return {"", v};
  const std::string shape = "must be null, a list of node-name globs, or an object mapping a "
                            "layer label to such a list (e.g. {\"LlamaDecoderLayer\": "
                            "[\"*o_proj*\", \"*down_proj*\"]})";
  json object = v.is_array() ? json{{"*", v}} : v;
  if (!object.is_object() || object.empty())
    return {shape + ", got " + v.dump()};
  for (auto it = object.begin(); it != object.end(); ++it) {
    const json &list = it.value();
    // DeepSpeed writes a tuple, which JSON spells as a list; one name alone
    // is accepted too.
    json names = list.is_string() ? json::array({list}) : list;
    if (!names.is_array() || names.empty())
      return {shape + ", got " + v.dump()};
    for (const json &n : names)
      if (!n.is_string() || n.get<std::string>().empty())
        return {shape + "; \"" + it.key() + "\" has " + n.dump()};
    object[it.key()] = names;
  }
  return {"", object};
}

// Type-checks one value and puts it in the form used to compare settings, so
// "float32" and "fp32" do not count as a conflict.
Normalized Normalize(Kind kind, const json &v) {
  switch (kind) {
  case Kind::kDtype: {
    if (!v.is_string())
      return {"must be a string such as \"fp32\""};
    std::string c = CanonicalDtype(v.get<std::string>());
    if (c.empty())
      return {"unknown dtype \"" + v.get<std::string>() + "\" (accepted: " + DtypeSpellings() +
              ")"};
    return {"", c};
  }
  case Kind::kPositiveInt:
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      return {"must be a positive integer, got " + v.dump()};
    return {"", v};
  case Kind::kBool:
    if (!v.is_boolean())
      return {"must be true or false, got " + v.dump()};
    return {"", v};
  case Kind::kString:
    if (!v.is_string() || v.get<std::string>().empty())
      return {"must be a non-empty string, got " + v.dump()};
    return {"", v};
  case Kind::kPolicy:
    return NormalizePolicy(v);
  case Kind::kNullOnly:
  case Kind::kObject:
    return {"", v};
  }
  return {"", v};
}

Kind KindOf(const std::string &canonical) {
  for (const KeyInfo &k : kTopKeys)
    if (canonical == k.canonical)
      return k.kind;
  for (const KeyInfo &k : kTensorParallelKeys)
    if (canonical == k.canonical)
      return k.kind;
  for (const KeyInfo &k : kQuantKeys)
    if (canonical == k.canonical)
      return k.kind;
  return Kind::kNullOnly;
}

} // namespace

llvm::Error BuildConfigParser::AddJsonText(const std::string &text, const std::string &origin) {
  auto root = ParseStrict(text, origin);
  if (!root)
    return root.takeError();
  if (!root->is_object())
    return Err(origin + ": the build config must be a JSON object");
  for (auto it = root->begin(); it != root->end(); ++it)
    if (llvm::Error e = AddKey(it.key(), it.value().dump(), origin))
      return e;
  return llvm::Error::success();
}

llvm::Error BuildConfigParser::AddJsonFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Err(path + ": cannot open the build config");
  std::stringstream ss;
  ss << in.rdbuf();
  return AddJsonText(ss.str(), path);
}

llvm::Error BuildConfigParser::AddFlag(const std::string &key, const std::string &json_value,
                                       const std::string &flag) {
  // A flag value that is not JSON is a bare word such as `--dtype fp16`.
  json v = json::parse(json_value, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded())
    v = json_value;
  size_t dot = key.find('.');
  const KeyInfo *top = FindTop(key.substr(0, dot));
  if (!top)
    return Err(flag + ": unknown config key \"" + key + "\"");
  const KeyInfo *info = top;
  if (dot != std::string::npos) {
    info = FindSub(top->canonical, key.substr(dot + 1));
    if (!info)
      return Err(flag + ": unknown config key \"" + key + "\"");
  }
  if (info->kind == Kind::kObject)
    return Err(flag + ": config key \"" + key + "\" is an object");
  settings_.push_back({info->canonical, flag, "command line", v.dump()});
  return llvm::Error::success();
}

// Records one JSON key (recursing into the two object-valued keys) without
// judging its value yet: conflicts must be seen before "not supported".
llvm::Error BuildConfigParser::AddKey(const std::string &key, const std::string &value_json,
                                      const std::string &origin) {
  json value = json::parse(value_json);
  const KeyInfo *info = FindTop(key);
  if (!info)
    return Err(origin + ": unknown key \"" + key + "\" (known keys: " + KnownNames(kTopKeys) + ")");
  if (info->replacement)
    warnings_.push_back("\"" + key + "\" in " + origin + " is deprecated; use \"" +
                        info->replacement + "\"");
  if (info->kind != Kind::kObject) {
    settings_.push_back({info->canonical, key, origin, value_json});
    return llvm::Error::success();
  }
  if (!value.is_object())
    return Err(origin + ": \"" + key + "\" must be an object, got " + value.dump());
  std::string parent = info->canonical;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const KeyInfo *sub = FindSub(parent, it.key());
    if (!sub)
      return Err(origin + ": unknown key \"" + key + "." + it.key() + "\" (known keys of \"" + key +
                 "\": " + SubNames(parent) + ")");
    settings_.push_back({sub->canonical, key + "." + it.key(), origin, it.value().dump()});
  }
  // DeepSpeed's QuantizationConfig.enabled defaults to true, so a quant
  // object that does not say otherwise asks for quantization.
  if (parent == "quant" && !value.contains("enabled"))
    settings_.push_back({"quant.enabled", key + " (enabled defaults to true)", origin, "true"});
  return llvm::Error::success();
}

namespace {

std::string Where(const std::string &spelled, const std::string &origin) {
  if (!spelled.empty() && spelled[0] == '-')
    return spelled;
  return "\"" + spelled + "\" in " + origin;
}

/// Why a null-only DeepSpeed field cannot take a value in kiln.
std::string NullOnlyReason(const std::string &canonical) {
  if (canonical == "checkpoint")
    return "kiln reads weights from the ONNX model and its data";
  if (canonical == "save_mp_checkpoint_path")
    return "kiln does not write resharded checkpoints";
  if (canonical.rfind("tensor_parallel.", 0) == 0)
    return "kiln's partition pass chooses the grain and the groups itself";
  // quant.activation/weight/qkv
  return "kiln's int8 is weight-only, symmetric, one scale per output column; it takes no "
         "other settings";
}

std::string NotSupported(const std::string &field, const std::string &why) {
  return field + ": not supported yet (" + why + ")";
}

} // namespace

llvm::Expected<BuildConfig> BuildConfigParser::Finish() const {
  // 1. Types, and the comparable value of every setting.
  struct Resolved {
    json value;
    std::string spelled, origin;
  };
  std::map<std::string, Resolved> resolved;
  for (const Setting &s : settings_) {
    Kind kind = KindOf(s.canonical);
    Normalized n = Normalize(kind, json::parse(s.value));
    if (!n.error.empty())
      return Err(Where(s.spelled, s.origin) + ": " + n.error);
    // 2. The same setting twice must agree, whatever the names were.
    auto [it, inserted] = resolved.emplace(s.canonical, Resolved{n.value, s.spelled, s.origin});
    if (!inserted && it->second.value != n.value)
      return Err("conflicting values for " + s.canonical + ": " +
                 Where(it->second.spelled, it->second.origin) + " sets " + it->second.value.dump() +
                 " but " + Where(s.spelled, s.origin) + " sets " + n.value.dump());
  }

  // 3. Features kiln does not have are refused by the name the user wrote.
  BuildConfig config;
  config.warnings = warnings_;
  bool tp_enabled = true;
  for (const auto &[canonical, r] : resolved) {
    const std::string &name = r.spelled;
    const json &v = r.value;
    if (KindOf(canonical) == Kind::kNullOnly) {
      if (!v.is_null())
        return Err(NotSupported(name, NullOnlyReason(canonical)));
    } else if (canonical == "dtype") {
      config.dtype = v.get<std::string>();
      config.dtype_explicit = true;
      if (config.dtype == "int8")
        return Err(NotSupported(name, "\"int8\" as a dtype; int8 weights are \"quant\": "
                                      "{\"enabled\": true} (kiln build --int8) with dtype fp32"));
    } else if (canonical == "tensor_parallel.tp_size") {
      config.tp_size = v.get<int64_t>();
    } else if (canonical == "tensor_parallel.enabled") {
      tp_enabled = v.get<bool>();
    } else if (canonical == "injection_policy") {
      if (!v.is_null())
        for (auto it = v.begin(); it != v.end(); ++it)
          for (const json &glob : it.value())
            config.row_parallel.push_back({it.key(), glob.get<std::string>()});
    } else if (canonical == "replace_with_kernel_inject") {
      config.kernel_inject = v.get<bool>();
      config.require_injection = config.kernel_inject;
    } else if (canonical == "ragged_batching") {
      config.ragged = v.get<bool>();
    } else if (canonical == "target") {
      config.target = v.get<std::string>(); // kiln build checks the name
    } else if (canonical == "max_out_tokens") {
      config.max_out_tokens = v.get<int64_t>();
    } else if (canonical == "min_out_tokens") {
      config.min_out_tokens = v.get<int64_t>();
      if (config.min_out_tokens != 1)
        return Err(NotSupported(name, "the plan has no minimum generation length"));
    } else if (canonical == "triangular_masking") {
      config.triangular_masking = v.get<bool>();
      if (!config.triangular_masking)
        return Err(NotSupported(name, "false; the attention mask is the model graph's own"));
    } else if (canonical == "training_mp_size") {
      config.training_mp_size = v.get<int64_t>();
      if (config.training_mp_size != 1)
        return Err(NotSupported(name, "merging model-parallel training checkpoints: kiln reads "
                                      "one unpartitioned ONNX model and splits it itself "
                                      "(tensor_parallel.tp_size); kiln reshard re-splits a plan"));
    } else if (canonical == "enable_cuda_graph") {
      config.enable_cuda_graph = v.get<bool>();
      if (config.enable_cuda_graph)
        return Err(NotSupported(name, "true; CUDA graph capture is a runtime decision"));
    } else if (canonical == "quant.enabled") {
      config.quant_enabled = v.get<bool>();
    } else if (canonical == "quant.activations") {
      config.quant_activations = v.get<std::string>();
      if (config.quant_activations != "f32" && config.quant_activations != "int8")
        return Err(name + ": \"" + config.quant_activations +
                   "\" is not one of \"f32\" (weight-only int8) and \"int8\" (activations "
                   "quantized per row too)");
    }
  }
  // DeepSpeed's enabled: false turns tensor parallelism off; with tp_size
  // above 1 the two ask for opposite things.
  if (!tp_enabled && config.tp_size > 1)
    return Err("tensor_parallel.enabled is false but tp_size is " + std::to_string(config.tp_size) +
               "; set one of them");
  // int8 weights sit beside f32 activations; the int8 kernels are the CPU
  // backend's, with no half or tensor-parallel variant yet.
  if (config.quant_enabled && config.dtype_explicit && config.dtype != "fp32")
    return Err("quant.enabled: not supported yet with dtype " + config.dtype +
               " (int8 weights run with f32 activations; leave dtype unset or fp32)");
  if (!config.quant_enabled && config.quant_activations != "f32")
    return Err("quant.activations is \"" + config.quant_activations +
               "\" but quant.enabled is false; int8 activations need int8 weights");
  if (config.quant_enabled && config.tp_size > 1)
    return Err("quant.enabled: not supported yet with tensor_parallel.tp_size " +
               std::to_string(config.tp_size) + " (int8 plans are one-rank plans)");
  if (!config.row_parallel.empty() && config.tp_size == 1)
    config.warnings.push_back("injection_policy names row-parallel linears, but tp_size is 1: "
                              "nothing is partitioned");
  return config;
}

std::string BuildConfig::ToJson() const {
  json j = json::object();
  // Unset, the plan keeps the model's own types: say so rather than "fp32".
  j["dtype"] = dtype_explicit ? dtype : "model";
  j["tensor_parallel"] = {{"tp_size", tp_size}};
  // null: injected where the patterns match; true: every layer must be.
  j["replace_with_kernel_inject"] = !kernel_inject      ? json(false)
                                    : require_injection ? json(true)
                                                        : json(nullptr);
  j["max_out_tokens"] = max_out_tokens ? json(*max_out_tokens) : json(nullptr);
  j["min_out_tokens"] = min_out_tokens;
  j["triangular_masking"] = triangular_masking;
  j["training_mp_size"] = training_mp_size;
  j["enable_cuda_graph"] = enable_cuda_graph;
  j["quant"] = {{"enabled", quant_enabled}};
  if (quant_enabled)
    j["quant"]["activations"] = quant_activations;
  j["ragged_batching"] = ragged;
  j["target"] = target;
  j["checkpoint"] = nullptr;
  j["save_mp_checkpoint_path"] = nullptr;
  json policy = nullptr;
  for (const RowParallelGlob &g : row_parallel)
    policy[g.label].push_back(g.glob);
  j["injection_policy"] = policy;
  return j.dump(2);
}

} // namespace kiln::compiler

namespace kiln::compiler {

llvm::Expected<BuildConfig> ReshardConfig(const std::string &storedJson, int64_t tpSize) {
  json j = json::parse(storedJson, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the plan's build config is not a JSON object");
  // ToJson spells "unset" as null and the model's own dtype as "model";
  // as config input both mean leaving the key out.
  for (auto it = j.begin(); it != j.end();)
    it = it.value().is_null() ? j.erase(it) : std::next(it);
  if (j.contains("dtype") && j["dtype"] == "model")
    j.erase("dtype");
  // An int8 plan holds the int8 weights only, not the f32 ones its source
  // graph names.
  if (j.contains("quant") && j["quant"].is_object() && j["quant"].value("enabled", false))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "an int8 plan (quant.enabled) cannot be resharded yet: it "
                                   "holds int8 weights, not the f32 ones its source graph "
                                   "names; build it again from the ONNX model");
  j["tensor_parallel"] = {{"tp_size", tpSize}};
  BuildConfigParser parser;
  if (llvm::Error e = parser.AddJsonText(j.dump(), "the plan's build config"))
    return std::move(e);
  return parser.Finish();
}

} // namespace kiln::compiler
