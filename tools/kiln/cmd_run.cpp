// kiln run: generates text from a plan with its embedded tokenizer through
// the pipeline API, streaming it to stdout: one prompt (with prefill and
// decode speed on stderr), or a JSONL file of requests, batched.
#include "cli.h"
#include "cli_args.h"
#include "cmd_run_batch.h"
#include "kiln/chat_template.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln/plan_info.h"
#include "run_options.h"
#include "tp_launch.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln run model.plan (-p TEXT [--chat] | --messages FILE | --prompt-ids IDS |\n"
    "                            --prompts-file FILE) [options]\n"
    "\n"
    "Generates a continuation of the prompt and streams it to stdout. Prefill\n"
    "and decode speed go to stderr. Sampling options default to the plan's\n"
    "generation defaults (see `kiln inspect`).\n"
    "\n"
    "options:\n"
    "  -p, --prompt TEXT        prompt text, tokenized with the plan's tokenizer\n"
    "                           (special tokens such as BOS are added)\n"
    "  --chat                   render -p as a user message through the plan's chat\n"
    "                           template, with the assistant's turn opened\n"
    "                           (add_generation_prompt); the template writes the\n"
    "                           special tokens, so none are added\n"
    "  --messages FILE.json     like --chat, for a conversation: a JSON list of\n"
    "                           {\"role\", \"content\"} messages, or an object with\n"
    "                           \"messages\" and other template variables (tools, ...)\n"
    "  --show-prompt            print the rendered chat prompt to stderr first\n"
    "  --prompt-ids 1,2,3       prompt as token ids instead of text\n"
    "  --prompts-file FILE      JSONL, one request per line ('-': stdin):\n"
    "                           {\"prompt\": TEXT} or {\"prompt_ids\": [...]}, plus any of\n"
    "                           max_new_tokens, temperature, top_k, top_p, min_p, seed,\n"
    "                           repetition_penalty, presence_penalty, frequency_penalty,\n"
    "                           stop, stop_token_ids, min_new_tokens, ignore_eos, n,\n"
    "                           logprobs (defaults: the flags below). All run batched.\n"
    "                           stdout gets JSONL: {\"index\", \"completion\", \"text\"}\n"
    "                           per token as it streams (not with --no-stream), then one\n"
    "                           {\"index\", \"completion\", \"generated_text\", \"tokens\",\n"
    "                           \"prompt_length\", \"generated_length\", \"finish_reason\",\n"
    "                           \"detail\", \"ttft_ms\", \"total_ms\"} per completion. A bad\n"
    "                           line fails the run, naming the line, before any output.\n"
    "                           Lines past max_tracked wait, and join as others finish\n"
    "  --n N                    completions per request (with --prompts-file)\n"
    "  --max-new-tokens N       stop after N new tokens (>= 0)\n"
    "  --temperature T          0 is greedy; > 0 samples (default from the plan)\n"
    "  --top-k K                sample among the K most likely tokens (0: all)\n"
    "  --top-p P                sample from the smallest set with mass >= P, in (0, 1]\n"
    "  --min-p P                drop tokens less likely than P times the best, in [0, 1]\n"
    "  --repetition-penalty R   divide (multiply if negative) the logits of tokens in the\n"
    "                           prompt or output by R > 0 (default from the plan; 1: off)\n"
    "  --presence-penalty X     subtract X from tokens generated at least once, in [-2, 2]\n"
    "  --frequency-penalty X    subtract X per earlier occurrence in the output, in [-2, 2]\n"
    "  --seed S                 random seed, for reproducible sampling (default 0)\n"
    "  --stop TEXT              end the text before TEXT (repeatable; needs the plan's\n"
    "                           tokenizer); TEXT may span tokens and is never printed\n"
    "  --stop-token-id ID       end at token ID, like EOS (repeatable)\n"
    "  --min-new-tokens N       no EOS, stop id or stop text before N new tokens\n"
    "  --logprobs N             after the run, print one JSON line per new token to stderr:\n"
    "                           {\"token\": id, \"logprob\": lp, \"top\": [[id, lp], ...]}\n"
    "                           with the N (1..20) most likely tokens; logprobs are the\n"
    "                           log-softmax after penalties and temperature, before\n"
    "                           top-k/top-p/min-p (0: off)\n"
    "  --dump-logits FILE.npy   write the last position's logits of every step as\n"
    "                           float32 [steps, vocab]\n"
    "  --output-ids FILE.json   write the generated token ids as a JSON list\n"
    "  --ignore-eos             do not stop at EOS (for benchmarks and tests)\n"
    "  --no-stream              print the text once, at the end\n"
    "\n"
    "Generation stops at any EOS id of the plan, a --stop-token-id, a --stop text,\n"
    "at --max-new-tokens, or when the sequence fills the model's context length.\n"
    "Exit status: 0 ok, 2 bad arguments or plan, 1 internal error.\n";

// Streams one prompt's completion to stdout (the text, or token ids without
// a tokenizer), then the timing line on stderr.
Status RunOne(const ParsedArgs &a, Pipeline &pipe, Request request) {
  std::vector<float> logits;
  int64_t vocab = 0;
  if (a.Has("--dump-logits"))
    pipe.set_logits_hook([&](int64_t, int, const float *l, int64_t v) {
      vocab = v;
      logits.insert(logits.end(), l, l + v);
    });
  const bool stream = !a.Has("--no-stream");
  const bool text = pipe.tokenizer() != nullptr;
  auto emit = [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  auto on_token = [&](const StreamEvent &e) {
    if (stream)
      emit(text ? e.text : std::to_string(e.token) + " ");
    return true;
  };
  KILN_ASSIGN_OR_RETURN(std::vector<Response> out, pipe.Generate({request}, on_token));
  if (out.size() != 1)
    return Internal("expected one response, got " + std::to_string(out.size()));
  const Response &r = out[0];
  if (stream) {
    emit("\n");
  } else if (text) {
    emit(r.generated_text + "\n");
  } else {
    std::string ids;
    for (int32_t t : r.tokens)
      ids += std::to_string(t) + " ";
    emit(ids + "\n");
  }
  for (const SampledToken &s : r.logprobs)
    std::fprintf(stderr, "%s\n", LogprobJson(s).dump().c_str());
  // The first token comes from the prompt's pass; the rest are decode steps.
  const int decode_tokens = std::max(0, r.generated_length - 1);
  const double decode_seconds = r.generated_length > 0 ? r.total_seconds - r.ttft_seconds : 0;
  auto rate = [](double n, double s) { return s > 0 ? n / s : 0.0; };
  std::fprintf(stderr,
               "prefill: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s "
               "(%.1f tok/s); finish: %s\n",
               r.prompt_length, r.ttft_seconds, rate(r.prompt_length, r.ttft_seconds),
               decode_tokens, decode_seconds, rate(decode_tokens, decode_seconds),
               FinishReasonName(r.finish_reason));
  if (a.Has("--output-ids")) {
    std::string json = "[";
    for (size_t i = 0; i < r.tokens.size(); ++i)
      json += (i ? "," : "") + std::to_string(r.tokens[i]);
    KILN_RETURN_IF_ERROR(WriteText(a.Get("--output-ids"), json + "]\n"));
  }
  if (a.Has("--dump-logits")) {
    int64_t steps = vocab > 0 ? static_cast<int64_t>(logits.size()) / vocab : 0;
    KILN_RETURN_IF_ERROR(WriteNpy(a.Get("--dump-logits"), logits, steps, vocab));
  }
  return Status::Ok();
}

// A plan without logits (a BERT-family encoder) cannot generate; say where
// its use is instead of failing on the missing decoder interface.
Status RefuseEncoder(const Plan &plan, const std::string &path) {
  if (GraphInterface(plan) != PlanInterface::kEncoder)
    return Status::Ok();
  return InvalidArgument(path +
                         " is an encoder plan: it outputs token states, not logits, so "
                         "it cannot generate text. Embed texts with it: kiln embed " +
                         path + " --text TEXT (see kiln embed --help)");
}

Status Generate(const ParsedArgs &a, const Plan &plan, Pipeline *pipe);

// --chat and --messages: the plan's chat template over the messages with
// add_generation_prompt, tokenized without special tokens (the template
// writes them), as transformers' apply_chat_template does. bos_token and
// eos_token are the plan's BOS and first EOS token.
Status ChatPrompt(const ParsedArgs &a, const Plan &plan, const Tokenizer &tok, Request *request) {
  KILN_ASSIGN_OR_RETURN(PlanChatTemplate tmpl, PlanChatTemplate::ForPlan(plan, &tok));
  if (tmpl.empty())
    return InvalidArgument(a.positional[0] + " has no chat template (tokenizer_config.json had none)");
  nlohmann::ordered_json messages, extra = nlohmann::ordered_json::object();
  if (a.Has("--messages")) {
    std::ifstream in(a.Get("--messages"));
    if (!in)
      return InvalidArgument("--messages " + a.Get("--messages") + ": cannot read");
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("messages")) {
      messages = j["messages"];
      j.erase("messages");
      extra = j;
    } else {
      messages = j;
    }
    if (!messages.is_array())
      return InvalidArgument("--messages " + a.Get("--messages") +
                             ": expected a JSON list of messages or an object with \"messages\"");
  } else {
    messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", a.Get("--prompt")}}});
  }
  KILN_ASSIGN_OR_RETURN(std::string text, tmpl.Render(messages, true, extra));
  if (a.Has("--show-prompt"))
    std::fprintf(stderr, "%s\n", text.c_str());
  KILN_ASSIGN_OR_RETURN(request->prompt_ids, tok.Encode(text, /*add_special_tokens=*/false));
  return Status::Ok();
}

Status Run(const ParsedArgs &a) {
  const int sources =
      a.Has("--prompt") + a.Has("--prompt-ids") + a.Has("--prompts-file") + a.Has("--messages");
  if (sources != 1)
    return InvalidArgument(
        "give exactly one of -p/--prompt, --prompt-ids, --prompts-file and --messages");
  if (a.Has("--chat") && !a.Has("--prompt"))
    return InvalidArgument("--chat renders -p/--prompt as a user message; give -p");
  if (a.Has("--prompts-file") && (a.Has("--dump-logits") || a.Has("--output-ids")))
    return InvalidArgument("--dump-logits and --output-ids take a single prompt; with "
                           "--prompts-file every response line carries its token ids");
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  PipelineOptions options;
  KILN_RETURN_IF_ERROR(ApplyEngineFlags(a, &options));
  // The communicator and the plan outlive the pipeline that uses them.
  KILN_ASSIGN_OR_RETURN(RankOptions rank_options, RankFlags(a, options.backend));
  KILN_ASSIGN_OR_RETURN(OpenedRank rank, OpenRank(a.positional[0], rank_options));
  const Plan &plan = rank.plan();
  options.backend = rank.device();
  DenseDefaultsToCpu(a, plan, &options);
  KILN_RETURN_IF_ERROR(RefuseEncoder(plan, a.positional[0]));
  options.comm = rank.comm();
  if (rank.follower())
    return RunFollower(plan, options);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipe, Pipeline::Create(plan, options));
  Status st = Generate(a, plan, pipe.get());
  pipe.reset(); // its steps end before the run does
  KILN_RETURN_IF_ERROR(st);
  return EndFollowers(rank.comm());
}

// One prompt or a prompts file through `pipe`.
Status Generate(const ParsedArgs &a, const Plan &plan, Pipeline *pipe) {
  RequestParams params = pipe->DefaultParams();
  KILN_RETURN_IF_ERROR(ApplyRequestFlags(a, &params));
  if (a.Has("--prompts-file"))
    return RunBatch(a, *pipe, params);
  Request request;
  request.params = params;
  if (request.params.n != 1)
    return InvalidArgument("--n > 1 needs --prompts-file, whose output keeps completions apart");
  if (a.Has("--prompt-ids")) {
    KILN_RETURN_IF_ERROR(ParseIds(a.Get("--prompt-ids"), "--prompt-ids", &request.prompt_ids));
  } else if (a.Has("--chat") || a.Has("--messages")) {
    if (!pipe->tokenizer())
      return InvalidArgument("--chat and --messages need the plan's tokenizer");
    KILN_RETURN_IF_ERROR(ChatPrompt(a, plan, *pipe->tokenizer(), &request));
  } else {
    if (!pipe->tokenizer())
      return InvalidArgument("the plan has no tokenizer: use --prompt-ids");
    request.prompt = a.Get("--prompt");
  }
  return RunOne(a, *pipe, std::move(request));
}

} // namespace

int RunMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::set<std::string> values = {"--prompt",      "--prompt-ids", "--prompts-file",
                                  "--dump-logits", "--output-ids", "--messages"};
  std::set<std::string> flags = {"--no-stream", "--chat", "--show-prompt"};
  values.insert(kRequestOptions.begin(), kRequestOptions.end());
  values.insert(kEngineOptions.begin(), kEngineOptions.end());
  values.insert(kTpOptions.begin(), kTpOptions.end());
  flags.insert(kRequestFlags.begin(), kRequestFlags.end());
  flags.insert(kEngineFlags.begin(), kEngineFlags.end());
  std::string err = ParseArgs(args, values, flags, {{"-p", "--prompt"}}, &a);
  if (a.help) {
    std::printf("%s\n%s\n%s", kUsage, kEngineUsage, kTpUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("run", err, kUsage);
  if (a.positional.size() != 1)
    return Usage("run", "expected one plan file", kUsage);
  int launched = kExitOk;
  if (LaunchRanks(a, "run", &launched))
    return launched;
  Status st = Run(a);
  return st.ok() ? kExitOk : Fail("run", InRankContext(st));
}

} // namespace kiln::cli
