// kiln inspect's report (kiln/plan_report.h): what a plan holds, as JSON.
#include "kiln/plan_report.h"

#include "backends/registry.h"
#include "core/backend.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "kiln_schema/plan_generated.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace kiln {
namespace {

using Json = nlohmann::ordered_json;

std::string S(const flatbuffers::String *s) { return s ? s->str() : ""; }

Json TensorJson(const Plan &plan, int id) {
  const PlanTensor &t = plan.tensors()[id];
  Json dims = Json::array();
  for (const PlanDim &d : t.dims)
    dims.push_back(d.value >= 0 ? Json(d.value) : Json(d.symbol.empty() ? "?" : d.symbol));
  return Json{{"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"shape", dims}};
}

// Vocabulary size as tokenizer.json states it: model.vocab (a map for
// BPE/WordPiece, a list for Unigram) plus added tokens outside it.
Json TokenizerJson(const std::string &text) {
  if (text.empty())
    return Json{{"present", false}};
  Json out{{"present", true}, {"bytes", text.size()}};
  Json tok = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (tok.is_discarded() || !tok.is_object()) {
    out["error"] = "tokenizer_json is not valid JSON";
    return out;
  }
  const Json &model = tok.contains("model") ? tok["model"] : Json();
  if (model.is_object() && model.contains("type") && model["type"].is_string())
    out["type"] = model["type"];
  if (model.is_object() && model.contains("vocab") &&
      (model["vocab"].is_object() || model["vocab"].is_array()))
    out["vocab_size"] = model["vocab"].size();
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
    out["added_tokens"] = tok["added_tokens"].size();
  return out;
}

Json SourceFileJson(const PlanSourceFile &f) {
  return Json{{"path", f.path}, {"bytes", f.size}, {"sha256", f.sha256}};
}

// Null for a plan built before provenance existed (format 1.0, 1.1).
Json ProvenanceJson(const Plan &plan) {
  PlanProvenance p;
  if (!plan.provenance(&p))
    return nullptr;
  Json external = Json::array();
  for (const PlanSourceFile &f : p.external_data)
    external.push_back(SourceFileJson(f));
  Json config = Json::parse(p.build_config_json, nullptr, /*allow_exceptions=*/false);
  return Json{{"kiln_version", p.kiln_version},
              {"source_commit", p.source_commit},
              {"build_host", p.build_host},
              {"build_time", p.build_time},
              {"model", SourceFileJson(p.model)},
              {"external_data", external},
              {"build_inputs", config.is_discarded() ? Json(p.build_config_json) : config}};
}

// Weights per element type: {"f16": {"tensors": n, "bytes": b}, ...}, so a
// half plan shows what was converted and what stayed.
Json WeightDtypes(const Plan &plan) {
  Json out = Json::object();
  for (const PlanTensor &t : plan.tensors()) {
    if (t.kind != TensorKind::kWeight)
      continue;
    Json &d = out[DTypeName(t.dtype)];
    if (d.is_null())
      d = {{"tensors", 0}, {"bytes", uint64_t{0}}};
    d["tensors"] = d["tensors"].get<int64_t>() + 1;
    d["bytes"] = d["bytes"].get<uint64_t>() + t.size;
  }
  return out;
}

// The KV cache's element type: the paged caches' (ragged) or the past
// inputs' (dense); null for a plan without one. Mixed types are listed.
Json KvCacheDtype(const Plan &plan) {
  const fb::Plan &f = plan.graph();
  std::set<std::string> types;
  auto add = [&](int id) {
    if (id >= 0 && id < static_cast<int>(plan.tensors().size()))
      types.insert(DTypeName(plan.tensors()[id].dtype));
  };
  if (const fb::RaggedIO *g = f.ragged(); g && g->kv_cache())
    for (const fb::KVCache *c : *g->kv_cache()) {
      add(c->key());
      add(c->value());
    }
  if (const fb::DecoderIO *d = f.decoder(); d && d->kv())
    for (const fb::KVPair *p : *d->kv())
      add(p->past());
  if (types.empty())
    return nullptr;
  std::string joined;
  for (const std::string &t : types)
    joined += (joined.empty() ? "" : "+") + t;
  return joined;
}

} // namespace

Json PlanReport(const Plan &plan, bool with_ops) {
  const fb::Plan &f = plan.fb();
  Json r;
  r["plan"] = plan.source();
  r["file_bytes"] = plan.file_size();
  r["format"] = std::to_string(f.format_major()) + "." + std::to_string(f.format_minor());
  r["compiler_version"] = S(f.compiler_version());
  if (const fb::ModelMetadata *m = f.metadata()) {
    Json eos = Json::array();
    if (m->eos_token_ids())
      for (int64_t e : *m->eos_token_ids())
        eos.push_back(e);
    r["metadata"] = {
        {"architecture", S(m->architecture())}, {"model_name", S(m->model_name())},
        {"vocab_size", m->vocab_size()},        {"context_length", m->context_length()},
        {"num_layers", m->num_layers()},        {"hidden_size", m->hidden_size()},
        {"bos_token_id", m->bos_token_id()},    {"eos_token_ids", eos},
        {"pad_token_id", m->pad_token_id()},    {"opset", m->opset()},
        {"producer", S(m->producer())}};
  }
  r["tokenizer"] = TokenizerJson(S(f.tokenizer_json()));
  r["chat_template"] = f.chat_template() && f.chat_template()->size() > 0;
  if (const fb::Pooling *p = f.pooling()) // encoders: how kiln embed pools
    r["pooling"] = {{"mode", S(p->mode())}, {"normalize", p->normalize()}};
  if (const fb::GenerationDefaults *g = f.generation())
    r["generation"] = {{"max_new_tokens", g->max_new_tokens()},
                       {"temperature", g->temperature()},
                       {"top_k", g->top_k()},
                       {"top_p", g->top_p()},
                       {"repetition_penalty", g->repetition_penalty()}};
  r["build_config"] = S(f.build_config_json());
  r["provenance"] = ProvenanceJson(plan);
  r["injection_report"] = S(f.injection_report());
  if (const fb::TensorParallel *tp = f.tensor_parallel()) // tp_size > 1 (docs/tensor-parallel.md)
    r["tensor_parallel"] = {{"tp_size", tp->tp_size()},
                            {"build_id", S(tp->build_id())},
                            {"ranks", tp->ranks() ? tp->ranks()->size() : 0},
                            {"partition_report", S(tp->partition_report())}};

  Json inputs = Json::array(), outputs = Json::array();
  for (int id : plan.inputs())
    inputs.push_back(TensorJson(plan, id));
  for (int id : plan.outputs())
    outputs.push_back(TensorJson(plan, id));
  r["inputs"] = inputs;
  r["outputs"] = outputs;
  auto name = [&](int id) {
    return id >= 0 && id < static_cast<int>(plan.tensors().size()) ? Json(plan.tensors()[id].name)
                                                                   : Json(nullptr);
  };
  // The graph fields: the plan's own, or in a tensor-parallel plan rank 0's
  // program (the one loaded; the partition report tells the ranks apart).
  const fb::Plan &graph = plan.graph();
  // Which interface the runtime drives: the engine batches ragged plans.
  r["interface"] = graph.ragged() ? "ragged" : "dense";
  if (const fb::RaggedIO *g = graph.ragged())
    r["ragged"] = {{"kv_caches", g->kv_cache() ? g->kv_cache()->size() : 0},
                   {"logits", name(g->logits())}};
  if (const fb::DecoderIO *d = graph.decoder()) {
    r["decoder"] = {{"input_ids", name(d->input_ids())},
                    {"attention_mask", name(d->attention_mask())},
                    {"position_ids", name(d->position_ids())},
                    {"logits", name(d->logits())},
                    {"kv_pairs", d->kv() ? d->kv()->size() : 0}};
  }

  std::map<std::string, int> counts;
  Json ops = Json::array();
  for (int i = 0; i < plan.num_ops(); ++i) {
    const fb::Op &op = *graph.ops()->Get(i);
    ++counts[S(op.type())];
    if (!with_ops)
      continue;
    Json in = Json::array(), out = Json::array();
    if (op.inputs())
      for (int t : *op.inputs())
        in.push_back(t < 0 ? Json(nullptr) : Json(plan.tensors()[t].name));
    if (op.outputs())
      for (int t : *op.outputs())
        out.push_back(plan.tensors()[t].name);
    ops.push_back(
        {{"type", S(op.type())}, {"name", S(op.name())}, {"inputs", in}, {"outputs", out}});
  }
  r["num_ops"] = plan.num_ops();
  r["op_counts"] = counts;
  if (with_ops)
    r["ops"] = ops;

  if (const fb::MemoryPlan *mp = graph.memory_plan()) {
    int64_t static_bytes = 0;
    int dynamic_slots = 0;
    if (mp->slot_static_bytes())
      for (int64_t b : *mp->slot_static_bytes()) {
        if (b >= 0)
          static_bytes += b;
        else
          ++dynamic_slots;
      }
    r["memory_plan"] = {{"num_slots", mp->num_slots()},
                        {"alignment", mp->alignment()},
                        {"static_slot_bytes", static_bytes},
                        {"dynamic_slots", dynamic_slots},
                        {"unshared_static_bytes", mp->unshared_static_bytes()}};
  }
  Json sections = Json::array();
  std::vector<int> tensors_in(f.sections() ? f.sections()->size() : 0, 0);
  for (const PlanTensor &t : plan.tensors())
    if (t.kind == TensorKind::kWeight && t.section >= 0) // -1: an empty weight
      ++tensors_in[t.section];
  for (uint32_t i = 0; f.sections() && i < f.sections()->size(); ++i) {
    const fb::Section *s = f.sections()->Get(i);
    sections.push_back({{"name", S(s->name())},
                        {"rank", s->rank()},
                        {"offset", s->offset()},
                        {"bytes", s->size()},
                        {"tensors", tensors_in[i]}});
  }
  r["sections"] = sections;
  r["weight_bytes"] = plan.weight_bytes();
  r["weight_dtypes"] = WeightDtypes(plan);
  r["kv_cache_dtype"] = KvCacheDtype(plan);
  // Which built backends have every op's kernel (host ops run on the host).
  Json backends = Json::array();
  for (const std::string &b : BackendNames()) {
    std::vector<std::string> missing = MissingKernels(plan, *BackendKernels(b));
    backends.push_back({{"name", b}, {"runs", missing.empty()}, {"missing_ops", missing}});
  }
  r["backends"] = backends;
  return r;
}

} // namespace kiln
