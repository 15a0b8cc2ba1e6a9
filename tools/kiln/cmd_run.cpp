// kiln run: generates text from a plan with its embedded tokenizer,
// streaming it to stdout, and reports prefill and decode speed on stderr.
#include "cli.h"
#include "cli_args.h"
#include "kiln/cpu.h"
#include "kiln/generate.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln_schema/plan_generated.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>
#include <sstream>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln run model.plan (-p TEXT | --prompt-ids IDS) [options]\n"
    "\n"
    "Generates a continuation of the prompt and streams it to stdout. Prefill\n"
    "and decode speed go to stderr. Sampling options default to the plan's\n"
    "generation defaults (see `kiln inspect`).\n"
    "\n"
    "options:\n"
    "  -p, --prompt TEXT        prompt text, tokenized with the plan's tokenizer\n"
    "                           (special tokens such as BOS are added)\n"
    "  --prompt-ids 1,2,3       prompt as token ids instead of text\n"
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
    "  --threads N              cap the CPU threads of matrix products (0: all cores)\n"
    "  --ignore-eos             do not stop at EOS (for benchmarks and tests)\n"
    "  --no-stream              print the text once, at the end\n"
    "\n"
    "Generation stops at any EOS id of the plan, a --stop-token-id, a --stop text,\n"
    "at --max-new-tokens, or when the sequence fills the model's context length.\n"
    "Exit status: 0 ok, 2 bad arguments or plan, 1 internal error.\n";

Status ParseIds(const std::string &text, std::vector<int32_t> *ids) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long v;
    if (!ParseInt(item, &v) || v < 0 || v > std::numeric_limits<int32_t>::max())
      return InvalidArgument("--prompt-ids: '" + item + "' is not a token id");
    ids->push_back(static_cast<int32_t>(v));
  }
  if (ids->empty())
    return InvalidArgument("--prompt-ids is empty");
  return Status::Ok();
}

// Parses `name`'s value as a float into *out when the option is given.
Status ParseFloatOption(const ParsedArgs &a, const char *name, float *out) {
  double f;
  if (!a.Has(name))
    return Status::Ok();
  if (!ParseFloat(a.Get(name), &f))
    return InvalidArgument(std::string(name) + " expects a number");
  *out = static_cast<float>(f);
  return Status::Ok();
}

// Parses `name`'s value as an integer in [lo, hi] into *out when given.
Status ParseIntOption(const ParsedArgs &a, const char *name, long long lo, long long hi, int *out) {
  long long i;
  if (!a.Has(name))
    return Status::Ok();
  if (!ParseInt(a.Get(name), &i) || i < lo || i > hi)
    return InvalidArgument(std::string(name) + " expects an integer in [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "]");
  *out = static_cast<int>(i);
  return Status::Ok();
}

Status ApplyOptions(const ParsedArgs &a, GenerateOptions *o) {
  long long i;
  if (a.Has("--max-new-tokens")) {
    if (!ParseInt(a.Get("--max-new-tokens"), &i) || i < 0 || i > (1 << 30))
      return InvalidArgument("--max-new-tokens expects an integer >= 0");
    o->max_new_tokens = static_cast<int>(i);
  }
  if (a.Has("--top-k")) {
    if (!ParseInt(a.Get("--top-k"), &i) || i < 0 || i > std::numeric_limits<int>::max())
      return InvalidArgument("--top-k expects an integer >= 0");
    o->sampling.top_k = static_cast<int>(i);
  }
  SamplingParams &s = o->sampling;
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--temperature", &s.temperature));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--top-p", &s.top_p));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--min-p", &s.min_p));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--repetition-penalty", &s.repetition_penalty));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--presence-penalty", &s.presence_penalty));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--frequency-penalty", &s.frequency_penalty));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--logprobs", 0, kMaxLogprobs, &s.logprobs));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--min-new-tokens", 0, 1 << 30, &o->min_new_tokens));
  if (a.Has("--seed")) {
    if (!ParseInt(a.Get("--seed"), &i))
      return InvalidArgument("--seed expects an integer");
    s.seed = static_cast<uint64_t>(i);
  }
  o->stop = a.All("--stop");
  for (const std::string &id : a.All("--stop-token-id")) {
    if (!ParseInt(id, &i) || i < 0 || i > std::numeric_limits<int32_t>::max())
      return InvalidArgument("--stop-token-id: '" + id + "' is not a token id");
    o->stop_token_ids.push_back(static_cast<int32_t>(i));
  }
  if (a.Has("--ignore-eos"))
    o->ignore_eos = true;
  return ValidateRequestParams(*o);
}

// One JSON line per token: {"token": id, "logprob": lp, "top": [[id, lp], ...]}.
// JSON has no infinity: a -inf logprob (a masked token) is written as null.
void PrintLogprobs(const std::vector<SampledToken> &samples) {
  for (const SampledToken &s : samples) {
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob &t : s.top)
      top.push_back({t.token, t.logprob});
    nlohmann::ordered_json line = {{"token", s.token}, {"logprob", s.logprob}, {"top", top}};
    std::fprintf(stderr, "%s\n", line.dump().c_str());
  }
}

// NumPy .npy v1.0: magic, header length, a Python dict literal padded so the
// data starts at a multiple of 64 bytes, then little-endian float32 data.
Status WriteNpy(const std::string &path, const std::vector<float> &data, int64_t rows,
                int64_t cols) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                     ", " + std::to_string(cols) + "), }";
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return InvalidArgument("cannot open '" + path + "' for writing");
  uint16_t len = static_cast<uint16_t>(dict.size());
  unsigned char head[10] = {0x93,
                            'N',
                            'U',
                            'M',
                            'P',
                            'Y',
                            1,
                            0,
                            static_cast<unsigned char>(len & 0xff),
                            static_cast<unsigned char>(len >> 8)};
  bool ok = std::fwrite(head, 1, 10, f) == 10 &&
            std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? Status::Ok() : Internal("write to '" + path + "' failed");
}

Status Run(const ParsedArgs &a) {
  if (a.Has("--prompt") == a.Has("--prompt-ids"))
    return InvalidArgument("give exactly one of -p/--prompt and --prompt-ids");
  GenerateOptions options;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[0]));
  options = GenerateOptions::FromPlan(*plan);
  KILN_RETURN_IF_ERROR(ApplyOptions(a, &options));
  if (a.Has("--threads")) {
    long long n;
    if (!ParseInt(a.Get("--threads"), &n) || n < 0 || n > 1024)
      return InvalidArgument("--threads expects an integer in [0, 1024]");
    SetCpuThreads(static_cast<int>(n));
  }

  std::unique_ptr<Tokenizer> tokenizer;
  const flatbuffers::String *tj = plan->fb().tokenizer_json();
  if (tj && tj->size() > 0) {
    auto t = Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size()));
    if (t.ok())
      tokenizer = std::move(*t);
    else if (a.Has("--prompt"))
      return t.status().WithContext("the plan's tokenizer");
  }
  std::vector<int32_t> prompt;
  if (a.Has("--prompt-ids")) {
    KILN_RETURN_IF_ERROR(ParseIds(a.Get("--prompt-ids"), &prompt));
  } else {
    if (!tokenizer)
      return InvalidArgument("the plan has no tokenizer: use --prompt-ids");
    KILN_ASSIGN_OR_RETURN(prompt, tokenizer->Encode(a.Get("--prompt"), true));
  }

  KILN_ASSIGN_OR_RETURN(std::unique_ptr<DecoderSession> session, DecoderSession::Create(*plan));
  std::vector<float> logits;
  int64_t vocab = 0;
  if (a.Has("--dump-logits")) {
    session->set_logits_hook([&](const float *l, int64_t v) {
      vocab = v;
      logits.insert(logits.end(), l, l + v);
    });
  }
  session->set_tokenizer(tokenizer.get());
  bool stream = !a.Has("--no-stream");
  auto emit = [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  // Without a tokenizer the output is token ids.
  auto on_step = [&](const GenerateStep &step) {
    if (stream)
      emit(tokenizer ? step.text : std::to_string(step.token) + " ");
    return true;
  };
  KILN_ASSIGN_OR_RETURN(GenerateResult r, session->GenerateStreaming(prompt, options, on_step));
  if (stream) {
    emit("\n");
  } else if (tokenizer) {
    emit(r.text + "\n");
  } else {
    std::string ids;
    for (int32_t t : r.tokens)
      ids += std::to_string(t) + " ";
    emit(ids + "\n");
  }
  PrintLogprobs(r.logprobs);
  auto rate = [](double n, double s) { return s > 0 ? n / s : 0.0; };
  std::fprintf(stderr,
               "prefill: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s "
               "(%.1f tok/s); finish: %s\n",
               r.prompt_tokens, r.prefill_seconds, rate(r.prompt_tokens, r.prefill_seconds),
               r.decode_steps, r.decode_seconds, rate(r.decode_steps, r.decode_seconds),
               FinishReasonName(r.finish));
  if (a.Has("--output-ids")) {
    std::string json = "[";
    for (size_t i = 0; i < r.tokens.size(); ++i)
      json += (i ? "," : "") + std::to_string(r.tokens[i]);
    json += "]\n";
    std::FILE *f = std::fopen(a.Get("--output-ids").c_str(), "wb");
    bool ok = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
    if (f)
      ok = std::fclose(f) == 0 && ok;
    if (!ok)
      return InvalidArgument("cannot write '" + a.Get("--output-ids") + "'");
  }
  if (a.Has("--dump-logits")) {
    int64_t steps = vocab > 0 ? static_cast<int64_t>(logits.size()) / vocab : 0;
    KILN_RETURN_IF_ERROR(WriteNpy(a.Get("--dump-logits"), logits, steps, vocab));
  }
  return Status::Ok();
}

} // namespace

int RunMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err =
      ParseArgs(args,
                {"--prompt", "--prompt-ids", "--max-new-tokens", "--temperature", "--top-k",
                 "--top-p", "--min-p", "--repetition-penalty", "--presence-penalty",
                 "--frequency-penalty", "--seed", "--stop", "--stop-token-id", "--min-new-tokens",
                 "--logprobs", "--dump-logits", "--output-ids", "--threads"},
                {"--no-stream", "--ignore-eos"}, {{"-p", "--prompt"}}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("run", err, kUsage);
  if (a.positional.size() != 1)
    return Usage("run", "expected one plan file", kUsage);
  Status st = Run(a);
  return st.ok() ? kExitOk : Fail("run", st);
}

} // namespace kiln::cli
