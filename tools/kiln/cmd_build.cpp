// kiln build: compile an ONNX model into an engine plan. A thin main over
// kiln::compiler::runBuild (compiler/driver/BuildDriver.h); the rules for the
// build config are in compiler/driver/BuildConfig.h and docs/build-config.md.
#include "cli.h"
#include "cli_args.h"

#include "build_common.h"
#include "compiler/driver/BuildConfig.h"
#include "compiler/driver/BuildDriver.h"
#include "compiler/support/BuildError.h"
#include "kiln_source_commit.h"

#include "kiln/plan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln build model.onnx -o model.plan [options]\n"
    "\n"
    "Compiles an ONNX model (with its external data) into one engine plan: the\n"
    "graph, memory plan, weights, and what sits next to the model: config.json,\n"
    "generation_config.json, tokenizer.json and tokenizer_config.json (chat template).\n"
    "Phases: import, cleanup, inject, ragged, partition, quantize, plan; each prints\n"
    "its time on stderr. A failed build leaves no partial plan behind.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH    where to write the plan (required unless --compile-to)\n"
    "  --config PATH        build config JSON; DeepSpeed inference config names are\n"
    "                       accepted (see docs/build-config.md)\n"
    "  --compile-to PHASE   stop after PHASE and print its IR to stdout instead of\n"
    "                       writing a plan\n"
    "  --tokenizer PATH     tokenizer.json, or a directory holding it (and\n"
    "                       tokenizer_config.json, chat_template.jinja); default:\n"
    "                       next to the model\n"
    "  --allow-unsupported-template\n"
    "                       store a chat template that uses Jinja features outside\n"
    "                       kiln's subset (docs/chat-templates.md) with a warning,\n"
    "                       instead of failing the build; chat requests then fail\n"
    "  -q, --quiet          no progress lines (errors and warnings still print)\n"
    "  --report             print the injection report: per transformer layer, whether\n"
    "                       attention, norms and MLP were fused, and why not; with\n"
    "                       tp_size > 1 also the partition report (what was split per\n"
    "                       layer and how, bytes per rank)\n"
    "  --require-partition  with tp_size > 1, fail the build naming any layer the\n"
    "                       partition pass cannot split (default: keep it whole on\n"
    "                       every rank and warn)\n"
    "  --patterns FILE      apply user rewrite patterns (an MLIR file of pdl.pattern\n"
    "                       ops, e.g. from mlir-pdll-19 X.pdll -x=mlir) before injection\n"
    "  --pass-plugin LIB    load a pass plugin (shared library) and run the pass named\n"
    "                       after the plugin before injection; repeatable\n"
    "                       (docs/injection.md has worked examples of both)\n"
    "\n"
    "config flags (must agree with --config when both set the same key):\n"
    "  --require-injection  replace_with_kernel_inject: true; fail the build, naming\n"
    "                       the layer and the reason, when any layer's attention, norm\n"
    "                       or MLP was not fused\n"
    "  --no-inject          replace_with_kernel_inject: false; build the generic graph\n"
    "                       of primitive ops\n"
    "  --no-ragged          ragged_batching: false; keep the model's own past/present KV\n"
    "                       interface instead of the engine's ragged batch over a paged\n"
    "                       KV cache (the engine then runs requests one at a time)\n"
    "  --dtype D            dtype: fp32, fp16 or bf16 (DeepSpeed's spellings: float16,\n"
    "                       half, torch.float16, bfloat16, torch.bfloat16, ...). fp16\n"
    "                       and bf16 round f32 weights to nearest even and compute and\n"
    "                       cache KV in that type; logits stay f32. Unset: the model's\n"
    "                       own types\n"
    "  --int8               quant: {\"enabled\": true}: store the weights of linear\n"
    "                       projections and gated MLPs as int8, one f32 scale per\n"
    "                       output column (weight-only; activations stay f32; CPU\n"
    "                       backend; docs/build-config.md#quant)\n"
    "  --int8-activations   --int8, and quant.activations: \"int8\": each product's\n"
    "                       activation rows are quantized too (per row, at run\n"
    "                       time) and multiplied int8 x int8 (VNNI where the CPU has\n"
    "                       it): faster prompts, less accurate than --int8\n"
    "  --target BACKEND     target: the backend the plan must run on (default cpu);\n"
    "                       the finished plan is checked against its kernels and\n"
    "                       refused, naming each op it lacks, before it replaces -o\n"
    "  --max-tokens N       max_out_tokens: default cap on generated tokens\n"
    "  --tp-size N          tensor_parallel.tp_size: split the model across N ranks\n"
    "                       (docs/tensor-parallel.md); kiln run --tp N runs it\n"
    "\n"
    "exit status: 0 built, 2 bad input (arguments, model, config), 1 internal error\n";

// Flags that set build config keys: flag -> config key.
const std::pair<const char *, const char *> kConfigFlags[] = {
    {"--dtype", "dtype"},
    {"--max-tokens", "max_out_tokens"},
    {"--tp-size", "tensor_parallel.tp_size"},
    {"--target", "target"},
};

int Error(const std::string &message, int code) {
  std::fprintf(stderr, "kiln build: error: %s\n", message.c_str());
  return code;
}

// The one value of an option that may be given once.
bool Single(const ParsedArgs &parsed, const std::string &name, std::string *out,
            std::string *error) {
  const std::vector<std::string> &all = parsed.All(name);
  if (all.size() > 1) {
    *error = name + " given " + std::to_string(all.size()) + " times";
    return false;
  }
  if (!all.empty())
    *out = all[0];
  return true;
}

} // namespace

int BuildMain(const std::vector<std::string> &args) {
  ParsedArgs parsed;
  std::set<std::string> value_options = {"--output",    "--config",   "--compile-to",
                                         "--tokenizer", "--patterns", "--pass-plugin"};
  for (const auto &[flag, key] : kConfigFlags)
    value_options.insert(flag);
  std::string err = ParseArgs(args, value_options,
                              {"--quiet", "--report", "--require-injection", "--no-inject",
                               "--no-ragged", "--int8", "--int8-activations",
                               "--allow-unsupported-template", "--require-partition"},
                              {{"-o", "--output"}, {"-q", "--quiet"}}, &parsed);
  if (!err.empty())
    return Usage("build", err, kUsage);
  if (parsed.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return Usage("build",
                 parsed.positional.empty()
                     ? "missing the model path"
                     : "expected one model path, got " + std::to_string(parsed.positional.size()),
                 kUsage);

  compiler::BuildRequest request;
  request.modelPath = parsed.positional[0];
  request.quiet = parsed.Has("--quiet");
  request.printReport = parsed.Has("--report");
  request.allowUnsupportedTemplate = parsed.Has("--allow-unsupported-template");
  request.requirePartition = parsed.Has("--require-partition");
  request.passPlugins = parsed.All("--pass-plugin");
  request.compilerVersion = KILN_VERSION;
  request.sourceCommit = KILN_SOURCE_COMMIT;
  std::string configPath, compileTo;
  if (!Single(parsed, "--output", &request.outputPath, &err) ||
      !Single(parsed, "--config", &configPath, &err) ||
      !Single(parsed, "--compile-to", &compileTo, &err) ||
      !Single(parsed, "--tokenizer", &request.tokenizerPath, &err) ||
      !Single(parsed, "--patterns", &request.patternsFile, &err))
    return Usage("build", err, kUsage);

  if (!compileTo.empty()) {
    request.compileTo = compiler::parsePhase(compileTo);
    if (!request.compileTo)
      return Usage("build",
                   "unknown phase '" + compileTo + "' (phases: " + compiler::phaseNames() + ")",
                   kUsage);
    if (!request.outputPath.empty())
      return Usage("build", "--compile-to prints IR and writes no plan; drop -o", kUsage);
  } else if (request.outputPath.empty()) {
    return Usage("build", "missing -o PATH (where to write the plan)", kUsage);
  }
  if (!llvm::sys::fs::is_regular_file(request.modelPath))
    return Error(request.modelPath + ": no such model file", kExitBadInput);
  if (!request.patternsFile.empty() && !llvm::sys::fs::is_regular_file(request.patternsFile))
    return Error("--patterns " + request.patternsFile + ": no such file", kExitBadInput);
  for (const std::string &plugin : request.passPlugins)
    if (!llvm::sys::fs::is_regular_file(plugin))
      return Error("--pass-plugin " + plugin + ": no such file", kExitBadInput);
  if (!request.outputPath.empty() &&
      llvm::sys::fs::equivalent(request.modelPath, request.outputPath))
    return Error("-o " + request.outputPath + " would overwrite the model", kExitBadInput);

  // The config file and the flags go through one parser, so a flag that
  // contradicts the file is caught like any other conflict.
  compiler::BuildConfigParser config;
  if (!configPath.empty())
    if (llvm::Error e = config.AddJsonFile(configPath))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  for (const auto &[flag, key] : kConfigFlags)
    for (const std::string &value : parsed.All(flag))
      if (llvm::Error e = config.AddFlag(key, value, flag))
        return Error(llvm::toString(std::move(e)), kExitBadInput);
  // Boolean flags for replace_with_kernel_inject go through the parser too,
  // so `--no-inject` with a config that sets true is a conflict.
  if (parsed.Has("--require-injection"))
    if (llvm::Error e = config.AddFlag("replace_with_kernel_inject", "true", "--require-injection"))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  if (parsed.Has("--no-inject"))
    if (llvm::Error e = config.AddFlag("replace_with_kernel_inject", "false", "--no-inject"))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  if (parsed.Has("--int8") || parsed.Has("--int8-activations"))
    if (llvm::Error e = config.AddFlag("quant.enabled", "true",
                                       parsed.Has("--int8") ? "--int8" : "--int8-activations"))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  if (parsed.Has("--int8-activations"))
    if (llvm::Error e = config.AddFlag("quant.activations", "int8", "--int8-activations"))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  if (parsed.Has("--no-ragged"))
    if (llvm::Error e = config.AddFlag("ragged_batching", "false", "--no-ragged"))
      return Error(llvm::toString(std::move(e)), kExitBadInput);
  auto effective = config.Finish();
  if (!effective)
    return Error(llvm::toString(effective.takeError()), kExitBadInput);
  request.config = std::move(*effective);
  return RunCompilerDriver(request, "build");
}

} // namespace kiln::cli
