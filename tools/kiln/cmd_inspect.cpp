// kiln inspect: what a plan holds, without running it. The report is built
// once as JSON; the text form prints the same fields.
#include "cli.h"
#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln/plan_report.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>

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

// Plan strings need not be valid UTF-8; never let printing throw over it.
std::string D(const Json &j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

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
  Json r = PlanReport(**plan, a.Has("--ops"));
  if (a.Has("--json"))
    std::printf("%s\n", r.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  else
    PrintText(r);
  return kExitOk;
}

} // namespace kiln::cli
