// kiln tokenize: a plan's tokenizer (or a tokenizer.json) from the shell,
// both ways, for debugging prompts: which ids a text becomes, and which text
// ids are. It runs no model, so the plan's graph and device do not matter.
#include "cli.h"
#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln/plan_info.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln tokenize (model.plan | --tokenizer tokenizer.json)\n"
    "                     (--text TEXT | --text-file FILE | --decode IDS) [options]\n"
    "\n"
    "Encodes a text with the plan's tokenizer (or a Hugging Face tokenizer.json) and\n"
    "prints its token ids on stdout as one JSON array; with --decode, prints the text\n"
    "of token ids instead. The ids are those `kiln run -p TEXT` and the server's\n"
    "/v1/completions feed the model (and /tokenize returns). A plan is verified first,\n"
    "as `kiln inspect` does (its weights' checksums too: a big plan takes seconds).\n"
    "\n"
    "options:\n"
    "  --tokenizer FILE           a tokenizer.json to use instead of a plan's\n"
    "  --text TEXT                the text to encode (UTF-8)\n"
    "  --text-file FILE           the text to encode: FILE's bytes exactly, newlines\n"
    "                             included ('-': stdin)\n"
    "  --add-special-tokens BOOL  true (the default, as `kiln run -p` and Hugging Face's\n"
    "                             tokenizer.encode): the tokenizer's post-processor adds\n"
    "                             its special tokens (e.g. BOS); false: only the text's\n"
    "                             own tokens, as a rendered chat template is encoded\n"
    "                             (`kiln run --chat`). Special tokens written in the\n"
    "                             text are recognised either way\n"
    "  --tokens                   print [{\"id\", \"token\", \"special\"}, ...] instead of\n"
    "                             bare ids: each id's vocabulary string, as Hugging\n"
    "                             Face's convert_ids_to_tokens gives it (byte-level BPE\n"
    "                             writes a space as U+0120), and whether it is a special\n"
    "                             token; with --decode, those of the given ids, not the text\n"
    "  --decode IDS               decode ids instead: 1,2,3 or a JSON array ([1, 2, 3],\n"
    "                             what encoding prints); prints the text, then a newline\n"
    "  --skip-special-tokens      with --decode: leave special tokens (BOS, EOS, ...) out\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, plan, tokenizer, text (not UTF-8) or ids (not\n"
    "in the tokenizer's vocabulary), 1 internal error.\n";

using Json = nlohmann::ordered_json;

// The tokenizer of the plan named on the command line, or of --tokenizer.
StatusOr<std::unique_ptr<Tokenizer>> OpenTokenizer(const ParsedArgs &a) {
  if (a.Has("--tokenizer")) {
    const std::string path = a.Get("--tokenizer");
    KILN_ASSIGN_OR_RETURN(std::string json, ReadInputFile(path, "--tokenizer"));
    auto tok = Tokenizer::FromJson(json);
    if (!tok.ok())
      return tok.status().WithContext("--tokenizer '" + path + "'");
    return tok;
  }
  const std::string &path = a.positional[0];
  // As built: a tensor-parallel plan's tokenizer is the same for every rank.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                        LoadPlan(path, PlanLoadOptions{PlanLoadOptions::kAsBuilt, 0}));
  const std::string_view tj = DescribePlan(*plan).tokenizer_json;
  if (tj.empty())
    return InvalidArgument(path + " has no tokenizer (its model folder had no tokenizer.json "
                                  "when it was built); give one with --tokenizer FILE");
  auto tok = Tokenizer::FromJson(tj);
  if (!tok.ok())
    return tok.status().WithContext("the plan's tokenizer");
  return tok;
}

StatusOr<std::string> ReadText(const ParsedArgs &a) {
  if (a.Has("--text"))
    return a.Get("--text");
  return ReadInputFile(a.Get("--text-file"), "--text-file");
}

// "1,2,3" or "[1, 2, 3]": at least one id, each in [0, 2^31).
StatusOr<std::vector<int32_t>> ParseIdList(std::string s) {
  auto trim = [](std::string &x) {
    const size_t b = x.find_first_not_of(" \t\r\n");
    const size_t e = x.find_last_not_of(" \t\r\n");
    x = b == std::string::npos ? "" : x.substr(b, e - b + 1);
  };
  trim(s);
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']')
      return InvalidArgument("--decode: '" + s + "' opens a JSON array but does not close it");
    s = s.substr(1, s.size() - 2);
    trim(s);
  }
  if (s.empty())
    return InvalidArgument("--decode needs at least one token id");
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    trim(item);
    long long v = 0;
    if (!ParseInt(item, &v) || v < 0 || v > std::numeric_limits<int32_t>::max())
      return InvalidArgument("--decode: '" + item + "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (s.back() == ',')
    return InvalidArgument("--decode: '" + s + "' ends with a comma");
  return ids;
}

// Decode would drop an id it does not know (as Hugging Face's does); here
// the user asked about that id, so it is an error naming it.
Status CheckIds(const Tokenizer &tok, const std::vector<int32_t> &ids) {
  for (int32_t id : ids)
    if (id >= tok.vocab_size() || tok.IdToToken(id).empty())
      return InvalidArgument("--decode: " + std::to_string(id) +
                             " is not an id of the tokenizer (its ids are 0.." +
                             std::to_string(tok.vocab_size() - 1) + ")");
  return Status::Ok();
}

Json TokensJson(const Tokenizer &tok, const std::vector<int32_t> &ids) {
  Json out = Json::array();
  for (int32_t id : ids)
    out.push_back({{"id", id}, {"token", tok.IdToToken(id)}, {"special", tok.IsSpecial(id)}});
  return out;
}

void Print(const std::string &s) { std::fwrite(s.data(), 1, s.size(), stdout); }

Status Tokenize(const ParsedArgs &a) {
  const bool decode = a.Has("--decode");
  if (a.Has("--text") + a.Has("--text-file") + decode != 1)
    return InvalidArgument("give exactly one of --text, --text-file and --decode");
  if (decode && a.Has("--add-special-tokens"))
    return InvalidArgument("--add-special-tokens goes with encoding; with --decode, "
                           "--skip-special-tokens leaves them out of the text");
  if (!decode && a.Has("--skip-special-tokens"))
    return InvalidArgument("--skip-special-tokens goes with --decode");
  bool add_special = true;
  if (a.Has("--add-special-tokens")) {
    const std::string v = a.Get("--add-special-tokens");
    if (v != "true" && v != "false")
      return InvalidArgument("--add-special-tokens must be true or false, not '" + v + "'");
    add_special = v == "true";
  }
  std::vector<int32_t> ids;
  if (decode) {
    KILN_ASSIGN_OR_RETURN(ids, ParseIdList(a.Get("--decode")));
  }
  std::string text;
  if (!decode) {
    KILN_ASSIGN_OR_RETURN(text, ReadText(a));
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, OpenTokenizer(a));
  if (decode) {
    KILN_RETURN_IF_ERROR(CheckIds(*tok, ids));
    if (a.Has("--tokens"))
      Print(TokensJson(*tok, ids).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
    else
      Print(tok->Decode(ids, a.Has("--skip-special-tokens")) + "\n");
    return Status::Ok();
  }
  auto encoded = tok->Encode(text, add_special);
  if (!encoded.ok())
    return encoded.status().WithContext("the text");
  const Json out = a.Has("--tokens") ? TokensJson(*tok, *encoded) : Json(*encoded);
  // Vocabulary strings are UTF-8 (tokenizer.json is JSON); replace, never
  // throw, should one not be.
  Print(out.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
  return Status::Ok();
}

} // namespace

int TokenizeMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err =
      ParseArgs(args, {"--tokenizer", "--text", "--text-file", "--add-special-tokens", "--decode"},
                {"--tokens", "--skip-special-tokens"}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("tokenize", err, kUsage);
  const size_t want = a.Has("--tokenizer") ? 0 : 1;
  if (a.positional.size() != want)
    return Usage("tokenize",
                 want ? "expected one plan file (or --tokenizer FILE)"
                      : "give a plan or --tokenizer FILE, not both",
                 kUsage);
  Status st = Tokenize(a);
  return st.ok() ? kExitOk : Fail("tokenize", st);
}

} // namespace kiln::cli
