// kiln bench serve: load a running server (kiln serve, or any server of the
// OpenAI completions API) at a request rate or a concurrency, and report
// throughput, TTFT, TPOT, end-to-end latency and the effective throughput
// under an SLA (DeepSpeed-FastGen's definition).
#include "cli.h"
#include "cli_args.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln bench serve --url http://HOST:PORT (--rate R | --concurrency C) [options]\n"
    "\n"
    "Sends --num-prompts streaming /v1/completions requests to a running server: at\n"
    "--rate R requests a second (Poisson arrivals, seeded), or with --concurrency C\n"
    "requests always in flight. Each prompt is --input-len random token ids (so no\n"
    "prefix is shared) and asks for --output-len tokens with EOS ignored, greedy.\n"
    "Reports, over the requests that succeeded:\n"
    "  throughput    requests/s, output tokens/s and all tokens/s over the run\n"
    "  TTFT          arrival to the first streamed token (mean, p50, p99)\n"
    "  TPOT          per request, (end - first token) / (output tokens - 1)\n"
    "  E2E           arrival to the last token\n"
    "  goodput       requests/s that met the SLA (DeepSpeed-FastGen's effective\n"
    "                throughput): TTFT <= prompt tokens / --sla-prompt-tps, and an\n"
    "                output rate after the first token >= --sla-gen-tps\n"
    "Failed requests (a refusal such as 503 or 429, a dropped connection) are counted\n"
    "by reason and left out of the latencies.\n"
    "\n"
    "options:\n"
    "  --url URL                the server, http://HOST:PORT (https is not supported)\n"
    "  --api-key-file FILE      a file holding the API key (or KILN_API_KEY in the\n"
    "                           environment); none: no Authorization header\n"
    "  --rate R                 requests a second, > 0\n"
    "  --concurrency C          requests in flight at once, >= 1\n"
    "  --num-prompts N          requests to send (default 64)\n"
    "  --input-len N            prompt tokens (default 128)\n"
    "  --output-len N           tokens to generate (default 64)\n"
    "  --max-token-id N         prompt ids are drawn from [1, N) (default 1000; at\n"
    "                           most the model's vocabulary)\n"
    "  --model NAME             the request's model field (default: none)\n"
    "  --sla-prompt-tps T       the prompt SLA's tokens/s (default 512, as FastGen)\n"
    "  --sla-gen-tps G          the generation SLA's tokens/s (default 4)\n"
    "  --max-connections N      client threads with --rate (default 256): arrivals\n"
    "                           past it wait, and are reported as late\n"
    "  --timeout-s S            one request's limit (default 600)\n"
    "  --seed S                 prompts and arrivals (default 0)\n"
    "  --json FILE              write the summary and every request as JSON\n"
    "\n"
    "Exit status: 0 when the run finished (failures are reported, not fatal), 2 bad\n"
    "arguments or a server that cannot be reached, 1 internal error.\n";

using Clock = std::chrono::steady_clock;

struct Settings {
  std::string host, key, model;
  int port = 0;
  double rate = 0, sla_prompt_tps = 512, sla_gen_tps = 4, timeout_s = 600;
  long long concurrency = 0, num_prompts = 64, input_len = 128, output_len = 64;
  long long max_token_id = 1000, max_connections = 256, seed = 0;
};

struct Result {
  int status = 0;          // HTTP status; 0: no response
  std::string error;       // why it failed; "" when it succeeded
  double start_s = 0;      // when it was sent, from the run's start
  double late_s = 0;       // how long it waited for a client thread (--rate)
  double ttft_s = 0, e2e_s = 0;
  long long prompt_tokens = 0, output_tokens = 0;
  bool ok() const { return status == 200 && error.empty(); }
};

Status ParseSettings(const ParsedArgs &a, Settings *s) {
  std::smatch m;
  const std::string url = a.Get("--url");
  static const std::regex kUrl(R"(http://([^/:]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5})/?)");
  if (!std::regex_match(url, m, kUrl))
    return InvalidArgument("--url expects http://HOST:PORT, got '" + url + "'");
  s->host = m[1];
  if (s->host.size() > 2 && s->host.front() == '[')
    s->host = s->host.substr(1, s->host.size() - 2);
  s->port = std::atoi(m[2].str().c_str());
  if (s->port < 1 || s->port > 65535)
    return InvalidArgument("--url: port " + m[2].str() + " is not in [1, 65535]");
  auto integer = [&](const char *name, long long lo, long long hi, long long *v) -> Status {
    if (a.Has(name) && (!ParseInt(a.Get(name), v) || *v < lo || *v > hi))
      return InvalidArgument(std::string(name) + " expects an integer in [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "], got '" + a.Get(name) + "'");
    return Status::Ok();
  };
  auto number = [&](const char *name, double lo, double hi, double *v) -> Status {
    if (a.Has(name) && (!ParseFloat(a.Get(name), v) || !(*v > lo) || *v > hi))
      return InvalidArgument(std::string(name) + " expects a number in (" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "], got '" + a.Get(name) + "'");
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(integer("--concurrency", 1, 100000, &s->concurrency));
  KILN_RETURN_IF_ERROR(number("--rate", 0, 1e6, &s->rate));
  if (a.Has("--rate") == a.Has("--concurrency"))
    return InvalidArgument("give exactly one of --rate and --concurrency");
  KILN_RETURN_IF_ERROR(integer("--num-prompts", 1, 10000000, &s->num_prompts));
  KILN_RETURN_IF_ERROR(integer("--input-len", 1, 1 << 24, &s->input_len));
  KILN_RETURN_IF_ERROR(integer("--output-len", 1, 1 << 24, &s->output_len));
  KILN_RETURN_IF_ERROR(integer("--max-token-id", 2, int64_t{1} << 31, &s->max_token_id));
  KILN_RETURN_IF_ERROR(integer("--max-connections", 1, 100000, &s->max_connections));
  KILN_RETURN_IF_ERROR(number("--sla-prompt-tps", 0, 1e12, &s->sla_prompt_tps));
  KILN_RETURN_IF_ERROR(number("--sla-gen-tps", 0, 1e12, &s->sla_gen_tps));
  KILN_RETURN_IF_ERROR(number("--timeout-s", 0, 1e6, &s->timeout_s));
  if (a.Has("--seed") && !ParseInt(a.Get("--seed"), &s->seed))
    return InvalidArgument("--seed expects an integer, got '" + a.Get("--seed") + "'");
  s->model = a.Get("--model");
  if (a.Has("--api-key-file")) {
    std::ifstream f(a.Get("--api-key-file"));
    if (!f || !std::getline(f, s->key))
      return InvalidArgument("cannot read a key from --api-key-file '" + a.Get("--api-key-file") +
                             "'");
    while (!s->key.empty() && std::isspace(static_cast<unsigned char>(s->key.back())))
      s->key.pop_back();
  } else if (const char *k = std::getenv("KILN_API_KEY")) {
    s->key = k;
  }
  return Status::Ok();
}

httplib::Client MakeClient(const Settings &s) {
  httplib::Client c(s.host, s.port);
  const auto limit = std::chrono::microseconds(static_cast<int64_t>(s.timeout_s * 1e6));
  c.set_connection_timeout(std::chrono::seconds(10));
  c.set_read_timeout(limit);
  c.set_write_timeout(limit);
  return c;
}

// One streaming completion; fills the latencies of `r` (sent at `t0`).
void Send(const Settings &s, const std::string &body, Clock::time_point run_start, Result *r) {
  httplib::Client client = MakeClient(s);
  const Clock::time_point t0 = Clock::now();
  r->start_s = std::chrono::duration<double>(t0 - run_start).count();
  std::string pending, whole;
  bool first = false, done = false;
  auto on_line = [&](const std::string &line) {
    if (line.rfind("data: ", 0) != 0)
      return;
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      done = true;
      return;
    }
    auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object())
      return;
    if (j.contains("error") && r->error.empty())
      r->error = j["error"].value("message", "an error event");
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() && !first) {
      const auto &c = j["choices"][0];
      if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty()) {
        first = true;
        r->ttft_s = std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      r->prompt_tokens = j["usage"].value("prompt_tokens", 0LL);
      r->output_tokens = j["usage"].value("completion_tokens", 0LL);
    }
  };
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (!s.key.empty())
    req.set_header("Authorization", "Bearer " + s.key);
  req.content_receiver = [&](const char *data, size_t n, uint64_t, uint64_t) {
    if (whole.size() < 4096)
      whole.append(data, std::min<size_t>(n, 4096));
    pending.append(data, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      on_line(line);
      pending.erase(0, nl + 1);
    }
    return true;
  };
  auto res = client.send(req);
  r->e2e_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!res) {
    r->error = "no response: " + httplib::to_string(res.error());
    return;
  }
  r->status = res->status;
  if (res->status != 200) {
    auto j = nlohmann::json::parse(whole, nullptr, false);
    r->error = "HTTP " + std::to_string(res->status) +
               (j.is_object() && j.contains("error") && j["error"].is_object()
                    ? ": " + j["error"].value("message", "")
                    : "");
  } else if (!done && r->error.empty()) {
    r->error = "the stream ended without [DONE]";
  } else if (!first && r->error.empty()) {
    r->error = "no token was streamed";
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const double at = p / 100 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at)), hi = static_cast<size_t>(std::ceil(at));
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

double Mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

Status BenchServe(const ParsedArgs &a, const std::string &command) {
  Settings s;
  KILN_RETURN_IF_ERROR(ParseSettings(a, &s));
  {
    httplib::Client probe = MakeClient(s);
    httplib::Headers h;
    if (!s.key.empty())
      h.emplace("Authorization", "Bearer " + s.key);
    auto res = probe.Get("/health", h);
    if (!res)
      return InvalidArgument("cannot reach " + a.Get("--url") + " (" +
                             httplib::to_string(res.error()) + " error): is the server running?");
  }
  std::mt19937_64 rng(static_cast<uint64_t>(s.seed));
  std::vector<std::string> bodies;
  for (long long i = 0; i < s.num_prompts; ++i) {
    nlohmann::json ids = nlohmann::json::array();
    for (long long t = 0; t < s.input_len; ++t)
      ids.push_back(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(s.max_token_id - 1)));
    nlohmann::json body = {{"prompt", ids},          {"max_tokens", s.output_len},
                           {"temperature", 0},       {"ignore_eos", true},
                           {"stream", true},         {"stream_options", {{"include_usage", true}}}};
    if (!s.model.empty())
      body["model"] = s.model;
    bodies.push_back(body.dump());
  }
  // Arrival offsets: Poisson at --rate, or none (as fast as slots free up).
  std::vector<double> arrival(static_cast<size_t>(s.num_prompts), 0.0);
  if (s.rate > 0) {
    std::exponential_distribution<double> gap(s.rate);
    double t = 0;
    for (double &x : arrival) {
      x = t;
      t += gap(rng);
    }
  }
  std::vector<Result> results(bodies.size());
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < bodies.size();) {
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(arrival[i]));
      std::this_thread::sleep_until(due);
      results[i].late_s = std::max(0.0, std::chrono::duration<double>(Clock::now() - due).count());
      Send(s, bodies[i], start, &results[i]);
    }
  };
  const long long threads =
      std::min<long long>(s.rate > 0 ? s.max_connections : s.concurrency, s.num_prompts);
  std::vector<std::thread> pool;
  for (long long t = 0; t < threads; ++t)
    pool.emplace_back(worker);
  for (std::thread &t : pool)
    t.join();
  const double duration = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> ttft, tpot, e2e;
  long long ok = 0, out_tokens = 0, in_tokens = 0, good = 0, late = 0;
  std::map<std::string, long long> failed;
  for (const Result &r : results) {
    late += s.rate > 0 && r.late_s > 0.05; // with --concurrency, waiting is the point
    if (!r.ok()) {
      failed[r.status ? "HTTP " + std::to_string(r.status) : r.error.substr(0, 60)]++;
      continue;
    }
    ++ok;
    out_tokens += r.output_tokens;
    in_tokens += r.prompt_tokens;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    const double gen_s = r.e2e_s - r.ttft_s;
    if (r.output_tokens > 1)
      tpot.push_back(gen_s / static_cast<double>(r.output_tokens - 1));
    const bool prompt_ok = r.ttft_s <= static_cast<double>(r.prompt_tokens) / s.sla_prompt_tps;
    const bool gen_ok = r.output_tokens <= 1 || gen_s <= 0 ||
                        static_cast<double>(r.output_tokens - 1) / gen_s >= s.sla_gen_tps;
    good += prompt_ok && gen_ok;
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%g", s.rate);
  const std::string mode = s.rate > 0 ? std::string("rate ") + rate + " req/s"
                                      : "concurrency " + std::to_string(s.concurrency);
  std::printf("kiln bench serve: %s, %lld prompts of %lld tokens, %lld new tokens each\n",
              mode.c_str(), s.num_prompts, s.input_len, s.output_len);
  std::printf("  %-26s %lld of %lld", "succeeded", ok, s.num_prompts);
  for (const auto &f : failed)
    std::printf(", %lld %s", f.second, f.first.c_str());
  std::printf("\n  %-26s %.2f s\n", "duration", duration);
  std::printf("  %-26s %.2f req/s, %.1f output tok/s, %.1f total tok/s\n", "throughput",
              static_cast<double>(ok) / duration, static_cast<double>(out_tokens) / duration,
              static_cast<double>(out_tokens + in_tokens) / duration);
  std::printf("  %-26s %.2f req/s (%lld of %lld met TTFT <= prompt/%g tok/s and >= %g tok/s)\n",
              "goodput (SLA)", static_cast<double>(good) / duration, good, ok, s.sla_prompt_tps,
              s.sla_gen_tps);
  std::printf("  %-26s %10s %10s %10s\n", "latency (ms)", "mean", "p50", "p99");
  for (auto [name, v] : {std::pair<const char *, std::vector<double> *>{"TTFT", &ttft},
                         {"TPOT", &tpot},
                         {"E2E", &e2e}})
    std::printf("  %-26s %10.2f %10.2f %10.2f\n", name, Mean(*v) * 1e3, Percentile(*v, 50) * 1e3,
                Percentile(*v, 99) * 1e3);
  if (late > 0)
    std::printf("  %lld requests were sent more than 50 ms after their arrival time (raise "
                "--max-connections)\n",
                late);
  if (a.Has("--json")) {
    nlohmann::ordered_json per = nlohmann::ordered_json::array();
    for (const Result &r : results)
      per.push_back({{"status", r.status},
                     {"error", r.error},
                     {"start_s", r.start_s},
                     {"late_s", r.late_s},
                     {"ttft_s", r.ttft_s},
                     {"e2e_s", r.e2e_s},
                     {"prompt_tokens", r.prompt_tokens},
                     {"output_tokens", r.output_tokens}});
    nlohmann::ordered_json lat = nlohmann::ordered_json::object();
    for (auto [name, v] : {std::pair<const char *, std::vector<double> *>{"ttft_s", &ttft},
                           {"tpot_s", &tpot},
                           {"e2e_s", &e2e}})
      lat[name] = {{"mean", Mean(*v)}, {"p50", Percentile(*v, 50)}, {"p99", Percentile(*v, 99)}};
    nlohmann::ordered_json doc = {
        {"command", command},
        {"mode", s.rate > 0 ? "rate" : "concurrency"},
        {"rate", s.rate},
        {"concurrency", s.concurrency},
        {"num_prompts", s.num_prompts},
        {"succeeded", ok},
        {"failed", failed},
        {"duration_s", duration},
        {"request_throughput", static_cast<double>(ok) / duration},
        {"output_throughput", static_cast<double>(out_tokens) / duration},
        {"total_token_throughput", static_cast<double>(out_tokens + in_tokens) / duration},
        {"goodput", static_cast<double>(good) / duration},
        {"met_sla", good},
        {"sla", {{"prompt_tps", s.sla_prompt_tps}, {"gen_tps", s.sla_gen_tps}}},
        {"latency", lat},
        {"late", late},
        {"requests", per}};
    std::ofstream f(a.Get("--json"));
    f << doc.dump(2) << "\n";
    if (!f)
      return InvalidArgument("cannot write --json '" + a.Get("--json") + "'");
  }
  return Status::Ok();
}

} // namespace

int BenchServeMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  const std::set<std::string> values = {
      "--url",          "--api-key-file", "--rate",           "--concurrency",
      "--num-prompts",  "--input-len",    "--output-len",     "--max-token-id",
      "--model",        "--sla-prompt-tps", "--sla-gen-tps",  "--max-connections",
      "--timeout-s",    "--seed",         "--json"};
  std::string err = ParseArgs(args, values, {}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("bench serve", err, kUsage);
  if (a.positional.size() != 1 || a.positional[0] != "serve")
    return Usage("bench serve", "takes no plan: it loads a running server (--url)", kUsage);
  if (!a.Has("--url"))
    return Usage("bench serve", "--url is required", kUsage);
  std::string command = "kiln bench";
  for (const std::string &x : args)
    command += " " + x;
  Status st = BenchServe(a, command);
  return st.ok() ? kExitOk : Fail("bench serve", st);
}

} // namespace kiln::cli
