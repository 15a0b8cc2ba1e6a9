//===- BuildDriver.cpp - the phases of kiln build -------------------------===//
//
// The driver sits beside passes/, not above it (compiler/CMakeLists.txt has
// the rules): it adds kiln's passes and pipelines to its pass managers by
// their registered names, so the tools that call runBuild register them
// first (kiln::registerKilnPasses and registerKilnPipelines).

#include "compiler/driver/BuildDriver.h"

#include "compiler/driver/PhaseSupport.h"

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnOps.h"
#include "compiler/importer/OnnxImporter.h"
#include "compiler/plan/ModelFiles.h"
#include "compiler/plan/PlanAttrs.h"
#include "compiler/plan/PlanWriter.h"
#include "compiler/plan/Provenance.h"
#include "compiler/plan/SourceGraph.h"
#include "compiler/plan/TpPlanWriter.h"
#include "compiler/support/BuildError.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include "nlohmann/json.hpp"

#include <chrono>
#include <map>

namespace kiln::compiler {
namespace {

constexpr Phase kPhases[] = {Phase::Import,    Phase::Cleanup,  Phase::Inject, Phase::Ragged,
                             Phase::Partition, Phase::Quantize, Phase::Plan};
constexpr int kNumPhases = sizeof(kPhases) / sizeof(kPhases[0]);
constexpr const char *kReshardSkip =
    "skipped: resharding (the plan's source graph is injected and ragged already)";

class Build {
public:
  Build(const BuildRequest &request, llvm::raw_ostream &out, llvm::raw_ostream &log)
      : request(request), out(out), log(log), diags(context, log) {
    // Errors name the ONNX node; a dump of the op in generic MLIR form would
    // only bury that for a user who never wrote MLIR.
    context.printOpOnDiagnostic(false);
  }
  llvm::Error run();

private:
  /// Runs one phase and reports it; returns its one-line summary.
  llvm::Expected<std::string> runPhase(Phase phase);
  llvm::Expected<std::string> writePlanFile();
  llvm::Expected<std::string> runInject();
  llvm::Expected<std::string> runRagged();
  llvm::Error refuseRoutingOps();
  /// With `snapshot`, stores the module's source graph between the float
  /// conversion and the upcast of half outputs.
  llvm::Expected<std::string> runConvertFloatType(mlir::ModuleOp m, bool convert,
                                                  bool snapshot = false);
  /// kiln reshard's import: the plan's source graph with its weights.
  llvm::Expected<std::string> loadSourceGraph();
  /// Stores the unpartitioned module (Plan.source_graph) for kiln reshard.
  llvm::Error snapshotSourceGraph(mlir::ModuleOp m);
  llvm::Expected<std::string> runQuantize();
  llvm::Expected<std::string> runPartition();
  llvm::Expected<std::string> writeTpPlanFile();
  /// The module, or with tp_size > 1 each rank's (after the partition phase).
  std::vector<mlir::ModuleOp> modules();
  plan::PlanExtras planExtras();
  /// Starts hashing the model's files (once import named them).
  void startHashing();
  plan::ProvenanceDesc provenance();
  /// The inject phase's report, stored in the plan.
  std::string injectionReport;

  const BuildRequest &request;
  llvm::raw_ostream &out;
  llvm::raw_ostream &log;
  mlir::MLIRContext context;
  DiagnosticPrinter diags;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// tp_size > 1: one clone of `module` per rank, partitioned.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> rankModules;
  std::string partitionReport;
  /// Plan.source_graph: MLIR bytecode of the module partition starts from.
  std::string sourceGraph;
  plan::ModelInfo modelInfo;
  plan::SourceHasher hasher;
};

llvm::Expected<std::string> Build::runPhase(Phase phase) {
  const BuildConfig &config = request.config;
  switch (phase) {
  case Phase::Import: {
    if (request.reshard)
      return loadSourceGraph();
    int before = diags.errorCount();
    auto imported = importOnnxModel(context, request.modelPath, /*error=*/nullptr);
    if (mlir::failed(imported)) {
      if (diags.errorCount() > before)
        return inputError("cannot import '" + request.modelPath + "' (see above)");
      return internalError("import of '" + request.modelPath + "' failed without a diagnostic");
    }
    module = std::move(*imported);
    if (!request.compileTo)
      startHashing();
    if (config.dtype_explicit)
      if (llvm::Error e = checkDtype(*module, config))
        return std::move(e);
    OpCounts c = countOps(*module);
    auto opset = (*module)->getAttrOfType<mlir::IntegerAttr>("kiln.opset");
    return llvm::formatv("{0} ops, {1} constants, opset {2}", c.ops, c.constants,
                         opset ? opset.getInt() : 0)
        .str();
  }
  case Phase::Cleanup: {
    if (request.reshard)
      return std::string(kReshardSkip);
    size_t before = countOps(*module).ops;
    if (llvm::Error e = runPasses(context, *module, diags, phase, [](mlir::PassManager &pm) {
          return addRegistered(pm, "kiln-cleanup");
        }))
      return std::move(e);
    return llvm::formatv("{0} ops (from {1})", countOps(*module).ops, before).str();
  }
  case Phase::Inject:
    if (request.reshard)
      return std::string(kReshardSkip);
    return runInject();
  case Phase::Ragged:
    if (request.reshard)
      return std::string(kReshardSkip);
    return runRagged();
  case Phase::Partition:
    return runPartition();
  case Phase::Quantize:
    return runQuantize();
  case Phase::Plan: {
    if (llvm::Error e = refuseRoutingOps())
      return std::move(e);
    // kiln-plan: final types, outputs, host tensors, the memory plan; per
    // rank program in a tensor-parallel build.
    for (mlir::ModuleOp m : modules())
      if (llvm::Error e = runPasses(context, m, diags, phase, [](mlir::PassManager &pm) {
            return addRegistered(pm, "kiln-plan");
          }))
        return std::move(e);
    if (request.compileTo == Phase::Plan)
      return std::string("memory planned");
    return rankModules.empty() ? writePlanFile() : writeTpPlanFile();
  }
  }
  return internalError("unknown phase");
}

/// Loads each pass plugin and finds the pass named after it (plugins
/// register their passes with the global registry; kiln runs that one).
llvm::Expected<std::vector<const mlir::PassInfo *>>
loadPassPlugins(const std::vector<std::string> &paths) {
  std::vector<const mlir::PassInfo *> passes;
  for (const std::string &path : paths) {
    auto plugin = mlir::PassPlugin::load(path);
    if (!plugin)
      return inputError("--pass-plugin " + path + ": " + llvm::toString(plugin.takeError()));
    plugin->registerPassRegistryCallbacks();
    const mlir::PassInfo *info = mlir::PassInfo::lookup(plugin->getPluginName());
    if (!info)
      return inputError("--pass-plugin " + path + ": the plugin '" + plugin->getPluginName().str() +
                        "' registered no pass of that name (kiln runs the pass named after "
                        "the plugin)");
    passes.push_back(info);
  }
  return passes;
}

/// Moves kiln-inject's report off the module: the text into `text`, and
/// the lines of layers left unfused as the result.
std::vector<std::string> takeInjectionReport(mlir::ModuleOp m, std::string &text) {
  if (auto report = m->getAttrOfType<mlir::StringAttr>("kiln.injection_report"))
    text = report.str();
  std::vector<std::string> missing;
  if (auto list = m->getAttrOfType<mlir::ArrayAttr>("kiln.injection_missing"))
    for (mlir::Attribute a : list)
      missing.push_back(mlir::cast<mlir::StringAttr>(a).str());
  m->removeAttr("kiln.injection_report");
  m->removeAttr("kiln.injection_missing");
  return missing;
}

/// The mixture-of-experts routing ops (TopK, OneHot, NonZero,
/// ScatterElements) exist only to be fused into `moe`: NonZero's shape
/// depends on values, which a plan's shapes cannot express. A plan that
/// still holds one is refused, with injection's reason for that block.
llvm::Error Build::refuseRoutingOps() {
  mlir::Operation *left = nullptr;
  for (mlir::ModuleOp m : modules())
    m.walk([&](mlir::Operation *op) {
      if (!left && mlir::isa<TopKOp, OneHotOp, NonZeroOp, ScatterElementsOp>(op))
        left = op;
    });
  if (!left)
    return llvm::Error::success();
  std::string why;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(injectionReport).split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (line.contains("MoE not fused"))
      why += "\n  " + line.str();
  if (why.empty())
    why = request.config.kernel_inject
              ? "\n  (no mixture-of-experts block was recognized around it)"
              : "\n  kernel injection is off (replace_with_kernel_inject: false)";
  return inputError(llvm::formatv("the model routes tokens to experts ('{0}', {1}), which kiln "
                                  "runs only fused into a `moe` op, and that block was not "
                                  "fused:{2}",
                                  plan::nodeName(left->getLoc()),
                                  left->getName().stripDialect(), why)
                        .str());
}

llvm::Expected<std::string> Build::runInject() {
  const BuildConfig &config = request.config;
  if (!config.kernel_inject && (!request.patternsFile.empty() || !request.passPlugins.empty()))
    return inputError("--patterns and --pass-plugin run in the inject phase, which "
                      "replace_with_kernel_inject: false (--no-inject) turns off");
  if (!config.kernel_inject) {
    // Say so explicitly: an empty report would look like injection ran and
    // matched nothing.
    injectionReport = "kernel injection was turned off (replace_with_kernel_inject: false): no "
                      "ops were fused; every op runs as the primitive kernel of its ONNX op\n";
    return std::string("skipped: replace_with_kernel_inject is false");
  }
  auto pluginPasses = loadPassPlugins(request.passPlugins);
  if (!pluginPasses)
    return pluginPasses.takeError();
  if (llvm::Error e = runPasses(context, *module, diags, Phase::Inject, [&](mlir::PassManager &pm) {
        if (!request.patternsFile.empty()) {
          auto file = quoteOption("--patterns", request.patternsFile);
          if (!file)
            return file.takeError();
          if (llvm::Error e = addRegistered(pm, "kiln-user-patterns", "patterns-file=" + *file))
            return e;
        }
        for (const mlir::PassInfo *info : *pluginPasses) {
          std::string error;
          if (mlir::failed(info->addToPipeline(pm, "", [&](const llvm::Twine &msg) {
                error = msg.str();
                return mlir::failure();
              })))
            return inputError("--pass-plugin: " + error);
        }
        return addRegistered(pm, "kiln-inject");
      }))
    return std::move(e);
  mlir::ModuleOp m = *module;
  if (auto n = m->getAttrOfType<mlir::IntegerAttr>("kiln.user_pattern_rewrites")) {
    log << "user patterns (" << request.patternsFile << "): " << n.getInt() << " rewrites\n";
    m->removeAttr("kiln.user_pattern_rewrites");
  }
  std::vector<std::string> missing = takeInjectionReport(m, injectionReport);
  if (request.printReport)
    log << injectionReport;
  if (!missing.empty()) {
    if (config.require_injection) {
      std::string msg = "kernel injection is required (--require-injection or "
                        "replace_with_kernel_inject: true), but not every layer was injected:";
      for (const std::string &line : missing)
        msg += "\n  " + line;
      return inputError(msg);
    }
    if (!request.printReport)
      for (const std::string &line : missing)
        log << "warning: " << line << "\n";
  }
  llvm::StringRef first = llvm::StringRef(injectionReport).split('\n').first;
  return first.str();
}

/// kiln-ragged, when the config allows it. A decoder it cannot rewrite keeps
/// its dense interface; the warning says why, because the engine then runs
/// that plan's requests one at a time.
llvm::Expected<std::string> Build::runRagged() {
  const BuildConfig &config = request.config;
  if (!config.ragged)
    return std::string("skipped: ragged_batching is false (the plan keeps the model's dense "
                       "interface)");
  if (!config.kernel_inject)
    return std::string("skipped: the ragged interface needs injected attention");
  // The window and which layers use it come from config.json; the pass
  // confirms each layer against its mask (Passes.td, kiln-ragged).
  // A window that covers the context never hides a key.
  std::string options;
  const int64_t window = modelInfo.slidingWindow, span = modelInfo.contextLength;
  if (window > 0 && (span <= 0 || window < span)) {
    options = "sliding-window=" + std::to_string(modelInfo.slidingWindow);
    if (!modelInfo.slidingLayers.empty()) {
      options += " sliding-layers=";
      for (size_t i = 0; i < modelInfo.slidingLayers.size(); ++i)
        options += (i ? "," : "") + std::string(modelInfo.slidingLayers[i] ? "1" : "0");
    }
  }
  if (llvm::Error e = runPasses(context, *module, diags, Phase::Ragged, [&](mlir::PassManager &pm) {
        if (llvm::Error err = addRegistered(pm, "kiln-ragged", options))
          return err;
        return addRegistered(pm, "kiln-token-major-attention");
      }))
    return std::move(e);
  mlir::ModuleOp m = *module;
  if (auto why = m->getAttrOfType<mlir::StringAttr>("kiln.ragged_skipped")) {
    std::string reason = why.str();
    m->removeAttr("kiln.ragged_skipped");
    // Only a decoder with a KV cache could have been batched.
    bool decoder = false;
    if (auto main = m.lookupSymbol<mlir::func::FuncOp>("main"))
      for (unsigned i = 0; i < main.getNumArguments(); ++i)
        if (auto name = main.getArgAttrOfType<mlir::StringAttr>(i, "kiln.name"))
          decoder |= name.getValue().starts_with("past_key_values.");
    if (decoder)
      log << "warning: the plan keeps the model's dense interface, so the engine runs its "
             "requests one at a time: "
          << reason << "\n";
    return "skipped: " + reason;
  }
  m->removeAttr("kiln.interface");
  int layers = 0, windowed = 0;
  m.walk([&](PagedAttentionOp op) {
    ++layers;
    windowed += op.getWindow().has_value();
  });
  std::string summary = llvm::formatv("{0} attention layers over a paged KV cache", layers).str();
  if (windowed > 0)
    summary += llvm::formatv(", {0} of them with a sliding window of {1}", windowed, window).str();
  return summary;
}

std::vector<mlir::ModuleOp> Build::modules() {
  if (rankModules.empty())
    return {*module};
  std::vector<mlir::ModuleOp> out;
  for (auto &m : rankModules)
    out.push_back(*m);
  return out;
}

/// kiln-partition, once per rank on a clone of the module (tp_size > 1).
/// The float conversion runs first, on the unsplit module, so the weights
/// the ranks' shards are sliced from already have the plan's type.
llvm::Expected<std::string> Build::runPartition() {
  const BuildConfig &config = request.config;
  if (config.tp_size == 1)
    return std::string("skipped: tensor_parallel.tp_size is 1");
  // A resharded source graph has the plan's types already.
  if (config.dtype_explicit && config.dtype != "fp32" && !request.reshard) {
    auto converted = runConvertFloatType(*module, /*convert=*/true);
    if (!converted)
      return converted.takeError();
  }
  if (llvm::Error e = snapshotSourceGraph(*module))
    return std::move(e);
  std::string options = llvm::formatv("tp-size={0}", config.tp_size).str();
  if (request.requirePartition)
    options += " require-all=true";
  std::string globs;
  for (const BuildConfig::RowParallelGlob &g : config.row_parallel) {
    // MLIR's list option splits at commas and stops at spaces.
    if (g.glob.find_first_of(", \t\"'{}") != std::string::npos)
      return inputError("injection_policy glob '" + g.glob +
                        "': commas, spaces, quotes and braces are not allowed");
    globs += (globs.empty() ? "" : ",") + g.glob;
  }
  if (!globs.empty())
    options += " row-parallel=" + globs;
  for (int64_t r = 0; r < config.tp_size; ++r) {
    mlir::OwningOpRef<mlir::ModuleOp> clone(mlir::cast<mlir::ModuleOp>((*module)->clone()));
    const std::string rankOptions = options + " rank=" + std::to_string(r);
    if (llvm::Error e =
            runPasses(context, *clone, diags, Phase::Partition, [&](mlir::PassManager &pm) {
              return addRegistered(pm, "kiln-partition", rankOptions);
            }))
      return std::move(e);
    if (auto report = (*clone)->getAttrOfType<mlir::StringAttr>("kiln.partition_report")) {
      if (r == 0)
        partitionReport = report.str();
      (*clone)->removeAttr("kiln.partition_report");
    }
    rankModules.push_back(std::move(clone));
  }
  // The ranks' modules are the build from here on.
  module = mlir::OwningOpRef<mlir::ModuleOp>();
  size_t split = 0, whole = 0;
  if (auto parsed = llvm::json::parse(partitionReport)) {
    if (auto *root = parsed->getAsObject()) {
      if (auto *layers = root->getArray("layers"))
        split = layers->size();
      if (auto *replicated = root->getArray("replicated")) {
        whole = replicated->size();
        for (const llvm::json::Value &v : *replicated)
          if (auto *o = v.getAsObject())
            log << "warning: tensor parallelism: the " << o->getString("what").value_or("layer")
                << " '" << o->getString("node").value_or("?")
                << "' stays whole on every rank: " << o->getString("reason").value_or("") << "\n";
      }
    }
  } else {
    llvm::consumeError(parsed.takeError());
  }
  if (request.printReport)
    log << "partition report: " << partitionReport << "\n";
  return llvm::formatv("{0} ranks: {1} layers split, {2} kept whole", config.tp_size, split, whole)
      .str();
}

/// The config's fp16/bf16: kiln-convert-float-type after the ragged
/// rewrite, so injection and the ragged pass match the f32 graph they were
/// written for, and the paged KV cache inputs they add are converted too.
/// A tensor-parallel build converted before partitioning, so its rank
/// modules only get the upcast of half logits.
llvm::Expected<std::string> Build::runQuantize() {
  const BuildConfig &config = request.config;
  // A resharded one-rank source graph was converted by its first build; it
  // gets that build's upcast of outputs.
  const bool convert = config.dtype_explicit && config.dtype != "fp32" && rankModules.empty();
  std::string summary;
  for (mlir::ModuleOp m : modules()) {
    auto s = runConvertFloatType(m, convert, /*snapshot=*/rankModules.empty());
    if (!s)
      return s.takeError();
    summary = *s;
  }
  if (!rankModules.empty() && config.dtype_explicit && config.dtype != "fp32")
    summary = "converted to " + config.dtype + " before partitioning; " + summary;
  if (!config.quant_enabled) // (kiln reshard refuses int8 plans)
    return summary;
  // int8 after the snapshot of the source graph, which keeps the f32
  // weights the int8 ones were made from.
  std::string report;
  int rewritten = 0;
  for (mlir::ModuleOp m : modules()) {
    if (llvm::Error e = runPasses(context, m, diags, Phase::Quantize, [&](mlir::PassManager &pm) {
          return addRegistered(pm, "kiln-quantize-int8", "activations=" + config.quant_activations);
        }))
      return std::move(e);
    if (auto r = m->getAttrOfType<mlir::StringAttr>("kiln.quantize_report"))
      report = r.str();
    m->removeAttr("kiln.quantize_report");
    m.walk([&](mlir::Operation *op) { rewritten += mlir::isa<LinearQ8Op, GatedMlpQ8Op>(op); });
  }
  // Only injected projections are quantized: a --no-inject build (or a
  // model whose products did not fuse) would silently stay f32.
  if (rewritten == 0)
    log << "warning: quant.enabled, but no linear or gated_mlp with a constant f32 weight was "
           "found, so no weight is int8 (int8 applies to injected projections; was the build "
           "--no-inject?)\n";
  return report + "; weights " + weightTypes(*modules().begin());
}

llvm::Expected<std::string> Build::runConvertFloatType(mlir::ModuleOp m, bool convert,
                                                       bool snapshot) {
  const BuildConfig &config = request.config;
  // Half logits, of a model that was half already, are cast to f32 as the
  // runtime reads them.
  // Only a decoder's: any other graph keeps the output types its ONNX file
  // declares, which `kiln exec` (and the ONNX node tests) compare against.
  const bool halfLogits = hasHalfLogits(m), upcast = halfLogits || convert;
  const std::string to = config.dtype == "bf16" ? "to=bf16" : "to=f16";
  if (convert && !request.reshard)
    if (llvm::Error e = runPasses(context, m, diags, Phase::Quantize, [&](mlir::PassManager &pm) {
          return addRegistered(pm, "kiln-convert-float-type", to);
        }))
      return std::move(e);
  if (snapshot)
    if (llvm::Error e = snapshotSourceGraph(m))
      return std::move(e);
  if (!upcast)
    return "skipped: dtype is " +
           std::string(config.dtype_explicit ? config.dtype : "the model's") +
           " (int8: quant.enabled is false)";
  if (llvm::Error e = runPasses(context, m, diags, Phase::Quantize, [&](mlir::PassManager &pm) {
        return addRegistered(pm, "kiln-upcast-outputs");
      }))
    return std::move(e);
  std::string what = convert ? "converted to " + config.dtype : "dtype is the model's";
  if (halfLogits)
    what += "; half outputs (logits) cast to f32";
  return what + "; weights " + weightTypes(m);
}

llvm::Error Build::snapshotSourceGraph(mlir::ModuleOp m) {
  if (request.reshard || request.compileTo)
    return llvm::Error::success();
  // Unique weight names: the plan's tensors and the source graph's weights
  // meet by name in kiln reshard.
  plan::nameWeights(m);
  auto bytes = plan::writeSourceGraph(m);
  if (!bytes)
    return bytes.takeError();
  sourceGraph = std::move(*bytes);
  return llvm::Error::success();
}

llvm::Expected<std::string> Build::loadSourceGraph() {
  const ReshardSource &from = *request.reshard;
  if (from.extras.sourceGraph.empty())
    return inputError(from.description +
                      " has no source graph (it was built by a kiln before plan format 1.5): "
                      "build it again from the ONNX file with the tp_size you want");
  auto loaded = plan::readSourceGraph(context, from.extras.sourceGraph, from.weights);
  if (!loaded)
    return loaded.takeError();
  module = std::move(*loaded);
  sourceGraph = from.extras.sourceGraph;
  OpCounts c = countOps(*module);
  return llvm::formatv("source graph of {0}: {1} ops, {2} constants", from.description, c.ops,
                       c.constants)
      .str();
}

void Build::startHashing() {
  std::vector<std::string> external;
  if (auto files = (*module)->getAttrOfType<mlir::ArrayAttr>("kiln.external_data"))
    for (mlir::Attribute f : files)
      external.push_back(mlir::cast<mlir::StringAttr>(f).str());
  (*module)->removeAttr("kiln.external_data");
  hasher.start(request.modelPath, external);
}

/// The build's inputs besides the model: everything that shapes the plan.
std::string buildInputsJson(const BuildRequest &request) {
  nlohmann::json j = nlohmann::json::object();
  j["config"] = nlohmann::json::parse(request.config.ToJson());
  j["tokenizer"] = request.tokenizerPath.empty() ? nlohmann::json(nullptr)
                                                 : nlohmann::json(request.tokenizerPath);
  j["patterns"] =
      request.patternsFile.empty() ? nlohmann::json(nullptr) : nlohmann::json(request.patternsFile);
  j["pass_plugins"] = request.passPlugins;
  return j.dump(2);
}

/// The provenance with placeholder file hashes (see completeProvenance).
plan::ProvenanceDesc Build::provenance() {
  plan::ProvenanceDesc p;
  p.present = true;
  p.kilnVersion = request.compilerVersion;
  p.sourceCommit = request.sourceCommit.empty() ? "unknown" : request.sourceCommit;
  p.buildHost = plan::buildHostName();
  p.buildTime = plan::utcTimestamp();
  p.buildConfigJson = buildInputsJson(request);
  hasher.placeholders(p.model, p.externalData);
  return p;
}

/// The provenance of a resharded plan: the first build's (its model, its
/// time), with the new config and where it was resharded from.
plan::ProvenanceDesc reshardProvenance(const BuildRequest &request) {
  const ReshardSource &from = *request.reshard;
  plan::ProvenanceDesc p = from.extras.provenance;
  p.present = true;
  nlohmann::json inputs = nlohmann::json::parse(p.buildConfigJson, nullptr, false);
  if (!inputs.is_object())
    inputs = nlohmann::json::object();
  inputs["config"] = nlohmann::json::parse(request.config.ToJson());
  inputs["resharded_from"] = {{"plan", from.description},
                              {"tp_size", from.fromTpSize},
                              {"build_id", from.fromBuildId},
                              {"kiln_version", request.compilerVersion},
                              {"source_commit", request.sourceCommit},
                              {"time", plan::utcTimestamp()}};
  p.buildConfigJson = inputs.dump(2);
  return p;
}

plan::PlanExtras Build::planExtras() {
  if (request.reshard) {
    plan::PlanExtras extras = request.reshard->extras;
    extras.compilerVersion = request.compilerVersion;
    extras.buildConfigJson = request.config.ToJson();
    extras.provenance = reshardProvenance(request);
    extras.sourceGraph = sourceGraph;
    extras.checkBeforeCommit = request.checkPlan;
    return extras;
  }
  plan::PlanExtras extras;
  extras.provenance = provenance();
  // The hashes run while the weights are written; the plan waits for them
  // only before its FlatBuffer is final.
  extras.completeProvenance = [this](plan::ProvenanceDesc &p) {
    return hasher.wait(p.model, p.externalData);
  };
  extras.compilerVersion = request.compilerVersion;
  extras.model = modelInfo;
  mlir::ModuleOp m = modules().front();
  if (auto opset = m->getAttrOfType<mlir::IntegerAttr>("kiln.opset"))
    extras.opset = static_cast<int32_t>(opset.getInt());
  std::string producer;
  if (auto name = m->getAttrOfType<mlir::StringAttr>("kiln.producer_name"))
    producer = name.str();
  if (auto version = m->getAttrOfType<mlir::StringAttr>("kiln.producer_version"))
    producer += (producer.empty() ? "" : " ") + version.str();
  extras.producer = producer;
  extras.buildConfigJson = request.config.ToJson();
  extras.injectionReport = injectionReport;
  extras.maxOutTokens = request.config.max_out_tokens;
  extras.checkBeforeCommit = request.checkPlan;
  extras.sourceGraph = sourceGraph;
  return extras;
}

llvm::Expected<std::string> Build::writePlanFile() {
  plan::PlanExtras extras = planExtras();
  auto summary = plan::writePlan(*module, extras, request.outputPath);
  if (!summary)
    return summary.takeError();
  const plan::MemoryPlanDesc &mp = summary->memory;
  std::string arena = "dynamic";
  if (mp.unsharedStaticBytes >= 0) {
    uint64_t shared = 0;
    for (int64_t b : mp.slotStaticBytes)
      shared += static_cast<uint64_t>(b);
    arena = megabytes(shared) + " (" + megabytes(mp.unsharedStaticBytes) + " without reuse)";
  }
  // The ragged interface has runtime-owned paged caches instead of KV pairs.
  const std::string kv =
      summary->ragged.present
          ? llvm::formatv("ragged interface, {0} paged KV layers", summary->ragged.kvCache.size())
                .str()
          : llvm::formatv("{0} KV pairs", summary->decoder.kv.size()).str();
  return llvm::formatv("{0}: {1} ops, {2} weights ({3}), {4} arena slots, arena {5}, {6}, "
                       "file {7}",
                       request.outputPath, summary->numOps, summary->numWeights,
                       megabytes(summary->weightBytes), mp.numSlots, arena, kv,
                       megabytes(summary->fileBytes))
      .str();
}

/// A tensor-parallel plan: rank programs, a shared and per-rank sections.
llvm::Expected<std::string> Build::writeTpPlanFile() {
  const BuildConfig &config = request.config;
  plan::PlanExtras extras = planExtras();
  // The runtime's check (request.checkPlan) loads every rank's program.
  plan::TensorParallelDesc tp;
  tp.tpSize = static_cast<int32_t>(config.tp_size);
  // One id for every file of this build (kiln reshard --split copies it):
  // the config, kiln's source and the time, hashed.
  const std::string seed =
      extras.buildConfigJson + "\n" + extras.provenance.sourceCommit + "\n" +
      extras.provenance.buildTime + "\n" + request.modelPath + "\n" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  tp.buildId = llvm::formatv("{0:x-16}", llvm::xxh3_64bits(seed)).str();
  tp.partitionReport = partitionReport;
  extras.tensorParallel = std::move(tp);
  auto summary = plan::writeTpPlan(modules(), extras, request.outputPath, request.splitRanks);
  if (!summary)
    return summary.takeError();
  if (request.printReport)
    log << "partition report (with bytes):\n" << summary->partitionReport << "\n";
  std::string ranks;
  for (uint64_t b : summary->rankBytes)
    ranks += (ranks.empty() ? "" : " + ") + megabytes(b);
  const std::string where = request.splitRanks
                                ? plan::rankFilePath(request.outputPath, 0) + " ... " +
                                      plan::rankFilePath(request.outputPath, config.tp_size - 1)
                                : request.outputPath;
  return llvm::formatv("{0}: tp_size {1}, build {2}, rank 0: {3} ops; weights: shared {4}, ranks "
                       "{5}; {7} {6}",
                       where, config.tp_size, extras.tensorParallel->buildId, summary->plan.numOps,
                       megabytes(summary->sharedBytes), ranks, megabytes(summary->plan.fileBytes),
                       request.splitRanks ? "files" : "file")
      .str();
}

llvm::Error Build::run() {
  for (const std::string &w : request.config.warnings)
    log << "warning: " << w << "\n";
  // Side files are read first so a broken tokenizer.json fails in
  // milliseconds, not after a long import. A reshard has them in its plan.
  if (request.reshard) {
    modelInfo = request.reshard->extras.model;
  } else if (!request.compileTo) {
    std::string dir = std::string(llvm::sys::path::parent_path(request.modelPath));
    auto info = plan::readModelFiles(dir.empty() ? "." : dir, request.tokenizerPath,
                                     request.allowUnsupportedTemplate);
    if (!info)
      return info.takeError();
    modelInfo = std::move(*info);
    if (!request.quiet)
      for (const std::string &f : modelInfo.filesUsed)
        log << "using " << f << "\n";
    for (const std::string &w : modelInfo.warnings)
      log << "warning: " << w << "\n";
  }
  for (int i = 0; i < kNumPhases; ++i) {
    Phase phase = kPhases[i];
    auto start = std::chrono::steady_clock::now();
    auto summary = runPhase(phase);
    if (!summary)
      return summary.takeError();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!request.quiet)
      log << llvm::formatv("[{0}/{1}] {2,-9} {3,7:F2} s  {4}\n", i + 1, kNumPhases,
                           phaseName(phase), seconds, *summary);
    if (request.compileTo == phase) {
      mlir::OpPrintingFlags flags;
      flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
      std::vector<mlir::ModuleOp> all = modules();
      for (size_t r = 0; r < all.size(); ++r) {
        if (all.size() > 1)
          out << "// rank " << r << " of " << all.size() << "\n";
        all[r].print(out, flags);
        out << "\n";
      }
      return llvm::Error::success();
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::StringRef phaseName(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "import";
  case Phase::Cleanup:
    return "cleanup";
  case Phase::Inject:
    return "inject";
  case Phase::Ragged:
    return "ragged";
  case Phase::Partition:
    return "partition";
  case Phase::Quantize:
    return "quantize";
  case Phase::Plan:
    return "plan";
  }
  return "?";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  for (Phase p : kPhases)
    if (phaseName(p) == name)
      return p;
  return std::nullopt;
}

std::string phaseNames() {
  std::string s;
  for (Phase p : kPhases)
    s += (s.empty() ? "" : ", ") + phaseName(p).str();
  return s;
}

llvm::Error runBuild(const BuildRequest &request, llvm::raw_ostream &out, llvm::raw_ostream &log) {
  return Build(request, out, log).run();
}

} // namespace kiln::compiler
