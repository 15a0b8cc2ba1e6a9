// kiln inspect: what a plan holds, without running it. The report is built
// once as JSON; the text form prints the same fields.
#include "backends/registry.h"
#include "cli.h"
#include "cli_args.h"
#include "core/backend.h"
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

namespace kiln::cli {
namespace {

using Json = nlohmann::ordered_json;

const char kUsage[] = "usage: kiln inspect model.plan [--ops] [--json]\n"
                      "\n"
                      "Prints a plan's format version, model metadata, tokenizer, generation\n"
                      "defaults, an encoder's pooling (kiln embed), build config, provenance\n"
                      "(kiln version and commit, build host and time, SHA-256 of the source ONNX\n"
                      "and external-data files), injection report, graph inputs and outputs with\n"
                      "their symbolic shapes, op counts by type, memory plan, weight sections,\n"
                      "weights by dtype (tensors and bytes of each), the KV cache's dtype, and\n"
                      "which of this kiln's backends have a kernel for every op of the plan.\n"
                      "The plan is fully verified (checksums, structure) before anything prints.\n"
                      "\n"
                      "options:\n"
                      "  --ops    also list every op with its operand and result tensors\n"
                      "  --json   print one JSON object instead of text\n";

std::string S(const flatbuffers::String *s) { return s ? s->str() : ""; }

// Plan strings need not be valid UTF-8; never let printing throw over it.
std::string D(const Json &j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

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

void PrintProvenance(const Json &p) {
  if (p.is_null()) {
    std::printf("provenance  none (the plan predates format 1.2)\n");
    return;
  }
  std::printf(
      "provenance  kiln %s, commit %s, built on %s at %s\n",
      p["kiln_version"].get<std::string>().c_str(), p["source_commit"].get<std::string>().c_str(),
      p["build_host"].get<std::string>().c_str(), p["build_time"].get<std::string>().c_str());
  auto file = [](const char *role, const Json &f) {
    std::printf("  %-14s %s  %s (%s bytes)\n", role, f["sha256"].get<std::string>().c_str(),
                f["path"].get<std::string>().c_str(), D(f["bytes"]).c_str());
  };
  file("model", p["model"]);
  for (const Json &f : p["external_data"])
    file("external data", f);
  std::printf("  build inputs   %s\n", D(p["build_inputs"]).c_str());
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

Json Report(const Plan &plan, bool with_ops) {
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

std::string Bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", b / double(1ull << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", b);
  return buf;
}

std::string ShapeText(const Json &t) {
  std::string s = t["dtype"].get<std::string>() + "[";
  for (size_t i = 0; i < t["shape"].size(); ++i) {
    const Json &d = t["shape"][i];
    s += (i ? ", " : "") + (d.is_string() ? d.get<std::string>() : D(d));
  }
  return s + "]";
}

void PrintText(const Json &r) {
  std::printf("plan        %s (%s)\n", r["plan"].get<std::string>().c_str(),
              Bytes(r["file_bytes"]).c_str());
  std::printf("format      %s, built by %s\n", r["format"].get<std::string>().c_str(),
              r["compiler_version"].get<std::string>().c_str());
  if (r.contains("metadata")) {
    const Json &m = r["metadata"];
    std::printf("model       %s '%s': vocab %s, context %s, %s layers, hidden %s, opset %s\n",
                m["architecture"].get<std::string>().c_str(),
                m["model_name"].get<std::string>().c_str(), D(m["vocab_size"]).c_str(),
                D(m["context_length"]).c_str(), D(m["num_layers"]).c_str(),
                D(m["hidden_size"]).c_str(), D(m["opset"]).c_str());
    std::printf("            bos %s, eos %s, pad %s, producer '%s'\n", D(m["bos_token_id"]).c_str(),
                D(m["eos_token_ids"]).c_str(), D(m["pad_token_id"]).c_str(),
                m["producer"].get<std::string>().c_str());
  }
  const Json &tok = r["tokenizer"];
  if (!tok["present"].get<bool>()) {
    std::printf("tokenizer   none (kiln run needs --prompt-ids)\n");
  } else {
    std::printf("tokenizer   %s, vocab %s, added tokens %s (%s)\n",
                tok.value("type", std::string("?")).c_str(),
                tok.contains("vocab_size") ? D(tok["vocab_size"]).c_str() : "?",
                tok.contains("added_tokens") ? D(tok["added_tokens"]).c_str() : "0",
                Bytes(tok["bytes"]).c_str());
  }
  std::printf("chat        %s\n",
              r["chat_template"].get<bool>() ? "template present" : "no template");
  if (r.contains("pooling"))
    std::printf("pooling     %s%s (kiln embed)\n", r["pooling"]["mode"].get<std::string>().c_str(),
                r["pooling"]["normalize"].get<bool>() ? ", normalized" : "");
  if (r.contains("generation"))
    std::printf("generation  %s\n", D(r["generation"]).c_str());
  std::printf("build       %s\n", r["build_config"].get<std::string>().empty()
                                      ? "(no build config)"
                                      : r["build_config"].get<std::string>().c_str());
  PrintProvenance(r["provenance"]);
  std::string report = r["injection_report"];
  std::printf("injection   %s\n", report.empty() ? "(no report)" : "");
  if (!report.empty())
    std::printf("%s%s", report.c_str(), report.back() == '\n' ? "" : "\n");

  if (r.contains("tensor_parallel")) {
    const Json &tp = r["tensor_parallel"];
    std::printf("tensor par  tp_size %s, build %s, %s rank programs\n", D(tp["tp_size"]).c_str(),
                tp["build_id"].get<std::string>().c_str(), D(tp["ranks"]).c_str());
    std::printf("partition   %s\n", tp["partition_report"].get<std::string>().c_str());
  }
  std::printf("inputs\n");
  for (const Json &t : r["inputs"])
    std::printf("  %-40s %s\n", t["name"].get<std::string>().c_str(), ShapeText(t).c_str());
  std::printf("outputs\n");
  for (const Json &t : r["outputs"])
    std::printf("  %-40s %s\n", t["name"].get<std::string>().c_str(), ShapeText(t).c_str());
  if (r.contains("decoder"))
    std::printf("decoder     %s\n", D(r["decoder"]).c_str());
  std::printf("interface   %s%s\n", r["interface"].get<std::string>().c_str(),
              r.contains("ragged")
                  ? (" (continuous batching over a paged KV cache, " +
                     std::to_string(r["ragged"]["kv_caches"].get<size_t>()) + " layers)")
                        .c_str()
                  : " (requests run one at a time)");

  std::printf("ops         %s\n", D(r["num_ops"]).c_str());
  for (auto &[type, n] : r["op_counts"].items())
    std::printf("  %-24s %s\n", type.c_str(), D(n).c_str());
  if (r.contains("ops")) {
    int i = 0;
    for (const Json &op : r["ops"])
      std::printf("  %4d %-20s %-32s %s -> %s\n", i++, op["type"].get<std::string>().c_str(),
                  op["name"].get<std::string>().c_str(), D(op["inputs"]).c_str(),
                  D(op["outputs"]).c_str());
  }
  if (r.contains("memory_plan")) {
    const Json &m = r["memory_plan"];
    int64_t unshared = m["unshared_static_bytes"];
    std::printf("memory      %s slots, alignment %s, %s in static slots (%s dynamic slots), "
                "%s without reuse\n",
                D(m["num_slots"]).c_str(), D(m["alignment"]).c_str(),
                Bytes(m["static_slot_bytes"]).c_str(), D(m["dynamic_slots"]).c_str(),
                unshared < 0 ? "dynamic" : Bytes(unshared).c_str());
  }
  std::printf("weights     %s in %zu sections\n", Bytes(r["weight_bytes"]).c_str(),
              r["sections"].size());
  for (const Json &s : r["sections"])
    std::printf("  %-16s rank %3s  offset %12s  %10s  %s tensors\n",
                s["name"].get<std::string>().c_str(), D(s["rank"]).c_str(), D(s["offset"]).c_str(),
                Bytes(s["bytes"]).c_str(), D(s["tensors"]).c_str());
  std::string by_type;
  for (auto &[type, d] : r["weight_dtypes"].items())
    by_type += (by_type.empty() ? "" : ", ") + type + " " + D(d["tensors"]) + " tensors (" +
               Bytes(d["bytes"]) + ")";
  std::printf("  by dtype         %s\n", by_type.empty() ? "none" : by_type.c_str());
  std::printf("kv cache    %s\n", r["kv_cache_dtype"].is_null()
                                      ? "none"
                                      : r["kv_cache_dtype"].get<std::string>().c_str());
  std::string runs;
  for (const Json &b : r["backends"]) {
    const std::string name = b["name"].get<std::string>();
    std::string line = "runs on " + name;
    if (!b["runs"].get<bool>()) {
      std::string ops;
      for (const Json &op : b["missing_ops"])
        ops += (ops.empty() ? "" : ", ") + op.get<std::string>();
      line = "not on " + name + ": missing op" + (b["missing_ops"].size() > 1 ? "s " : " ") + ops;
    } else if (name != "cpu" && r["interface"] == "dense") {
      line += " (kiln exec; kiln run drives dense plans on the cpu only)";
    }
    runs += (runs.empty() ? "" : "; ") + line;
  }
  std::printf("backends    %s\n", runs.c_str());
}

} // namespace

int InspectMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err = ParseArgs(args, {}, {"--ops", "--json"}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("inspect", err, kUsage);
  if (a.positional.size() != 1)
    return Usage("inspect", "expected one plan file", kUsage);
  auto plan = LoadPlan(a.positional[0], PlanLoadOptions{PlanLoadOptions::kAsBuilt, 0});
  if (!plan.ok())
    return Fail("inspect", plan.status());
  Json r = Report(**plan, a.Has("--ops"));
  if (a.Has("--json"))
    std::printf("%s\n", r.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  else
    PrintText(r);
  return kExitOk;
}

} // namespace kiln::cli
