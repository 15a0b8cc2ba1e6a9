//===- PlanReader.cpp - a written plan back as writer inputs --------------===//

#include "compiler/plan/PlanReader.h"

#include "compiler/support/BuildError.h"
#include "kiln_schema/plan_generated.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

namespace kiln::plan {
namespace {

using compiler::inputError;

std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

SourceFileDesc sourceFile(const fb::SourceFile *f) {
  SourceFileDesc d;
  if (!f)
    return d;
  d.path = str(f->path());
  d.size = f->size();
  d.sha256 = str(f->sha256());
  return d;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

PlanExtras extrasFromPlan(const fb::Plan &outer) {
  PlanExtras x;
  ModelInfo &m = x.model;
  if (const fb::ModelMetadata *md = outer.metadata()) {
    m.architecture = str(md->architecture());
    m.modelName = str(md->model_name());
    m.vocabSize = md->vocab_size();
    m.contextLength = md->context_length();
    m.numLayers = md->num_layers();
    m.hiddenSize = md->hidden_size();
    m.bosTokenId = md->bos_token_id();
    if (md->eos_token_ids())
      m.eosTokenIds.assign(md->eos_token_ids()->begin(), md->eos_token_ids()->end());
    m.padTokenId = md->pad_token_id();
    x.opset = md->opset();
    x.producer = str(md->producer());
  }
  if (const fb::GenerationDefaults *g = outer.generation()) {
    x.maxOutTokens = g->max_new_tokens();
    m.temperature = g->temperature();
    m.topK = g->top_k();
    m.topP = g->top_p();
    m.repetitionPenalty = g->repetition_penalty();
  }
  m.tokenizerJson = str(outer.tokenizer_json());
  m.chatTemplate = str(outer.chat_template());
  if (const fb::Pooling *p = outer.pooling()) {
    m.poolingMode = str(p->mode());
    m.poolingNormalize = p->normalize();
  }
  x.buildConfigJson = str(outer.build_config_json());
  x.injectionReport = str(outer.injection_report());
  if (const fb::Provenance *p = outer.provenance()) {
    ProvenanceDesc &d = x.provenance;
    d.present = true;
    d.kilnVersion = str(p->kiln_version());
    d.sourceCommit = str(p->source_commit());
    d.buildHost = str(p->build_host());
    d.buildTime = str(p->build_time());
    d.buildConfigJson = str(p->build_config_json());
    d.model = sourceFile(p->model());
    if (p->external_data())
      for (const fb::SourceFile *f : *p->external_data())
        d.externalData.push_back(sourceFile(f));
  }
  if (const fb::SourceGraph *g = outer.source_graph(); g && g->bytes())
    x.sourceGraph.assign(reinterpret_cast<const char *>(g->bytes()->data()), g->bytes()->size());
  return x;
}

void WeightAssembler::addWhole(const std::string &name, const void *data, uint64_t size) {
  whole.try_emplace(name, WeightBytesRef{data, size});
}

void WeightAssembler::addShard(const std::string &fullName, int rank, const void *data,
                               std::vector<int64_t> shape, int64_t elementBytes, int axis,
                               int64_t offset, int64_t fullDim) {
  shards[fullName].push_back({rank, data, std::move(shape), elementBytes, axis, offset, fullDim});
}

llvm::Expected<WeightBytesRef> WeightAssembler::lookup(const std::string &name) {
  if (auto it = whole.find(name); it != whole.end())
    return it->second;
  if (auto it = assembled.find(name); it != assembled.end())
    return WeightBytesRef{it->second->data(), it->second->size()};
  auto it = shards.find(name);
  if (it == shards.end())
    return inputError("weight '" + name + "' of the source graph is in no section of the plan");
  return assemble(name, it->second);
}

llvm::Expected<WeightBytesRef> WeightAssembler::assemble(const std::string &name,
                                                         const std::vector<Shard> &pieces) {
  auto fail = [&](const std::string &why) {
    return inputError("weight '" + name + "' cannot be reassembled from its shards: " + why);
  };
  // The full shape: any shard's, its axis at full_dim. All must agree.
  std::vector<int64_t> full;
  int64_t elementBytes = 0;
  for (const Shard &s : pieces) {
    if (s.axis < 0 || s.axis >= static_cast<int>(s.shape.size()) || s.offset < 0 ||
        s.fullDim < 1 || s.offset + s.shape[s.axis] > s.fullDim)
      return fail(llvm::formatv("rank {0}'s shard spec (axis {1}, offset {2}, full dim {3}) does "
                                "not fit its shape {4}",
                                s.rank, s.axis, s.offset, s.fullDim, shapeString(s.shape))
                      .str());
    std::vector<int64_t> f = s.shape;
    f[s.axis] = s.fullDim;
    if (full.empty()) {
      full = f;
      elementBytes = s.elementBytes;
    } else if (f != full || s.elementBytes != elementBytes) {
      return fail("rank " + std::to_string(s.rank) + "'s shard implies the shape " +
                  shapeString(f) + ", another's " + shapeString(full));
    }
  }
  uint64_t total = static_cast<uint64_t>(elementBytes);
  for (int64_t d : full)
    total *= static_cast<uint64_t>(d);
  auto buffer = std::make_unique<std::vector<uint8_t>>(total);
  // Per axis, the [begin, end) ranges written so far: where a new shard
  // overlaps one (a KV head on several ranks), its bytes must be equal.
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> covered;
  for (const Shard &s : pieces) {
    const int64_t count = s.shape[s.axis];
    int64_t outer = 1, inner = elementBytes;
    for (int i = 0; i < s.axis; ++i)
      outer *= full[i];
    for (size_t i = s.axis + 1; i < full.size(); ++i)
      inner *= full[i];
    const auto *src = static_cast<const uint8_t *>(s.data);
    std::vector<std::pair<int64_t, int64_t>> &ranges = covered[s.axis];
    for (const auto &[b, e] : ranges) {
      const int64_t lo = std::max(b, s.offset), hi = std::min(e, s.offset + count);
      if (lo >= hi)
        continue;
      for (int64_t o = 0; o < outer; ++o)
        if (std::memcmp(buffer->data() + (o * s.fullDim + lo) * inner,
                        src + (o * count + (lo - s.offset)) * inner,
                        static_cast<size_t>((hi - lo) * inner)) != 0)
          return fail(llvm::formatv("rank {0}'s shard [{1}, {2}) along axis {3} overlaps another "
                                    "with different bytes",
                                    s.rank, s.offset, s.offset + count, s.axis)
                          .str());
    }
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(buffer->data() + (o * s.fullDim + s.offset) * inner, src + o * count * inner,
                  static_cast<size_t>(count * inner));
    ranges.push_back({s.offset, s.offset + count});
  }
  // Complete when the ranges along some axis cover it.
  bool complete = false;
  for (auto &[axis, ranges] : covered) {
    std::sort(ranges.begin(), ranges.end());
    int64_t reached = 0;
    for (const auto &[b, e] : ranges)
      if (b <= reached)
        reached = std::max(reached, e);
    complete |= reached >= full[axis];
  }
  if (!complete)
    return fail("part of it is on no rank (a rank file missing?)");
  WeightBytesRef ref{buffer->data(), buffer->size()};
  assembled[name] = std::move(buffer);
  return ref;
}

} // namespace kiln::plan
