//===- PlanSerializer.cpp - plan structs to FlatBuffer bytes -------------===//

#include "compiler/plan/PlanSerializer.h"

#include "compiler/plan/SourceGraph.h"

#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <climits>

namespace kiln::plan {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::Tensor> buildTensor(FlatBufferBuilder &b, const TensorDesc &t) {
  std::vector<Offset<fb::Dim>> dims;
  for (const DimDesc &d : t.shape)
    dims.push_back(fb::CreateDim(b, d.value, d.symbol.empty() ? 0 : b.CreateString(d.symbol)));
  auto name = b.CreateString(t.name);
  auto shape = b.CreateVector(dims);
  Offset<fb::ShardSpec> shard = 0;
  if (!t.shard.fullName.empty())
    shard = fb::CreateShardSpec(b, b.CreateString(t.shard.fullName), t.shard.axis, t.shard.offset,
                                t.shard.fullDim);
  fb::TensorBuilder tb(b);
  tb.add_name(name);
  tb.add_dtype(static_cast<fb::DType>(t.dtype));
  tb.add_shape(shape);
  tb.add_kind(static_cast<fb::TensorKind>(t.kind));
  tb.add_section(t.section);
  tb.add_offset(t.offset);
  tb.add_size(t.size);
  tb.add_slot(t.slot);
  tb.add_host(t.host);
  if (!t.shard.fullName.empty())
    tb.add_shard(shard);
  return tb.Finish();
}

Offset<fb::Op> buildOp(FlatBufferBuilder &b, const OpDesc &op) {
  std::vector<Offset<fb::Attr>> attrs;
  for (const AttrDesc &a : op.attrs) {
    attrs.push_back(fb::CreateAttr(b, b.CreateString(a.name), static_cast<fb::AttrKind>(a.kind),
                                   a.i, a.f, a.kind == AttrKind::String ? b.CreateString(a.s) : 0,
                                   a.kind == AttrKind::Ints ? b.CreateVector(a.ints) : 0,
                                   a.kind == AttrKind::Floats ? b.CreateVector(a.floats) : 0));
  }
  // Keyed lookup (LookupByKey) needs the vector sorted by name; this sorts
  // by the same key the runtime uses.
  auto attrVec = b.CreateVectorOfSortedTables(&attrs);
  return fb::CreateOp(b, b.CreateString(op.type), b.CreateString(op.name),
                      b.CreateVector(op.inputs), b.CreateVector(op.outputs), attrVec);
}

/// Absent unless the model came with a sentence-transformers pooling config.
Offset<fb::Pooling> buildPooling(FlatBufferBuilder &b, const ModelInfo &m) {
  if (m.poolingMode.empty())
    return 0;
  return fb::CreatePooling(b, b.CreateString(m.poolingMode), m.poolingNormalize);
}

Offset<fb::ModelMetadata> buildMetadata(FlatBufferBuilder &b, const PlanExtras &x) {
  const ModelInfo &m = x.model;
  return fb::CreateModelMetadata(b, b.CreateString(m.architecture), b.CreateString(m.modelName),
                                 m.vocabSize, m.contextLength, m.numLayers, m.hiddenSize,
                                 m.bosTokenId, b.CreateVector(m.eosTokenIds), m.padTokenId, x.opset,
                                 b.CreateString(x.producer));
}

Offset<fb::DecoderIO> buildDecoder(FlatBufferBuilder &b, const DecoderDesc &d) {
  std::vector<Offset<fb::KVPair>> kv;
  for (auto [past, present] : d.kv)
    kv.push_back(fb::CreateKVPair(b, past, present));
  return fb::CreateDecoderIO(b, d.inputIds, d.attentionMask, d.positionIds, d.logits,
                             b.CreateVector(kv));
}

Offset<fb::RaggedIO> buildRagged(FlatBufferBuilder &b, const RaggedDesc &r) {
  if (!r.present)
    return 0;
  std::vector<Offset<fb::KVCache>> cache;
  for (auto [key, value] : r.kvCache)
    cache.push_back(fb::CreateKVCache(b, key, value));
  return fb::CreateRaggedIO(b, r.inputIds, r.positionIds, r.kvSlots, r.queryStart, r.contextLens,
                            r.blockTables, r.logitsIndices, r.logits, b.CreateVector(cache));
}

Offset<fb::SourceFile> buildSourceFile(FlatBufferBuilder &b, const SourceFileDesc &f) {
  return fb::CreateSourceFile(b, b.CreateString(f.path), f.size, b.CreateString(f.sha256));
}

Offset<fb::Provenance> buildProvenance(FlatBufferBuilder &b, const ProvenanceDesc &p) {
  if (!p.present)
    return 0;
  std::vector<Offset<fb::SourceFile>> external;
  for (const SourceFileDesc &f : p.externalData)
    external.push_back(buildSourceFile(b, f));
  return fb::CreateProvenance(b, b.CreateString(p.kilnVersion), b.CreateString(p.sourceCommit),
                              b.CreateString(p.buildHost), b.CreateString(p.buildTime),
                              b.CreateString(p.buildConfigJson), buildSourceFile(b, p.model),
                              b.CreateVector(external));
}

} // namespace

int32_t effectiveMaxNewTokens(const PlanExtras &extras) {
  int64_t n = 128; // schema default
  if (extras.maxOutTokens)
    n = *extras.maxOutTokens;
  else if (extras.model.maxNewTokens)
    n = *extras.model.maxNewTokens;
  else if (extras.model.contextLength > 0)
    n = extras.model.contextLength;
  return static_cast<int32_t>(std::min<int64_t>(n, INT32_MAX));
}

std::vector<uint8_t> serializePlan(const GraphDesc &graph, const DecoderDesc &decoder,
                                   const RaggedDesc &ragged, const PlanExtras &extras,
                                   const std::vector<SectionPlacement> &placements) {
  FlatBufferBuilder b(1 << 16);
  std::vector<Offset<fb::Tensor>> tensors;
  for (const TensorDesc &t : graph.tensors)
    tensors.push_back(buildTensor(b, t));
  std::vector<Offset<fb::Op>> ops;
  for (const OpDesc &op : graph.ops)
    ops.push_back(buildOp(b, op));

  // Section 0 is shared by every rank; a tensor-parallel plan's section
  // i > 0 belongs to rank i - 1, a rank file's section 1 to its rank.
  const int32_t onlyRank = extras.tensorParallel ? extras.tensorParallel->onlyRank : -1;
  std::vector<Offset<fb::Section>> sections;
  for (size_t i = 0; i < placements.size(); ++i) {
    const int32_t rank = i == 0 ? -1 : onlyRank >= 0 ? onlyRank : static_cast<int32_t>(i) - 1;
    sections.push_back(fb::CreateSection(
        b, b.CreateString(i == 0 ? std::string("shared") : "rank" + std::to_string(rank)), rank,
        placements[i].offset, placements[i].size, placements[i].checksum));
  }
  Offset<fb::TensorParallel> tp = 0;
  if (extras.tensorParallel) {
    const TensorParallelDesc &t = *extras.tensorParallel;
    std::vector<Offset<fb::RankProgram>> programs;
    for (size_t r = 0; r < t.programs.size(); ++r) {
      b.ForceVectorAlignment(t.programs[r].size(), sizeof(uint8_t), 8);
      const int32_t rank = t.onlyRank >= 0 ? t.onlyRank : static_cast<int32_t>(r);
      programs.push_back(fb::CreateRankProgram(b, rank, b.CreateVector(t.programs[r])));
    }
    tp = fb::CreateTensorParallel(b, t.tpSize, b.CreateString(t.buildId),
                                  b.CreateString(t.partitionReport), b.CreateVector(programs));
  }

  // A tensor-parallel plan's graph is in its rank programs: the outer
  // Plan has no tensors, ops, inputs, outputs, memory plan or decoder.
  const bool outer = extras.tensorParallel.has_value();
  const MemoryPlanDesc &mp = graph.memory;
  auto memory =
      outer ? 0
            : fb::CreateMemoryPlan(b, mp.numSlots, static_cast<int32_t>(kTensorAlign),
                                   b.CreateVector(mp.slotStaticBytes), mp.unsharedStaticBytes);
  Offset<fb::SourceGraph> sourceGraph = 0;
  if (!extras.sourceGraph.empty()) {
    b.ForceVectorAlignment(extras.sourceGraph.size(), sizeof(uint8_t), 8);
    auto bytes = b.CreateVector(reinterpret_cast<const uint8_t *>(extras.sourceGraph.data()),
                                extras.sourceGraph.size());
    sourceGraph = fb::CreateSourceGraph(b, b.CreateString(kSourceGraphFormat),
                                        b.CreateString(kSourceGraphMlirVersion), bytes);
  }
  const ModelInfo &m = extras.model;
  auto generation = fb::CreateGenerationDefaults(b, effectiveMaxNewTokens(extras), m.temperature,
                                                 m.topK, m.topP, m.repetitionPenalty);
  auto plan = fb::CreatePlan(
      b, kPlanFormatMajor, kPlanFormatMinor, b.CreateString(extras.compilerVersion),
      buildMetadata(b, extras), b.CreateString(m.tokenizerJson), b.CreateString(m.chatTemplate),
      generation, b.CreateString(extras.buildConfigJson), b.CreateString(extras.injectionReport),
      outer ? 0 : b.CreateVector(tensors), outer ? 0 : b.CreateVector(ops),
      outer ? 0 : b.CreateVector(graph.inputs), outer ? 0 : b.CreateVector(graph.outputs), memory,
      b.CreateVector(sections), outer ? 0 : buildDecoder(b, decoder), buildRagged(b, ragged),
      buildPooling(b, m), buildProvenance(b, extras.provenance), tp, sourceGraph);
  fb::FinishPlanBuffer(b, plan);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

} // namespace kiln::plan
