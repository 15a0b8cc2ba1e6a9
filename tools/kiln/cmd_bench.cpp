// kiln bench offline: N requests of given prompt and output lengths through
// the pipeline at several concurrency levels; throughput and latency
// percentiles as a table on stdout and as JSON.
#include "cli.h"
#include "cli_args.h"
#include "cmd_run_batch.h"
#include "kiln/plan_info.h"
#include "png_chart.h"
#include "run_options.h"
#include "tp_launch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln bench offline model.plan [options]\n"
    "       kiln bench latency model.plan [options]   (batch 1; kiln bench latency --help)\n"
    "       kiln bench serve --url URL [options]      (a running server; kiln bench serve --help)\n"
    "\n"
    "Runs --num-prompts requests through the engine at each --concurrency (the\n"
    "engine's sequences per step), all submitted at once, greedy with EOS ignored so\n"
    "each generates exactly its output length. Prints requests/s, output tokens/s,\n"
    "total tokens/s (prompt and output tokens over the wall time), time to first token\n"
    "(TTFT, from submission) and time per output token after the first (TPOT), p50\n"
    "and p99, for each level, and the KV cache's size: its tokens and how many\n"
    "sequences of 2048 tokens it holds.\n"
    "\n"
    "options:\n"
    "  --num-prompts N          requests per level (default 64)\n"
    "  --input-len N            prompt tokens of each random request (default 64)\n"
    "  --output-len N           new tokens of each request (default 64)\n"
    "  --requests FILE          JSONL requests instead of random ones ({\"prompt_ids\"} or\n"
    "                           {\"prompt\"}, optional \"max_new_tokens\"; see kiln run)\n"
    "  --concurrency 1,4,16     levels to run (default 1,2,4,8,16,32)\n"
    "  --seed S                 seed of the random prompts (default 0)\n"
    "  --json FILE              write the results (and the command) as JSON\n"
    "  --write-requests FILE    write the requests run as JSONL, for a peer to replay\n"
    "                           (tools/bench_offline_ort.py)\n"
    "  --plot FILE.png          draw output tokens/s against concurrency as a PNG\n"
    "  --peer-json FILE         with --plot: a peer's results JSON (results[0].\n"
    "                           output_tokens_per_s, e.g. from tools/bench_offline_ort.py),\n"
    "                           drawn as a dashed level\n"
    "\n"
    "Random prompts draw token ids uniformly below the vocabulary size, so no two\n"
    "share a prefix. tools/plot_bench.py draws a fuller plot from the JSON.\n"
    "Exit status: 0 ok, 2 bad arguments or plan, 1 internal error.\n";

double Percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  // Linear interpolation between closest ranks (NumPy's default).
  double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// results[0].output_tokens_per_s of a peer's results JSON.
StatusOr<double> PeerTokensPerSecond(const std::string &path) {
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonObject(path, "--peer-json"));
  if (!j.contains("results") || !j["results"].is_array() || j["results"].empty() ||
      !j["results"][0].is_object() || !j["results"][0].contains("output_tokens_per_s") ||
      !j["results"][0]["output_tokens_per_s"].is_number())
    return InvalidArgument(path + ": expected {\"results\": [{\"output_tokens_per_s\": N}, ...]}");
  return j["results"][0]["output_tokens_per_s"].get<double>();
}

struct Level {
  int concurrency = 0;
  double wall_s = 0;
  int64_t output_tokens = 0, prompt_tokens = 0;
  std::vector<double> ttft_ms, tpot_ms;
  int64_t steps = 0, preemptions = 0;
  int64_t kv_tokens = 0; // blocks * block size
};

StatusOr<Level> RunLevel(const Plan &plan, PipelineOptions options, int concurrency,
                         const std::vector<Request> &requests) {
  options.max_seqs = concurrency;
  options.max_batched_tokens = std::max<int64_t>(options.max_batched_tokens, concurrency);
  options.max_tracked = std::max<int>(options.max_tracked, static_cast<int>(requests.size()));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipe, Pipeline::Create(plan, options));
  Level level;
  level.concurrency = concurrency;
  auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(std::vector<Response> out, pipe->Generate(requests));
  level.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Response &r : out) {
    level.output_tokens += r.generated_length;
    level.prompt_tokens += r.prompt_length;
    level.ttft_ms.push_back(r.ttft_seconds * 1e3);
    if (r.generated_length > 1)
      level.tpot_ms.push_back((r.total_seconds - r.ttft_seconds) * 1e3 / (r.generated_length - 1));
  }
  level.steps = pipe->stats().steps;
  level.preemptions = pipe->stats().preemptions;
  level.kv_tokens = pipe->stats().kv_blocks * pipe->stats().block_size;
  return level;
}

Status BenchLevels(const ParsedArgs &a, const std::string &command, const Plan &plan,
                   const PipelineOptions &options);

Status Bench(const ParsedArgs &a, const std::string &command) {
  // A bad peer file fails now, not after the whole benchmark ran.
  if (a.Has("--peer-json"))
    KILN_RETURN_IF_ERROR(PeerTokensPerSecond(a.Get("--peer-json")).status());
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  PipelineOptions options;
  KILN_RETURN_IF_ERROR(ApplyEngineFlags(a, &options));
  // The communicator and the plan outlive every pipeline of the run.
  KILN_ASSIGN_OR_RETURN(RankOptions rank_options, RankFlags(a, options.backend));
  KILN_ASSIGN_OR_RETURN(OpenedRank rank, OpenRank(a.positional[1], rank_options));
  options.backend = rank.device();
  DenseDefaultsToCpu(a, rank.plan(), &options);
  options.comm = rank.comm();
  if (rank.follower())
    return RunFollower(rank.plan(), options);
  Status st = BenchLevels(a, command, rank.plan(), options);
  KILN_RETURN_IF_ERROR(st);
  return EndFollowers(rank.comm());
}

Status BenchLevels(const ParsedArgs &a, const std::string &command, const Plan &plan_ref,
                   const PipelineOptions &options) {
  const Plan *plan = &plan_ref;
  long long num = 64, in_len = 64, out_len = 64, seed = 0;
  auto positive = [&](const char *name, long long *v) -> Status {
    if (a.Has(name) && (!ParseInt(a.Get(name), v) || *v < 1 || *v > (1 << 24)))
      return InvalidArgument(std::string(name) + " expects an integer >= 1");
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(positive("--num-prompts", &num));
  KILN_RETURN_IF_ERROR(positive("--input-len", &in_len));
  KILN_RETURN_IF_ERROR(positive("--output-len", &out_len));
  if (a.Has("--seed") && !ParseInt(a.Get("--seed"), &seed))
    return InvalidArgument("--seed expects an integer");
  std::vector<int> levels;
  {
    std::stringstream ss(a.Get("--concurrency", "1,2,4,8,16,32"));
    std::string item;
    while (std::getline(ss, item, ',')) {
      long long c;
      if (!ParseInt(item, &c) || c < 1 || c > 4096)
        return InvalidArgument("--concurrency: '" + item + "' is not an integer in [1, 4096]");
      levels.push_back(static_cast<int>(c));
    }
    if (levels.empty())
      return InvalidArgument("--concurrency is empty");
  }

  RequestParams params;
  params.sampling.temperature = 0;
  params.ignore_eos = true;
  params.max_new_tokens = static_cast<int>(out_len);
  std::vector<Request> requests;
  if (a.Has("--requests")) {
    KILN_ASSIGN_OR_RETURN(requests, ReadRequestsFile(a.Get("--requests"), params));
  } else {
    const int64_t vocab = DescribePlan(*plan).model.vocab_size;
    if (vocab <= 0)
      return InvalidArgument("the plan does not say its vocabulary size; give --requests");
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    for (long long i = 0; i < num; ++i) {
      Request r;
      r.params = params;
      for (long long t = 0; t < in_len; ++t)
        r.prompt_ids.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
      requests.push_back(std::move(r));
    }
  }
  if (a.Has("--write-requests")) {
    std::string lines;
    for (Request &r : requests) {
      if (r.prompt_ids.empty())
        return InvalidArgument("--write-requests needs token-id prompts");
      lines += nlohmann::json(
                   {{"prompt_ids", r.prompt_ids}, {"max_new_tokens", r.params.max_new_tokens}})
                   .dump() +
               "\n";
    }
    KILN_RETURN_IF_ERROR(WriteText(a.Get("--write-requests"), lines));
  }

  // One short untimed run first, so page faults and thread start-up are
  // not billed to the first level.
  {
    std::vector<Request> warm(requests.begin(), requests.begin() + 1);
    warm[0].params.max_new_tokens = std::min(4, warm[0].params.max_new_tokens);
    KILN_RETURN_IF_ERROR(RunLevel(*plan, options, 1, warm).status());
  }
  std::printf("%s\n\n", command.c_str());
  std::printf("| concurrency | req/s | out tok/s | total tok/s | TTFT p50 ms | TTFT p99 ms | "
              "TPOT p50 ms | TPOT p99 ms | steps | preemptions | KV tokens | 2k seqs |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
              "---: |\n");
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (int c : levels) {
    KILN_ASSIGN_OR_RETURN(Level l, RunLevel(*plan, options, c, requests));
    const double rps = static_cast<double>(requests.size()) / l.wall_s;
    const double tps = static_cast<double>(l.output_tokens) / l.wall_s;
    const double total_tps = static_cast<double>(l.output_tokens + l.prompt_tokens) / l.wall_s;
    nlohmann::ordered_json j = {{"concurrency", c},
                                {"requests", static_cast<int64_t>(requests.size())},
                                {"wall_s", l.wall_s},
                                {"requests_per_s", rps},
                                {"output_tokens_per_s", tps},
                                {"total_tokens_per_s", total_tps},
                                {"ttft_ms_p50", Percentile(l.ttft_ms, 50)},
                                {"ttft_ms_p99", Percentile(l.ttft_ms, 99)},
                                {"tpot_ms_p50", Percentile(l.tpot_ms, 50)},
                                {"tpot_ms_p99", Percentile(l.tpot_ms, 99)},
                                {"output_tokens", l.output_tokens},
                                {"steps", l.steps},
                                {"preemptions", l.preemptions},
                                {"prompt_tokens", l.prompt_tokens},
                                {"kv_cache_tokens", l.kv_tokens},
                                {"kv_cache_seqs_2k", l.kv_tokens / 2048}};
    std::printf("| %d | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %lld | %lld | %lld | "
                "%lld |\n",
                c, rps, tps, total_tps, j["ttft_ms_p50"].get<double>(),
                j["ttft_ms_p99"].get<double>(), j["tpot_ms_p50"].get<double>(),
                j["tpot_ms_p99"].get<double>(), static_cast<long long>(l.steps),
                static_cast<long long>(l.preemptions), static_cast<long long>(l.kv_tokens),
                static_cast<long long>(l.kv_tokens / 2048));
    std::fflush(stdout);
    results.push_back(j);
  }
  if (a.Has("--plot")) {
    ChartSeries kiln_series;
    for (const auto &j : results) {
      kiln_series.x.push_back(j["concurrency"].get<double>());
      kiln_series.y.push_back(j["output_tokens_per_s"].get<double>());
    }
    std::vector<ChartSeries> series = {kiln_series};
    if (a.Has("--peer-json")) {
      KILN_ASSIGN_OR_RETURN(double peer, PeerTokensPerSecond(a.Get("--peer-json")));
      series.push_back({{1.0}, {peer}, 0xd62728, true});
    }
    KILN_RETURN_IF_ERROR(WriteLineChartPng(a.Get("--plot"), series));
  }
  if (a.Has("--json")) {
    nlohmann::ordered_json doc = {{"command", command},
                                  {"plan", a.positional[1]},
                                  {"batched", GraphInterface(*plan) == PlanInterface::kRagged},
                                  {"num_prompts", static_cast<int64_t>(requests.size())},
                                  {"input_len", a.Has("--requests") ? -1 : in_len},
                                  {"output_len", a.Has("--requests") ? -1 : out_len},
                                  {"threads", a.Get("--threads", "all")},
                                  {"device", options.backend},
                                  {"requests_file", a.Get("--write-requests", "")},
                                  {"results", results}};
    KILN_RETURN_IF_ERROR(WriteText(a.Get("--json"), doc.dump(2) + "\n"));
  }
  return Status::Ok();
}

} // namespace

int BenchMain(const std::vector<std::string> &args) {
  if (!args.empty() && args[0] == "latency")
    return BenchLatencyMain(args);
  if (!args.empty() && args[0] == "serve")
    return BenchServeMain(args);
  ParsedArgs a;
  std::set<std::string> values = {
      "--num-prompts", "--input-len", "--output-len",     "--requests", "--concurrency",
      "--seed",        "--json",      "--write-requests", "--plot",     "--peer-json"};
  values.insert(kEngineOptions.begin(), kEngineOptions.end());
  values.insert(kTpOptions.begin(), kTpOptions.end());
  std::set<std::string> flags(kEngineFlags.begin(), kEngineFlags.end());
  std::string err = ParseArgs(args, values, flags, {}, &a);
  if (a.help) {
    std::printf("%s\n%s\n%s", kUsage, kEngineUsage, kTpUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("bench", err, kUsage);
  if (!a.positional.empty() && a.positional[0] == "latency")
    return BenchLatencyMain(args); // its flags came after others
  if (a.positional.size() != 2 || a.positional[0] != "offline")
    return Usage("bench", "expected `offline` (or `latency`) and one plan file", kUsage);
  std::string command = "kiln bench";
  for (const std::string &s : args)
    command += " " + s;
  int launched = kExitOk;
  if (LaunchRanks(a, "bench", &launched))
    return launched;
  Status st = Bench(a, command);
  return st.ok() ? kExitOk : Fail("bench", InRankContext(st));
}

} // namespace kiln::cli
