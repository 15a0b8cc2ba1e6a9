//===- TpPlanWriter.cpp - write a tensor-parallel .plan file --------------===//

#include "compiler/plan/TpPlanWriter.h"

#include "compiler/plan/DecoderIO.h"
#include "compiler/plan/GraphCollector.h"
#include "compiler/plan/PlanSerializer.h"
#include "compiler/plan/WeightBytes.h"
#include "compiler/support/BuildError.h"
#include "compiler/support/SourcePages.h"
#include "plan_file.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <map>

namespace kiln::plan {
namespace {

/// One rank's collected graph, with its weights placed: replicated ones in
/// the shared section (role 0), shards in the rank's own (role 1).
struct RankGraph {
  CollectedGraph g;
  DecoderDesc decoder;
  RaggedDesc ragged;
  std::vector<const WeightSource *> shards; // in offset order
  uint64_t bytes = 0;                       // of its own section
};

/// The shared section: each replicated value once, whichever ranks use it.
struct Shared {
  std::vector<std::pair<mlir::ElementsAttr, uint64_t>> values; // (value, offset)
  std::map<const void *, uint64_t> offsetOf;
  uint64_t bytes = 0;
};

llvm::Error place(RankGraph &rank, Shared &shared) {
  for (const WeightSource &w : rank.g.weights) {
    TensorDesc &t = rank.g.graph.tensors[w.tensor];
    if (w.shardSource) {
      t.section = 1;
      t.offset = AlignUp(rank.bytes, kTensorAlign);
      rank.bytes = t.offset + t.size;
      rank.shards.push_back(&w);
      continue;
    }
    auto [it, inserted] = shared.offsetOf.try_emplace(w.value.getAsOpaquePointer(), 0);
    if (inserted) {
      it->second = AlignUp(shared.bytes, kTensorAlign);
      shared.bytes = it->second + t.size;
      shared.values.push_back({w.value, it->second});
    }
    t.section = 0;
    t.offset = it->second;
  }
  return llvm::Error::success();
}

const std::string kWriteFailed = "write of the plan's weights failed (disk full?)";

SectionSource sharedSection(const Shared &s) {
  return {s.bytes, [&s](SectionWriter &out) -> std::string {
            for (const auto &[value, offset] : s.values) {
              if (!out.WriteZeros(offset - out.written()))
                return kWriteFailed;
              bool written = true;
              llvm::Error e = streamWeightBytes(value, [&](const void *data, uint64_t size) {
                return written = out.Write(data, size);
              });
              if (e) {
                std::string why = llvm::toString(std::move(e));
                return written ? "shared weight: " + why : kWriteFailed;
              }
            }
            return "";
          }};
}

SectionSource rankSection(const RankGraph &rank) {
  return {rank.bytes, [&rank](SectionWriter &out) -> std::string {
            for (const WeightSource *w : rank.shards) {
              const TensorDesc &t = rank.g.graph.tensors[w->tensor];
              if (!out.WriteZeros(t.offset - out.written()))
                return kWriteFailed;
              const ShardDesc &s = t.shard;
              const int64_t count = t.shape[s.axis].value / s.groups;
              bool written = true;
              auto sink = [&](const void *data, uint64_t size) {
                return written = out.Write(data, size);
              };
              // A small dense slice was cut by the pass already (its value
              // lives in the context); a resource slice has no data of its
              // own and is cut from the unsplit weight now.
              llvm::Error e = mlir::isa<mlir::DenseElementsAttr>(w->value)
                                  ? streamWeightBytes(w->value, sink)
                                  : streamWeightSlice(w->shardSource, s.axis, s.offset, count,
                                                      s.fullDim, s.groups, sink);
              if (e) {
                std::string why = llvm::toString(std::move(e));
                return written ? "weight '" + t.name + "': " + why : kWriteFailed;
              }
            }
            return "";
          }};
}

/// The pass's report with the bytes each rank maps.
std::string withBytes(const std::string &report, const Shared &shared,
                      const std::vector<RankGraph> &ranks) {
  auto parsed = llvm::json::parse(report);
  llvm::json::Object root;
  if (parsed && parsed->getAsObject())
    root = std::move(*parsed->getAsObject());
  else
    llvm::consumeError(parsed.takeError());
  llvm::json::Array perRank, mapped;
  uint64_t all = shared.bytes;
  for (const RankGraph &r : ranks)
    all += r.bytes;
  for (const RankGraph &r : ranks) {
    perRank.push_back(static_cast<int64_t>(r.bytes));
    mapped.push_back(static_cast<int64_t>(shared.bytes + r.bytes));
  }
  root["bytes"] = llvm::json::Object{{"shared", static_cast<int64_t>(shared.bytes)},
                                     {"per_rank", std::move(perRank)},
                                     {"mapped_per_rank", std::move(mapped)},
                                     {"all_sections", static_cast<int64_t>(all)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream(os, 2).value(llvm::json::Value(std::move(root)));
  return text;
}

} // namespace

std::string rankFilePath(const std::string &path, int64_t rank) {
  llvm::StringRef p(path);
  llvm::StringRef ext = llvm::sys::path::extension(p);
  if (ext.empty() || ext == ".")
    return path + ".rank" + std::to_string(rank) + ".plan";
  return (p.drop_back(ext.size()) + ".rank" + llvm::Twine(rank) + ext).str();
}

llvm::Expected<TpPlanSummary> writeTpPlan(const std::vector<mlir::ModuleOp> &modules,
                                          const PlanExtras &extras, const std::string &path,
                                          bool split) {
  if (!extras.tensorParallel || modules.size() < 2)
    return compiler::internalError("writeTpPlan needs tensorParallel extras and two ranks or more");
  std::vector<RankGraph> ranks(modules.size());
  Shared shared;
  for (size_t r = 0; r < modules.size(); ++r) {
    auto func = findGraphFunction(modules[r]);
    if (!func)
      return func.takeError();
    auto graph = collectGraph(*func);
    if (!graph)
      return graph.takeError();
    ranks[r].g = std::move(*graph);
    auto decoder = detectDecoderIO(ranks[r].g.graph);
    if (!decoder)
      return decoder.takeError();
    auto ragged = detectRaggedIO(ranks[r].g.graph);
    if (!ragged)
      return ragged.takeError();
    ranks[r].decoder = *decoder;
    ranks[r].ragged = *ragged;
    if (llvm::Error e = place(ranks[r], shared))
      return std::move(e);
  }
  compiler::releaseAllSourcePages();

  PlanExtras x = extras;
  TensorParallelDesc &tp = *x.tensorParallel;
  tp.partitionReport = withBytes(tp.partitionReport, shared, ranks);
  // A rank program is only the graph: the model-wide fields stay outside.
  PlanExtras programExtras;
  programExtras.compilerVersion = extras.compilerVersion;
  programExtras.model.architecture = extras.model.architecture;
  programExtras.model.modelName = extras.model.modelName;
  programExtras.model.vocabSize = extras.model.vocabSize;
  programExtras.model.contextLength = extras.model.contextLength;
  programExtras.model.numLayers = extras.model.numLayers;
  programExtras.model.hiddenSize = extras.model.hiddenSize;
  programExtras.model.bosTokenId = extras.model.bosTokenId;
  programExtras.model.eosTokenIds = extras.model.eosTokenIds;
  programExtras.model.padTokenId = extras.model.padTokenId;
  programExtras.opset = extras.opset;
  programExtras.producer = extras.producer;
  std::vector<std::vector<uint8_t>> programs;
  for (const RankGraph &r : ranks)
    programs.push_back(serializePlan(r.g.graph, r.decoder, r.ragged, programExtras, {}));

  auto completeProvenance = [&x]() -> std::string {
    if (llvm::Error e = x.completeProvenance(x.provenance))
      return llvm::toString(std::move(e));
    return "";
  };
  std::optional<llvm::Error> checkError;
  auto checkBeforeCommit = [&x, &checkError](const std::string &tmp) -> std::string {
    if (llvm::Error e = x.checkBeforeCommit(tmp)) {
      checkError.emplace(std::move(e));
      return "the plan check failed";
    }
    return "";
  };
  // The outer plan has no graph of its own.
  GraphDesc none;
  DecoderDesc noDecoder;
  RaggedDesc noRagged;
  // One file: every rank (onlyRank -1), or one rank's file.
  auto writeFile = [&](const std::string &file, int32_t onlyRank) -> llvm::Error {
    tp.onlyRank = onlyRank;
    tp.programs.clear();
    std::vector<SectionSource> sections = {sharedSection(shared)};
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (onlyRank >= 0 && static_cast<int32_t>(r) != onlyRank)
        continue;
      tp.programs.push_back(programs[r]);
      sections.push_back(rankSection(ranks[r]));
    }
    std::string error = StreamPlanFile(
        file,
        [&](const std::vector<SectionPlacement> &placements) {
          return serializePlan(none, noDecoder, noRagged, x, placements);
        },
        sections, x.completeProvenance ? std::function<std::string()>(completeProvenance) : nullptr,
        x.checkBeforeCommit ? std::function<std::string(const std::string &)>(checkBeforeCommit)
                            : nullptr);
    if (checkError)
      return std::move(*checkError);
    if (!error.empty())
      return compiler::inputError(error);
    return llvm::Error::success();
  };
  uint64_t fileBytes = 0;
  if (!split) {
    if (llvm::Error e = writeFile(path, -1))
      return std::move(e);
    if (llvm::sys::fs::file_size(path, fileBytes))
      fileBytes = 0;
  } else {
    for (size_t r = 0; r < ranks.size(); ++r) {
      const std::string file = rankFilePath(path, static_cast<int64_t>(r));
      if (llvm::Error e = writeFile(file, static_cast<int32_t>(r))) {
        // All or none: the files written before this one go too.
        for (size_t k = 0; k < r; ++k)
          llvm::sys::fs::remove(rankFilePath(path, static_cast<int64_t>(k)));
        return std::move(e);
      }
      uint64_t size = 0;
      if (!llvm::sys::fs::file_size(file, size))
        fileBytes += size;
    }
  }

  TpPlanSummary s;
  const CollectedGraph &g0 = ranks[0].g;
  s.plan.numTensors = g0.graph.tensors.size();
  s.plan.numOps = g0.graph.ops.size();
  for (const TensorDesc &t : g0.graph.tensors)
    s.plan.numWeights += t.kind == TensorKind::Weight;
  s.plan.memory = g0.graph.memory;
  s.plan.decoder = ranks[0].decoder;
  s.plan.ragged = ranks[0].ragged;
  s.sharedBytes = shared.bytes;
  s.plan.weightBytes = shared.bytes;
  for (const RankGraph &r : ranks) {
    s.rankBytes.push_back(r.bytes);
    s.plan.weightBytes += r.bytes;
  }
  s.partitionReport = tp.partitionReport;
  s.plan.fileBytes = fileBytes;
  return s;
}

} // namespace kiln::plan
