// kiln embed: sentence embeddings from an encoder plan (BERT and its family):
// texts are tokenized with the plan's tokenizer, run through the graph in
// padded batches with attention masks, and each input's token states are
// pooled into one vector as the model's sentence-transformers config says.
#include "backends/registry.h"
#include "cli.h"
#include "cli_args.h"
#include "embedder.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln_schema/plan_generated.h"
#include "run_options.h"

#include <algorithm>
#include <cmath>
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

enum class PoolMode { kMean, kCls };

struct Pooling {
  PoolMode mode = PoolMode::kMean;
  bool normalize = false;
  bool from_plan = false;
};

// The graph's inputs by role, and the token-state output.
struct EncoderIO {
  std::vector<std::string> roles; // per plan input: "input_ids", "attention_mask", ...
  int hidden_output = -1;         // index into plan.outputs()
};

StatusOr<Pooling> PlanPooling(const Plan &plan, bool normalize_flag) {
  Pooling p;
  if (const fb::Pooling *fp = plan.fb().pooling()) {
    const std::string mode = fp->mode() ? fp->mode()->str() : "";
    if (mode == "cls") {
      p.mode = PoolMode::kCls;
    } else if (mode != "mean") {
      return InvalidArgument("the plan's pooling is '" + mode +
                             "' (from the model's sentence-transformers config); kiln embed "
                             "pools only 'mean' or 'cls'");
    }
    p.normalize = fp->normalize();
    p.from_plan = true;
  }
  p.normalize = p.normalize || normalize_flag;
  return p;
}

StatusOr<EncoderIO> FindEncoderIO(const Plan &plan) {
  EncoderIO io;
  bool has_ids = false;
  for (int id : plan.inputs()) {
    const PlanTensor &t = plan.tensors()[id];
    if (t.name != "input_ids" && t.name != "attention_mask" && t.name != "token_type_ids" &&
        t.name != "position_ids") {
      return InvalidArgument("graph input '" + t.name +
                             "' is not one kiln embed can fill (input_ids, attention_mask, "
                             "token_type_ids, position_ids): is this an encoder plan?");
    }
    if (t.dtype != DType::kI64 && t.dtype != DType::kI32)
      return InvalidArgument("graph input '" + t.name + "' is not an integer tensor");
    if (t.dims.size() != 2)
      return InvalidArgument("graph input '" + t.name + "' is not [batch, sequence]");
    has_ids |= t.name == "input_ids";
    io.roles.push_back(t.name);
  }
  if (!has_ids)
    return InvalidArgument("the plan has no input_ids input: is this an encoder plan?");
  const auto &outs = plan.outputs();
  for (size_t i = 0; i < outs.size() && io.hidden_output < 0; ++i)
    if (plan.tensors()[outs[i]].name == "last_hidden_state")
      io.hidden_output = static_cast<int>(i);
  for (size_t i = 0; i < outs.size() && io.hidden_output < 0; ++i)
    if (plan.tensors()[outs[i]].dims.size() == 3)
      io.hidden_output = static_cast<int>(i);
  if (io.hidden_output < 0)
    return InvalidArgument("the plan has no [batch, sequence, hidden] output to pool");
  return io;
}

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

// Pools one row of token states [len, hidden] into `out`.
void Pool(const float *states, int64_t len, int64_t hidden, const Pooling &p, float *out) {
  if (p.mode == PoolMode::kCls) {
    std::copy(states, states + hidden, out);
  } else {
    std::vector<double> sum(hidden, 0.0);
    for (int64_t t = 0; t < len; ++t)
      for (int64_t h = 0; h < hidden; ++h)
        sum[h] += states[t * hidden + h];
    for (int64_t h = 0; h < hidden; ++h)
      out[h] = static_cast<float>(sum[h] / static_cast<double>(std::max<int64_t>(len, 1)));
  }
  if (p.normalize) { // as torch's F.normalize: x / max(||x||, 1e-12)
    double norm = 0;
    for (int64_t h = 0; h < hidden; ++h)
      norm += double{out[h]} * out[h];
    const double scale = 1.0 / std::max(std::sqrt(norm), 1e-12);
    for (int64_t h = 0; h < hidden; ++h)
      out[h] = static_cast<float>(out[h] * scale);
  }
}

// One padded batch: fills every input role, runs the graph, pools each row.
class BatchRunner {
public:
  BatchRunner(const Plan &plan, const EncoderIO &io, Executor &exec, int64_t pad_id)
      : plan_(plan), io_(io), exec_(exec), pad_id_(pad_id) {}

  Status Run(const std::vector<std::vector<int32_t>> &batch, const Pooling &pooling,
             std::vector<float> *out, int64_t *hidden) {
    const int64_t rows = static_cast<int64_t>(batch.size());
    int64_t len = 0;
    for (const auto &ids : batch)
      len = std::max<int64_t>(len, static_cast<int64_t>(ids.size()));
    std::vector<std::vector<int64_t>> values(io_.roles.size());
    for (size_t r = 0; r < io_.roles.size(); ++r)
      values[r] = RoleValues(io_.roles[r], batch, len);
    std::vector<std::vector<int32_t>> narrow(io_.roles.size());
    std::vector<TensorView> views;
    for (size_t r = 0; r < io_.roles.size(); ++r) {
      TensorView v;
      v.shape = {rows, len};
      v.dtype = plan_.tensors()[plan_.inputs()[r]].dtype;
      if (v.dtype == DType::kI32) {
        narrow[r].assign(values[r].begin(), values[r].end());
        v.data = narrow[r].data();
      } else {
        v.data = values[r].data();
      }
      views.push_back(v);
    }
    KILN_RETURN_IF_ERROR(exec_.Bind(views));
    KILN_RETURN_IF_ERROR(exec_.Run());
    const TensorView &states = exec_.output(io_.hidden_output);
    if (states.dtype != DType::kF32 || states.shape.size() != 3 || states.shape[0] != rows ||
        states.shape[1] != len)
      return InvalidArgument("the plan's token-state output is " +
                             std::string(DTypeName(states.dtype)) + ShapeToString(states.shape) +
                             ", not float32 [batch, sequence, hidden]");
    *hidden = states.shape[2];
    // The states may be in device memory: read them through the executor.
    host_states_.resize(static_cast<size_t>(states.numel()));
    KILN_RETURN_IF_ERROR(exec_.CopyOutputToHost(io_.hidden_output, host_states_.data()));
    const float *data = host_states_.data();
    for (int64_t b = 0; b < rows; ++b) {
      out->resize(out->size() + static_cast<size_t>(*hidden));
      Pool(data + b * len * *hidden, static_cast<int64_t>(batch[b].size()), *hidden, pooling,
           out->data() + out->size() - *hidden);
    }
    return Status::Ok();
  }

private:
  // Row-major [rows, len] values of one graph input; padding positions get
  // the pad id and mask 0.
  std::vector<int64_t> RoleValues(const std::string &role,
                                  const std::vector<std::vector<int32_t>> &batch,
                                  int64_t len) const {
    std::vector<int64_t> v(batch.size() * static_cast<size_t>(len), 0);
    for (size_t b = 0; b < batch.size(); ++b) {
      for (int64_t t = 0; t < len; ++t) {
        const bool real = t < static_cast<int64_t>(batch[b].size());
        int64_t &x = v[b * len + t];
        if (role == "input_ids")
          x = real ? batch[b][t] : pad_id_;
        else if (role == "attention_mask")
          x = real ? 1 : 0;
        else if (role == "position_ids")
          x = t;
      }
    }
    return v;
  }

  const Plan &plan_;
  const EncoderIO &io_;
  Executor &exec_;
  int64_t pad_id_;
  std::vector<float> host_states_; // the last batch's token states, on the host
};

StatusOr<std::vector<std::vector<int32_t>>> Tokenize(const Plan &plan,
                                                     const std::vector<std::string> &texts) {
  const auto *tj = plan.fb().tokenizer_json();
  if (tj == nullptr || tj->size() == 0)
    return InvalidArgument("the plan has no tokenizer, so it cannot embed text");
  auto tokenizer = Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size()));
  if (!tokenizer.ok())
    return InvalidArgument("the plan's tokenizer: " + tokenizer.status().message());
  int64_t positions = 0;
  if (const fb::ModelMetadata *m = plan.fb().metadata())
    positions = m->context_length();
  std::vector<std::vector<int32_t>> all;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = (*tokenizer)->Encode(texts[i], /*add_special_tokens=*/true);
    if (!ids.ok())
      return ids.status().WithContext("text " + std::to_string(i + 1));
    if (ids->empty())
      return InvalidArgument("text " + std::to_string(i + 1) + " has no tokens");
    if (positions > 0 && static_cast<int64_t>(ids->size()) > positions)
      return InvalidArgument("text " + std::to_string(i + 1) + " is " +
                             std::to_string(ids->size()) + " tokens, more than the model's " +
                             std::to_string(positions) + " positions");
    all.push_back(std::move(*ids));
  }
  return all;
}

std::string EmbeddingsJson(const Pooling &p, int64_t hidden,
                           const std::vector<std::vector<int32_t>> &ids,
                           const std::vector<float> &vectors) {
  nlohmann::ordered_json j;
  j["pooling"] = p.mode == PoolMode::kCls ? "cls" : "mean";
  j["normalized"] = p.normalize;
  j["dimension"] = hidden;
  j["token_counts"] = nlohmann::json::array();
  for (const auto &v : ids)
    j["token_counts"].push_back(v.size());
  j["embeddings"] = nlohmann::json::array();
  for (size_t i = 0; i < ids.size(); ++i)
    j["embeddings"].push_back(
        std::vector<float>(vectors.begin() + i * hidden, vectors.begin() + (i + 1) * hidden));
  return j.dump() + "\n";
}

Status Embed(const ParsedArgs &a) {
  long long batch_size = 16;
  if (a.Has("--batch-size") && (!ParseInt(a.Get("--batch-size"), &batch_size) || batch_size < 1))
    return InvalidArgument("--batch-size must be a positive integer");
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> texts, ReadTexts(a));
  KILN_RETURN_IF_ERROR(ApplyThreads(a));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[0]));
  KILN_ASSIGN_OR_RETURN(EncoderIO io, FindEncoderIO(*plan));
  KILN_ASSIGN_OR_RETURN(Pooling pooling, PlanPooling(*plan, a.Has("--normalize")));
  KILN_ASSIGN_OR_RETURN(auto ids, Tokenize(*plan, texts));
  int64_t pad_id = 0;
  if (const fb::ModelMetadata *m = plan->fb().metadata())
    pad_id = std::max<int64_t>(0, m->pad_token_id());
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, BackendFromFlag(a));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::Create(*plan, *backend));
  BatchRunner runner(*plan, io, *exec, pad_id);
  std::vector<float> vectors;
  int64_t hidden = 0;
  for (size_t begin = 0; begin < ids.size(); begin += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(ids.size(), begin + static_cast<size_t>(batch_size));
    std::vector<std::vector<int32_t>> batch(ids.begin() + begin, ids.begin() + end);
    KILN_RETURN_IF_ERROR(runner.Run(batch, pooling, &vectors, &hidden));
  }
  std::fprintf(stderr, "kiln embed: %zu texts, %s pooling%s%s, dimension %lld\n", ids.size(),
               pooling.mode == PoolMode::kCls ? "cls" : "mean",
               pooling.from_plan ? "" : " (the plan has no pooling config: the default)",
               pooling.normalize ? ", L2-normalized" : "", static_cast<long long>(hidden));
  if (a.Has("--npy"))
    return WriteNpy(a.Get("--npy"), vectors, static_cast<int64_t>(ids.size()), hidden);
  const std::string json = EmbeddingsJson(pooling, hidden, ids, vectors);
  std::fwrite(json.data(), 1, json.size(), stdout);
  return Status::Ok();
}

} // namespace

struct PlanEmbedder::Impl {
  const Plan *plan = nullptr;
  EncoderIO io;
  Pooling pooling;
  std::unique_ptr<Tokenizer> tokenizer;
  int64_t positions = 0;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<BatchRunner> runner;
};

PlanEmbedder::PlanEmbedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PlanEmbedder::~PlanEmbedder() = default;

StatusOr<std::unique_ptr<PlanEmbedder>> PlanEmbedder::Create(const Plan &plan,
                                                             const ParsedArgs &a) {
  auto impl = std::make_unique<Impl>();
  impl->plan = &plan;
  KILN_ASSIGN_OR_RETURN(impl->io, FindEncoderIO(plan));
  KILN_ASSIGN_OR_RETURN(impl->pooling, PlanPooling(plan, false));
  const auto *tj = plan.fb().tokenizer_json();
  if (tj == nullptr || tj->size() == 0)
    return InvalidArgument("the plan has no tokenizer, so it cannot embed text");
  KILN_ASSIGN_OR_RETURN(impl->tokenizer,
                        Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size())));
  int64_t pad_id = 0;
  if (const fb::ModelMetadata *m = plan.fb().metadata()) {
    impl->positions = m->context_length();
    pad_id = std::max<int64_t>(0, m->pad_token_id());
  }
  KILN_ASSIGN_OR_RETURN(impl->backend, BackendFromFlag(a));
  KILN_ASSIGN_OR_RETURN(impl->exec, Executor::Create(plan, *impl->backend));
  impl->runner = std::make_unique<BatchRunner>(plan, impl->io, *impl->exec, pad_id);
  return std::unique_ptr<PlanEmbedder>(new PlanEmbedder(std::move(impl)));
}

StatusOr<serve::Embeddings> PlanEmbedder::Embed(const serve::EmbeddingJob &job) {
  std::vector<std::vector<int32_t>> ids = job.ids;
  for (size_t i = 0; i < job.texts.size(); ++i) {
    auto enc = impl_->tokenizer->Encode(job.texts[i], /*add_special_tokens=*/true);
    if (!enc.ok())
      return enc.status().WithContext("input " + std::to_string(i));
    ids.push_back(std::move(*enc));
  }
  serve::Embeddings out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty())
      return InvalidArgument("input " + std::to_string(i) + " has no tokens");
    if (impl_->positions > 0 && static_cast<int64_t>(ids[i].size()) > impl_->positions)
      return InvalidArgument("input " + std::to_string(i) + " is " +
                             std::to_string(ids[i].size()) + " tokens, more than the model's " +
                             std::to_string(impl_->positions) + " positions");
    out.tokens += static_cast<int64_t>(ids[i].size());
  }
  std::lock_guard<std::mutex> l(mu_);
  std::vector<float> vectors;
  int64_t hidden = 0;
  constexpr size_t kBatch = 16;
  for (size_t begin = 0; begin < ids.size(); begin += kBatch) {
    std::vector<std::vector<int32_t>> batch(ids.begin() + begin,
                                            ids.begin() + std::min(ids.size(), begin + kBatch));
    KILN_RETURN_IF_ERROR(impl_->runner->Run(batch, impl_->pooling, &vectors, &hidden));
  }
  for (size_t i = 0; i < ids.size(); ++i)
    out.vectors.emplace_back(vectors.begin() + i * hidden, vectors.begin() + (i + 1) * hidden);
  return out;
}

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
