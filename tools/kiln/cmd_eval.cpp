// kiln eval ppl: the perplexity of a plan's model over a text, by sliding
// windows (kiln/perplexity.h does the work; docs/eval.md).
#include "cli.h"
#include "cli_args.h"
#include "run_options.h"

#include "kiln/perplexity.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace kiln::cli {
namespace {

const char kEvalUsage[] =
    "usage: kiln eval ppl model.plan --text FILE [options]\n"
    "\n"
    "evaluations:\n"
    "  ppl    the perplexity of the plan's model over a text (kiln eval ppl --help)\n";

const char kUsage[] =
    "usage: kiln eval ppl model.plan --text FILE [--window N] [--stride N]\n"
    "                     [--max-tokens N] [--threads N] [--device DEV] [--json]\n"
    "\n"
    "Computes the perplexity of the plan's model over a text, as Hugging Face's\n"
    "\"perplexity of fixed-length models\" does (docs/eval.md), so builds of one\n"
    "model (fp32, bf16, int8) can be compared with each other and with Python:\n"
    "  - the text is encoded with the plan's tokenizer, special tokens added (the\n"
    "    BOS of tokenizers that add one), into N tokens;\n"
    "  - windows of --window tokens start every --stride tokens: window k covers\n"
    "    [begin, end = min(begin + window, N)), and the last is the first to reach N;\n"
    "  - a window scores only its tokens past the previous window's end, token t by\n"
    "    the log-softmax (in double precision) of the logits at t - 1, so a window's\n"
    "    first token is never scored;\n"
    "  - perplexity = exp(summed negative log-likelihood / scored tokens).\n"
    "The result goes to stdout; a progress line goes to stderr when it is a terminal.\n"
    "\n"
    "options:\n"
    "  --text FILE              the text, UTF-8 ('-': stdin); its bytes exactly\n"
    "  --window N               tokens of one window, at least 2 (default: the plan's\n"
    "                           context length, at most 1024)\n"
    "  --stride N               tokens from one window's start to the next, 1..window\n"
    "                           (default: window / 2; = window: disjoint windows)\n"
    "  --max-tokens N           score only the text's first N tokens (a quick check)\n"
    "  --max-batched-tokens N   plans with the ragged interface: tokens of one step; a\n"
    "                           longer window runs as several steps (default 512)\n"
    "  --threads N              cap the CPU threads of matrix products (0: all cores)\n"
    "  --device DEV             what runs the plan: cpu, cuda (GPU 0) or cuda:N (default\n"
    "                           cuda when this kiln has it and a GPU is visible, else cpu;\n"
    "                           cpu for a dense plan, which only the cpu runs here);\n"
    "                           --backend DEV is the same\n"
    "  --json                   print one JSON object: perplexity, nll_per_token, tokens,\n"
    "                           scored, windows, window, stride, seconds\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, plan (no tokenizer; an encoder) or text\n"
    "(empty, fewer than 2 tokens, not UTF-8), 1 internal error (e.g. logits that are\n"
    "not finite).\n";

// Option `name` as an integer in [lo, hi]; `out` is left alone when absent.
Status IntOption(const ParsedArgs &a, const char *name, long long lo, long long hi, int64_t *out) {
  if (!a.Has(name))
    return Status::Ok();
  long long v = 0;
  if (!ParseInt(a.Get(name), &v) || v < lo || v > hi)
    return InvalidArgument(std::string(name) + " expects an integer in [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "], got '" + a.Get(name) + "'");
  *out = v;
  return Status::Ok();
}

// "3/10 windows  1536 tokens  812 tok/s" on one terminal line, redrawn at
// most ten times a second (and for the last window).
class ProgressLine {
public:
  void Update(const PerplexityProgress &p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.windows_done == p.windows;
    if (!last && shown_ && now - last_ < std::chrono::milliseconds(100))
      return;
    last_ = now;
    shown_ = true;
    const double rate = p.seconds > 0 ? static_cast<double>(p.tokens_run) / p.seconds : 0;
    std::fprintf(stderr, "\r\033[K%lld/%lld windows  %lld tokens  %.0f tok/s",
                 static_cast<long long>(p.windows_done), static_cast<long long>(p.windows),
                 static_cast<long long>(p.tokens_run), rate);
    std::fflush(stderr);
  }
  void End() {
    if (shown_)
      std::fprintf(stderr, "\n");
  }

private:
  std::chrono::steady_clock::time_point last_;
  bool shown_ = false;
};

Status Eval(const ParsedArgs &a) {
  if (!a.Has("--text"))
    return InvalidArgument("--text FILE is required (the text to score; '-': stdin)");
  PerplexityOptions o;
  constexpr long long kMax = 1LL << 40;
  KILN_RETURN_IF_ERROR(IntOption(a, "--window", 2, kMax, &o.window));
  KILN_RETURN_IF_ERROR(IntOption(a, "--stride", 1, kMax, &o.stride));
  KILN_RETURN_IF_ERROR(IntOption(a, "--max-tokens", 2, kMax, &o.max_tokens));
  KILN_RETURN_IF_ERROR(IntOption(a, "--max-batched-tokens", 1, 1 << 20, &o.step_tokens));
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  if (a.Has("--stride") && a.Has("--window") && o.stride > o.window)
    return InvalidArgument("--stride " + std::to_string(o.stride) + " is longer than --window " +
                           std::to_string(o.window) + ": the windows would skip tokens");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[1]));
  KILN_ASSIGN_OR_RETURN(o.device, DeviceFlag(a));
  // As kiln run: a dense plan runs on the cpu unless a device is named.
  if (!a.Has("--device") && !a.Has("--backend") && GraphInterface(*plan) != PlanInterface::kRagged)
    o.device = "cpu";
  KILN_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(a.Get("--text"), "--text"));

  ProgressLine line;
  PerplexityCallback progress;
  if (::isatty(STDERR_FILENO))
    progress = [&line](const PerplexityProgress &p) { line.Update(p); };
  StatusOr<PerplexityResult> r = TextPerplexity(*plan, text, o, progress);
  line.End();
  if (!r.ok())
    return r.status();
  if (a.Has("--json")) {
    nlohmann::ordered_json j = {{"perplexity", r->perplexity}, {"nll_per_token", r->nll_per_token},
                                {"tokens", r->tokens},         {"scored", r->scored},
                                {"windows", r->windows},       {"window", r->window},
                                {"stride", r->stride},         {"seconds", r->seconds}};
    std::printf("%s\n", j.dump().c_str());
    return Status::Ok();
  }
  std::printf("perplexity %.6g  (%.6f nats a token over %lld scored of %lld tokens; %lld windows "
              "of %lld, stride %lld; %.2f s)\n",
              r->perplexity, r->nll_per_token, static_cast<long long>(r->scored),
              static_cast<long long>(r->tokens), static_cast<long long>(r->windows),
              static_cast<long long>(r->window), static_cast<long long>(r->stride), r->seconds);
  return Status::Ok();
}

} // namespace

int EvalMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err = ParseArgs(args,
                              {"--text", "--window", "--stride", "--max-tokens",
                               "--max-batched-tokens", "--threads", "--device", "--backend"},
                              {"--json"}, {}, &a);
  const bool ppl = !a.positional.empty() && a.positional[0] == "ppl";
  if (a.help) {
    std::printf("%s", ppl ? kUsage : kEvalUsage);
    return kExitOk;
  }
  if (!err.empty())
    return ppl ? Usage("eval ppl", err, kUsage) : Usage("eval", err, kEvalUsage);
  if (!ppl)
    return Usage("eval",
                 a.positional.empty() ? "expected an evaluation: ppl"
                                      : "unknown evaluation '" + a.positional[0] + "'",
                 kEvalUsage);
  if (a.positional.size() != 2)
    return Usage("eval ppl", "expected one plan file", kUsage);
  Status st = Eval(a);
  return st.ok() ? kExitOk : Fail("eval ppl", st);
}

} // namespace kiln::cli
