// kiln embed: sentence embeddings from an encoder plan (BERT and its family):
// texts are tokenized with the plan's tokenizer, run through the graph in
// padded batches with attention masks, and each input's token states are
// pooled into one vector as the model's sentence-transformers config says.
#include "cli.h"
#include "cli_args.h"
#include "kiln/embedder.h"
#include "kiln/plan.h"
#include "run_options.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln embed model.plan (--text TEXT [--text TEXT ...] | --texts-file FILE)\n"
    "                  [--normalize] [--npy FILE] [--batch-size N] [--threads N]\n"
    "                  [--device DEV]\n"
    "\n"
    "Embeds each input text with an encoder plan (a BERT-family model built by\n"
    "`kiln build`): one vector per text, in input order.\n"
    "\n"
    "Each text is tokenized with the plan's tokenizer, with its special tokens\n"
    "(e.g. [CLS] ... [SEP]). Texts run in batches padded to the longest text of\n"
    "the batch; the attention mask keeps padding out, so a vector does not depend\n"
    "on what it was batched with. The token states (the graph output\n"
    "last_hidden_state, else its first [batch, sequence, hidden] output) are\n"
    "pooled as the model's sentence-transformers config said at build time\n"
    "(modules.json and the Pooling module's config.json beside the ONNX file):\n"
    "  mean   average of the states of the text's tokens (mask 1), special tokens included\n"
    "  cls    the state of the first token\n"
    "A plan built without that config is mean-pooled. Other pooling modes (max,\n"
    "lasttoken, ...) are refused. A Normalize module in modules.json normalizes\n"
    "every vector, as --normalize does.\n"
    "\n"
    "options:\n"
    "  --text TEXT        a text to embed (repeatable)\n"
    "  --texts-file FILE  one text per line, UTF-8 ('-': stdin); blank lines are skipped\n"
    "  --normalize        scale each vector to unit L2 norm\n"
    "  --npy FILE         write float32 [texts, hidden] as .npy instead of JSON on stdout\n"
    "  --batch-size N     texts per graph run (default 16)\n"
    "  --threads N        cap the CPU threads of matrix products (0: all cores)\n"
    "  --device DEV       what runs the plan: cpu, cuda (GPU 0) or cuda:N (default cuda\n"
    "                     when this kiln has it and a GPU is visible, else cpu);\n"
    "                     --backend DEV is the same\n"
    "\n"
    "stdout (without --npy): {\"pooling\": \"mean\"|\"cls\", \"normalized\": bool,\n"
    "\"dimension\": H, \"token_counts\": [...], \"embeddings\": [[H floats], ...]}\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, plan or text (e.g. longer than the\n"
    "model's positions), 1 internal error.\n";

StatusOr<std::vector<std::string>> ReadTexts(const ParsedArgs &a) {
  if (a.Has("--text") == a.Has("--texts-file"))
    return InvalidArgument("give --text (repeatable) or --texts-file, not both and not neither");
  if (a.Has("--text"))
    return a.All("--text");
  const std::string path = a.Get("--texts-file");
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file)
      return InvalidArgument("cannot open --texts-file '" + path + "'");
  }
  std::istream &in = path == "-" ? std::cin : file;
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos)
      texts.push_back(line);
  }
  if (texts.empty())
    return InvalidArgument("--texts-file '" + path + "' has no text");
  return texts;
}

std::string EmbeddingsJson(const Embedder &e, const Embeddings &out) {
  nlohmann::ordered_json j;
  j["pooling"] = e.pooling();
  j["normalized"] = e.normalized();
  j["dimension"] = out.vectors.empty() ? 0 : out.vectors[0].size();
  j["token_counts"] = out.token_counts;
  j["embeddings"] = out.vectors;
  return j.dump() + "\n";
}

Status Embed(const ParsedArgs &a) {
  EmbedderOptions options;
  long long batch_size = 16;
  if (a.Has("--batch-size") &&
      (!ParseInt(a.Get("--batch-size"), &batch_size) || batch_size < 1 || batch_size > (1 << 20)))
    return InvalidArgument("--batch-size must be a positive integer");
  options.batch_size = static_cast<int>(batch_size);
  options.normalize = a.Has("--normalize");
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> texts, ReadTexts(a));
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  KILN_ASSIGN_OR_RETURN(options.device, DeviceFlag(a));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[0]));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Embedder> embedder, Embedder::Create(*plan, options));
  KILN_ASSIGN_OR_RETURN(Embeddings out, embedder->Embed(texts));
  const int64_t hidden = out.vectors.empty() ? 0 : static_cast<int64_t>(out.vectors[0].size());
  std::fprintf(stderr, "kiln embed: %zu texts, %s pooling%s%s, dimension %lld\n", texts.size(),
               embedder->pooling(),
               embedder->pooling_from_plan() ? "" : " (the plan has no pooling config: the default)",
               embedder->normalized() ? ", L2-normalized" : "", static_cast<long long>(hidden));
  if (a.Has("--npy")) {
    std::vector<float> flat;
    flat.reserve(out.vectors.size() * static_cast<size_t>(hidden));
    for (const std::vector<float> &v : out.vectors)
      flat.insert(flat.end(), v.begin(), v.end());
    return WriteNpy(a.Get("--npy"), flat, static_cast<int64_t>(out.vectors.size()), hidden);
  }
  const std::string json = EmbeddingsJson(*embedder, out);
  std::fwrite(json.data(), 1, json.size(), stdout);
  return Status::Ok();
}

} // namespace

int EmbedMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err = ParseArgs(
      args,
      {"--text", "--texts-file", "--npy", "--batch-size", "--threads", "--device", "--backend"},
      {"--normalize"}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("embed", err, kUsage);
  if (a.positional.size() != 1)
    return Usage("embed", "expected one plan file", kUsage);
  Status st = Embed(a);
  return st.ok() ? kExitOk : Fail("embed", st);
}

} // namespace kiln::cli
