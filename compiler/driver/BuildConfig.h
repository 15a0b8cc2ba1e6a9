// The `kiln build` configuration: a JSON object that accepts DeepSpeed
// inference config names (and their aliases), plus the command-line flags that
// mirror some of them. Every key is documented in docs/build-config.md.
//
// The rules, all enforced here so no caller can forget one:
//   - unknown keys and mistyped values are errors;
//   - one setting given twice with different values (a name and its alias, a
//     deprecated name and its replacement, the file and a flag) is an error
//     that names both places;
//   - a field whose feature kiln does not have yet is refused with
//     "<field>: not supported yet" instead of being parsed and ignored.
#pragma once

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::compiler {

// The effective configuration after validation. Only settings kiln acts on
// have fields; refused ones never get this far.
struct BuildConfig {
  std::string dtype = "fp32"; // canonical spelling
  // False when no dtype was given: the plan then keeps the model's own
  // tensor types (an f64 or f16 model builds as it is).
  bool dtype_explicit = false;
  // tensor_parallel.tp_size (aliases tp.tp_size, mp_size): the ranks the
  // partition phase splits the model across.
  int64_t tp_size = 1;
  // injection_policy: ONNX node-name globs of the linears that are
  // row-parallel (docs/tensor-parallel.md); `label` is the policy's key.
  struct RowParallelGlob {
    std::string label, glob;
  };
  std::vector<RowParallelGlob> row_parallel;
  // Kernel injection: on by default. `replace_with_kernel_inject: true` (or
  // `kiln build --require-injection`) also makes any layer left unfused an
  // error; `false` builds the generic graph of primitive ops.
  bool kernel_inject = true;
  bool require_injection = false;
  // kiln's own key `ragged_batching` (default true): rewrite an injected
  // decoder to the serving engine's ragged, paged-KV interface (kiln-ragged).
  // False keeps the model's dense past/present interface.
  bool ragged = true;
  // kiln's own key `target` (default "cpu", the reference every plan must
  // run on): the runtime backend whose kernel table `kiln build` checks the
  // finished plan against. The compiler does not know backend names; the
  // tool, which links the runtime, refuses an unknown one.
  std::string target = "cpu";
  // Default cap on generated tokens per request (GenerationDefaults.
  // max_new_tokens). Unset: the plan writer derives it from the model, so
  // kiln never truncates output at an arbitrary 1024.
  std::optional<int64_t> max_out_tokens;
  int64_t min_out_tokens = 1;
  bool triangular_masking = true;
  int64_t training_mp_size = 1;
  bool enable_cuda_graph = false;
  bool quant_enabled = false;
  // With quant_enabled: "f32" (weight-only int8) or "int8" (activation rows
  // quantized too; kiln's own key quant.activations).
  std::string quant_activations = "f32";
  // Accepted but deprecated names (e.g. mp_size), for the caller to print.
  std::vector<std::string> warnings;

  // The effective configuration as JSON with canonical key names, for the
  // plan's build_config_json and for `--compile-to` output.
  std::string ToJson() const;
};

// Collects settings from any number of sources (a config file, flags), then
// validates them together, because conflicts are only visible across sources.
class BuildConfigParser {
public:
  // Adds the keys of a JSON object. `origin` names the source in messages
  // (usually the file name). Syntax errors, duplicate keys within one object
  // and non-object roots fail here; everything else is checked by Finish().
  llvm::Error AddJsonText(const std::string &text, const std::string &origin);
  llvm::Error AddJsonFile(const std::string &path);

  // Adds one setting from a command-line flag. `key` is a config name or
  // alias (e.g. "dtype", "max_tokens", "tensor_parallel.tp_size"); `flag` is
  // how the user spelled it ("--dtype"). `json_value` is JSON text, so
  // `--max-tokens 64` passes "64" and `--dtype fp16` passes "\"fp16\"".
  llvm::Error AddFlag(const std::string &key, const std::string &json_value,
                      const std::string &flag);

  // Type-checks, resolves aliases, detects conflicts and refuses unsupported
  // features. The first problem found is the error.
  llvm::Expected<BuildConfig> Finish() const;

private:
  struct Setting {
    std::string canonical; // e.g. "tensor_parallel.tp_size"
    std::string spelled;   // the name as the user wrote it, e.g. "tp.tp_size"
    std::string origin;    // e.g. "build.json" or "command line"
    std::string value;     // JSON text of the value
  };
  llvm::Error AddKey(const std::string &key, const std::string &value_json,
                     const std::string &origin);
  std::vector<Setting> settings_;
  std::vector<std::string> warnings_;
};

// The config of a plan resharded by `kiln reshard`: `storedJson` (the
// input plan's build_config_json, an effective config) with
// tensor_parallel.tp_size set to `tpSize`, validated like any other.
llvm::Expected<BuildConfig> ReshardConfig(const std::string &storedJson, int64_t tpSize);

} // namespace kiln::compiler
