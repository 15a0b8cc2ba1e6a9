// kiln run: generates text from a plan with its embedded tokenizer,
// streaming it to stdout, and reports prefill and decode speed on stderr.
#include "cli.h"
#include "cli_args.h"
#include "kiln/cpu.h"
#include "kiln/generate.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln_schema/plan_generated.h"

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
    "  --seed S                 random seed, for reproducible sampling (default 0)\n"
    "  --dump-logits FILE.npy   write the last position's logits of every step as\n"
    "                           float32 [steps, vocab]\n"
    "  --output-ids FILE.json   write the generated token ids as a JSON list\n"
    "  --threads N              cap the CPU threads of matrix products (0: all cores)\n"
    "  --ignore-eos             do not stop at EOS (for benchmarks and tests)\n"
    "  --no-stream              print the text once, at the end\n"
    "\n"
    "Generation stops at any EOS id of the plan, at --max-new-tokens, or when the\n"
    "sequence fills the model's context length.\n"
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

Status ApplyOptions(const ParsedArgs &a, GenerateOptions *o) {
  long long i;
  double f;
  if (a.Has("--max-new-tokens")) {
    if (!ParseInt(a.Get("--max-new-tokens"), &i) || i < 0 || i > (1 << 30))
      return InvalidArgument("--max-new-tokens expects an integer >= 0");
    o->max_new_tokens = static_cast<int>(i);
  }
  if (a.Has("--temperature")) {
    if (!ParseFloat(a.Get("--temperature"), &f))
      return InvalidArgument("--temperature expects a number");
    o->sampling.temperature = static_cast<float>(f);
  }
  if (a.Has("--top-k")) {
    if (!ParseInt(a.Get("--top-k"), &i) || i < 0 || i > std::numeric_limits<int>::max())
      return InvalidArgument("--top-k expects an integer >= 0");
    o->sampling.top_k = static_cast<int>(i);
  }
  if (a.Has("--top-p")) {
    if (!ParseFloat(a.Get("--top-p"), &f))
      return InvalidArgument("--top-p expects a number");
    o->sampling.top_p = static_cast<float>(f);
  }
  if (a.Has("--seed")) {
    if (!ParseInt(a.Get("--seed"), &i))
      return InvalidArgument("--seed expects an integer");
    o->sampling.seed = static_cast<uint64_t>(i);
  }
  return ValidateSamplingParams(o->sampling);
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
  if (a.Has("--ignore-eos"))
    options.eos_token_ids.clear();
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
  bool stream = !a.Has("--no-stream");
  std::unique_ptr<IncrementalDecoder> decoder;
  if (tokenizer)
    decoder = std::make_unique<IncrementalDecoder>(*tokenizer, true);
  auto emit = [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  auto on_token = [&](int32_t id) {
    if (!stream)
      return true;
    emit(decoder ? decoder->Add(id) : std::to_string(id) + " ");
    return true;
  };
  KILN_ASSIGN_OR_RETURN(GenerateResult r, session->Generate(prompt, options, on_token));
  if (stream) {
    emit((decoder ? decoder->Flush() : "") + "\n");
  } else if (tokenizer) {
    emit(tokenizer->Decode(r.tokens, true) + "\n");
  } else {
    std::string ids;
    for (int32_t t : r.tokens)
      ids += std::to_string(t) + " ";
    emit(ids + "\n");
  }
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
  std::string err = ParseArgs(args,
                              {"--prompt", "--prompt-ids", "--max-new-tokens", "--temperature",
                               "--top-k", "--top-p", "--seed", "--dump-logits", "--output-ids", "--threads"},
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
