// kiln bench latency: batch-1 time to first token and decode rate, medians
// over repeats, and the decode step against the memory-bandwidth floor.
#include "cli.h"
#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "run_options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln bench latency model.plan [options]\n"
    "\n"
    "Batch 1: one request at a time, greedy with EOS ignored. Every run has a fresh\n"
    "random prompt of --prompt-len tokens (so the prefix cache never hits, and the\n"
    "whole prompt is one step unless --max-batched-tokens is smaller) and generates\n"
    "--decode-tokens tokens. Prints the time to first token (TTFT: the prompt's\n"
    "prefill and the first sample) and the decode rate (the tokens after the first\n"
    "over the time after the first), medians of --repeats runs after one untimed\n"
    "warm-up run. With --peak-gbps, also the bandwidth floor of a decode step (the\n"
    "plan's weight bytes read once at that rate) and the fraction of it reached.\n"
    "\n"
    "options:\n"
    "  --prompt-len N           prompt tokens (default 1024)\n"
    "  --decode-tokens N        new tokens of each run (default 128, at least 2)\n"
    "  --repeats N              timed runs (default 5)\n"
    "  --peak-gbps G            memory bandwidth in GB/s (1e9 bytes/s), e.g. 4280 for\n"
    "                           the copy rate measured on an H200\n"
    "  --seed S                 seed of the random prompts (default 0)\n"
    "  --json FILE              write the results (and the command) as JSON\n"
    "\n"
    "KILN_DEVICE_SAMPLING=0 in the environment samples on the host instead of the\n"
    "device, for an A/B run. Exit status: 0 ok, 2 bad arguments or plan, 1 internal\n"
    "error.\n";

double Median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Settings {
  long long prompt_len = 1024, decode_tokens = 128, repeats = 5, seed = 0;
  double peak_gbps = 0; // 0: not given
};

// The flags of this command, checked before the plan is read.
Status ParseSettings(const ParsedArgs &a, Settings *s) {
  auto integer = [&](const char *name, long long lo, long long hi, long long *v) -> Status {
    if (a.Has(name) && (!ParseInt(a.Get(name), v) || *v < lo || *v > hi))
      return InvalidArgument(std::string(name) + " expects an integer in [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "], got '" + a.Get(name) + "'");
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(integer("--prompt-len", 1, 1 << 24, &s->prompt_len));
  KILN_RETURN_IF_ERROR(integer("--decode-tokens", 2, 1 << 24, &s->decode_tokens));
  KILN_RETURN_IF_ERROR(integer("--repeats", 1, 10000, &s->repeats));
  if (a.Has("--seed") && !ParseInt(a.Get("--seed"), &s->seed))
    return InvalidArgument("--seed expects an integer, got '" + a.Get("--seed") + "'");
  if (a.Has("--peak-gbps") && (!ParseFloat(a.Get("--peak-gbps"), &s->peak_gbps) ||
                               !(s->peak_gbps > 0) || s->peak_gbps > 1e9))
    return InvalidArgument("--peak-gbps expects a bandwidth in GB/s > 0, got '" +
                           a.Get("--peak-gbps") + "'");
  return Status::Ok();
}

struct Run {
  double ttft_ms = 0, decode_tok_s = 0;
};

Status Latency(const ParsedArgs &a, const std::string &command) {
  Settings s;
  KILN_RETURN_IF_ERROR(ParseSettings(a, &s));
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  PipelineOptions options;
  KILN_RETURN_IF_ERROR(ApplyEngineFlags(a, &options));
  options.max_seqs = 1;
  if (!a.Has("--max-batched-tokens"))
    options.max_batched_tokens = std::max<int64_t>(options.max_batched_tokens, s.prompt_len);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[1]));
  DenseDefaultsToCpu(a, *plan, &options);
  const int64_t vocab = DescribePlan(*plan).model.vocab_size;
  if (vocab <= 0)
    return InvalidArgument("the plan does not say its vocabulary size, so no random prompt "
                           "can be made for it");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipe, Pipeline::Create(*plan, options));
  const int64_t context = pipe->context_length();
  if (context > 0 && s.prompt_len + s.decode_tokens > context)
    return InvalidArgument("--prompt-len " + std::to_string(s.prompt_len) +
                           " plus --decode-tokens " + std::to_string(s.decode_tokens) +
                           " exceed the plan's context of " + std::to_string(context) + " tokens");

  std::mt19937_64 rng(static_cast<uint64_t>(s.seed));
  std::vector<Run> runs;
  for (long long i = 0; i <= s.repeats; ++i) { // run 0 warms up
    Request r;
    r.params.sampling.temperature = 0;
    r.params.ignore_eos = true;
    r.params.max_new_tokens = static_cast<int>(s.decode_tokens);
    for (long long t = 0; t < s.prompt_len; ++t)
      r.prompt_ids.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
    KILN_ASSIGN_OR_RETURN(std::vector<Response> out, pipe->Generate({r}));
    if (out.size() != 1 || out[0].generated_length != s.decode_tokens)
      return Internal("a run generated " +
                      std::to_string(out.empty() ? 0 : out[0].generated_length) + " tokens, not " +
                      std::to_string(s.decode_tokens));
    if (i == 0)
      continue;
    const Response &resp = out[0];
    const double decode_s = resp.total_seconds - resp.ttft_seconds;
    runs.push_back({resp.ttft_seconds * 1e3,
                    decode_s > 0 ? static_cast<double>(resp.generated_length - 1) / decode_s : 0});
  }
  std::vector<double> ttft, rate;
  for (const Run &r : runs) {
    ttft.push_back(r.ttft_ms);
    rate.push_back(r.decode_tok_s);
  }
  const double ttft_ms = Median(ttft), tok_s = Median(rate);
  const double tpot_ms = tok_s > 0 ? 1e3 / tok_s : 0;
  const char *env = std::getenv("KILN_DEVICE_SAMPLING");
  const std::string device_sampling = env ? env : "";
  std::printf("%s\n\n", command.c_str());
  std::printf("device %s, batch 1, %lld prompt tokens, %lld new tokens, median of %lld runs\n",
              options.backend.c_str(), s.prompt_len, s.decode_tokens, s.repeats);
  std::printf("time to first token: %.2f ms\n", ttft_ms);
  std::printf("decode: %.1f tok/s (%.3f ms/token)\n", tok_s, tpot_ms);
  const uint64_t weight_bytes = plan->token_weight_bytes();
  nlohmann::ordered_json doc = {
      {"command", command},           {"plan", a.positional[1]},
      {"device", options.backend},    {"kiln_device_sampling", device_sampling},
      {"prompt_len", s.prompt_len},   {"decode_tokens", s.decode_tokens},
      {"repeats", s.repeats},         {"ttft_ms_median", ttft_ms},
      {"decode_tok_s_median", tok_s}, {"tpot_ms_median", tpot_ms},
      {"weight_bytes", weight_bytes}};
  if (s.peak_gbps > 0) {
    const double floor_ms = static_cast<double>(weight_bytes) / (s.peak_gbps * 1e9) * 1e3;
    const double fraction = tpot_ms > 0 ? floor_ms / tpot_ms : 0;
    std::printf("bandwidth floor: %.3f ms/token (%.2f GB of weights a token reads at %.0f GB/s), "
                "%.1f tok/s; "
                "decode reaches %.1f%% of it\n",
                floor_ms, static_cast<double>(weight_bytes) / 1e9, s.peak_gbps,
                floor_ms > 0 ? 1e3 / floor_ms : 0, fraction * 100);
    doc["peak_gbps"] = s.peak_gbps;
    doc["floor_ms_per_token"] = floor_ms;
    doc["fraction_of_floor"] = fraction;
  }
  nlohmann::ordered_json per_run = nlohmann::ordered_json::array();
  for (const Run &r : runs)
    per_run.push_back({{"ttft_ms", r.ttft_ms}, {"decode_tok_s", r.decode_tok_s}});
  doc["runs"] = per_run;
  if (a.Has("--json"))
    KILN_RETURN_IF_ERROR(WriteText(a.Get("--json"), doc.dump(2) + "\n"));
  return Status::Ok();
}

} // namespace

int BenchLatencyMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::set<std::string> values = {"--prompt-len", "--decode-tokens", "--repeats",
                                  "--peak-gbps",  "--seed",          "--json"};
  values.insert(kEngineOptions.begin(), kEngineOptions.end());
  std::set<std::string> flags(kEngineFlags.begin(), kEngineFlags.end());
  std::string err = ParseArgs(args, values, flags, {}, &a);
  if (a.help) {
    std::printf("%s\n%s", kUsage, kEngineUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("bench latency", err, kUsage);
  if (a.positional.size() != 2 || a.positional[0] != "latency")
    return Usage("bench latency", "expected `latency` and one plan file", kUsage);
  std::string command = "kiln bench";
  for (const std::string &s : args)
    command += " " + s;
  Status st = Latency(a, command);
  return st.ok() ? kExitOk : Fail("bench latency", st);
}

} // namespace kiln::cli
