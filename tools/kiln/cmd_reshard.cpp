// kiln reshard: re-partition a plan for another tensor-parallel rank count,
// without the ONNX model. The runtime's loader opens and verifies the input
// file(s) rank by rank; the weights are put back together from their shards
// (compiler/plan/PlanReader.h) and the compiler's partition and plan phases
// run again on the plan's stored source graph (compiler/driver/BuildDriver.h).
#include "cli.h"
#include "cli_args.h"

#include "compiler/driver/BuildConfig.h"
#include "compiler/driver/BuildDriver.h"
#include "compiler/plan/PlanReader.h"
#include "compiler/plan/TpPlanWriter.h"
#include "compiler/support/BuildError.h"
#include "kiln_source_commit.h"
#include "build_common.h"

#include "kiln/plan.h"
#include "kiln/tensor.h"
#include "kiln/plan_info.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln reshard IN.plan [RANK-FILE.plan ...] --tp M -o OUT.plan [options]\n"
    "\n"
    "Re-partitions a plan for M tensor-parallel ranks, from any rank count N, without\n"
    "the ONNX model: the weights are put back together from the input's shards and\n"
    "the partition and plan phases run again on the graph the plan stores\n"
    "(Plan.source_graph). --tp 1 joins a split plan back into one. The tokenizer,\n"
    "chat template, generation defaults and provenance are carried over; the new\n"
    "plan gets a new build id. A plan built before plan format 1.5 has no stored\n"
    "graph and must be rebuilt from its ONNX file instead.\n"
    "\n"
    "The input is one plan file, or every rank file of one build (as --split wrote\n"
    "them, in any order). Each file is verified (checksums included) as it is read.\n"
    "\n"
    "options:\n"
    "  --tp M               the new rank count (1: an unsplit plan)\n"
    "  -o, --output PATH    where to write the plan; with --split, the rank files go\n"
    "                       beside it as PATH's name with .rank<r> before its\n"
    "                       extension (out.plan: out.rank0.plan, out.rank1.plan, ...)\n"
    "  --split              write one file per rank, holding that rank's program, the\n"
    "                       shared weights and its own shard, so that each host copies\n"
    "                       only its part; `kiln run RANK-FILE --tp M --rank R\n"
    "                       --rendezvous ...` runs it (docs/tp-runtime.md)\n"
    "  --require-partition  fail, naming the layer, when a layer cannot be split\n"
    "  --report             print the partition report\n"
    "  -q, --quiet          no progress lines\n"
    "\n"
    "Memory: the split weights are reassembled in memory (up to the model's size);\n"
    "the whole ones are read from the mapped input.\n";

int Error(const std::string &message, int code) {
  std::fprintf(stderr, "kiln reshard: error: %s\n", message.c_str());
  return code;
}

// The input files, opened by the runtime's loader once per rank program
// they hold; the plans stay open (their mappings back the weights).
struct Inputs {
  std::vector<std::unique_ptr<Plan>> ranks; // by rank; one entry for a one-rank plan
  int tp_size = 1;
  std::string build_id;
  std::string description;
};

Status OpenInputs(const std::vector<std::string> &paths, Inputs *in) {
  std::map<int, std::unique_ptr<Plan>> held;
  for (const std::string &path : paths) {
    StatusOr<std::unique_ptr<Plan>> first = LoadPlan(
        path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, PlanLoadOptions::kFirstHeldRank});
    if (!first.ok())
      return Status(first.status().code(), path + ": " + first.status().message());
    const int n = (*first)->tp_size();
    const std::string id = (*first)->build_id();
    if (held.empty()) {
      in->tp_size = n;
      in->build_id = id;
    } else if (n != in->tp_size || id != in->build_id || n == 1) {
      return InvalidArgument(path + " is not a rank file of the same build as " + paths[0] +
                             " (tp_size " + std::to_string(n) + ", build " + id + " against " +
                             std::to_string(in->tp_size) + ", " + in->build_id + ")");
    }
    std::vector<int> ranks = {(*first)->rank()};
    const std::vector<int> held_ranks = DescribePlan(**first).tp_ranks;
    ranks.insert(ranks.end(), held_ranks.begin() + std::min<size_t>(1, held_ranks.size()),
                 held_ranks.end());
    for (size_t i = 0; i < ranks.size(); ++i) {
      std::unique_ptr<Plan> plan;
      if (i == 0) {
        plan = std::move(*first);
      } else {
        StatusOr<std::unique_ptr<Plan>> r =
            LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, ranks[i]});
        if (!r.ok())
          return Status(r.status().code(), path + ": " + r.status().message());
        plan = std::move(*r);
      }
      if (held.count(ranks[i]))
        return InvalidArgument(path + ": rank " + std::to_string(ranks[i]) +
                               " is given twice among the inputs");
      held[ranks[i]] = std::move(plan);
    }
  }
  std::string missing;
  for (int r = 0; r < in->tp_size; ++r)
    if (!held.count(r))
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  if (!missing.empty())
    return InvalidArgument("the input holds no program for rank(s) " + missing + " of " +
                           std::to_string(in->tp_size) +
                           ": pass every rank file of the build");
  for (auto &[rank, plan] : held)
    in->ranks.push_back(std::move(plan));
  in->description = paths.size() == 1 ? paths[0]
                                      : paths[0] + " and " + std::to_string(paths.size() - 1) +
                                            " more rank file(s)";
  return Status::Ok();
}

// Every weight the rank programs hold: whole, or as a shard of its
// unsplit weight (zero-extent shards, of a rank without heads, add nothing).
void CollectWeights(const Inputs &in, plan::WeightAssembler &weights) {
  for (const std::unique_ptr<Plan> &p : in.ranks) {
    for (const PlanTensor &t : p->tensors()) {
      if (t.kind != TensorKind::kWeight)
        continue;
      if (!t.sharded) {
        weights.addWhole(t.name, t.data, t.size);
        continue;
      }
      if (t.size == 0)
        continue;
      weights.addShard(t.shard.full_name, p->rank(), t.data, t.StaticShape(),
                       static_cast<int64_t>(DTypeSize(t.dtype)), t.shard.axis, t.shard.offset,
                       t.shard.full_dim);
    }
  }
}

} // namespace

int ReshardMain(const std::vector<std::string> &args) {
  ParsedArgs parsed;
  std::string err = ParseArgs(args, {"--tp", "--output"},
                              {"--split", "--quiet", "--report", "--require-partition"},
                              {{"-o", "--output"}, {"-q", "--quiet"}}, &parsed);
  if (!err.empty())
    return Usage("reshard", err, kUsage);
  if (parsed.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.empty())
    return Usage("reshard", "missing the input plan", kUsage);
  for (const char *once : {"--tp", "--output"})
    if (parsed.All(once).size() > 1)
      return Usage("reshard", std::string(once) + " given more than once", kUsage);
  if (!parsed.Has("--tp"))
    return Usage("reshard", "missing --tp M (the new rank count)", kUsage);
  const std::string output = parsed.Get("--output");
  if (output.empty())
    return Usage("reshard", "missing -o PATH (where to write the plan)", kUsage);
  long long tp = 0;
  if (!ParseInt(parsed.Get("--tp"), &tp) || tp < 1 || tp > 4096)
    return Usage("reshard", "--tp must be an integer in [1, 4096], not '" + parsed.Get("--tp") + "'",
                 kUsage);
  const bool split = parsed.Has("--split");
  if (split && tp == 1)
    return Usage("reshard", "--split writes one file per rank; with --tp 1 there is one plan",
                 kUsage);
  std::vector<std::string> outputs;
  if (split)
    for (long long r = 0; r < tp; ++r)
      outputs.push_back(plan::rankFilePath(output, r));
  else
    outputs.push_back(output);
  for (const std::string &in : parsed.positional) {
    if (!llvm::sys::fs::is_regular_file(in))
      return Error(in + ": no such plan file", kExitBadInput);
    for (const std::string &out : outputs)
      if (llvm::sys::fs::equivalent(in, out))
        return Error("-o " + out + " would overwrite the input " + in, kExitBadInput);
  }

  Inputs in;
  if (Status s = OpenInputs(parsed.positional, &in); !s.ok())
    return Error(s.message(), kExitBadInput);
  compiler::ReshardSource source;
  source.extras = plan::extrasFromPlan(in.ranks[0]->fb());
  source.description = in.description;
  source.fromTpSize = in.tp_size;
  source.fromBuildId = in.build_id;
  plan::WeightAssembler weights;
  CollectWeights(in, weights);
  source.weights = [&weights](const std::string &name) { return weights.lookup(name); };

  compiler::BuildRequest request;
  request.modelPath = in.description;
  request.outputPath = output;
  request.compilerVersion = KILN_VERSION;
  request.sourceCommit = KILN_SOURCE_COMMIT;
  request.quiet = parsed.Has("--quiet");
  request.printReport = parsed.Has("--report");
  request.requirePartition = parsed.Has("--require-partition");
  request.reshard = &source;
  request.splitRanks = split;
  auto config = compiler::ReshardConfig(source.extras.buildConfigJson, tp);
  if (!config)
    return Error(in.description + ": " + llvm::toString(config.takeError()), kExitBadInput);
  request.config = std::move(*config);
  return RunCompilerDriver(request, "reshard");
}

} // namespace kiln::cli
