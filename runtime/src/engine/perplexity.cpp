// Perplexity over sliding windows (kiln/perplexity.h): the windows, the
// log-likelihood of logits rows, and a scorer for each plan interface.
#include "kiln/perplexity.h"

#include "backends/registry.h"
#include "core/backend.h"
#include "engine/plan_runner.h"
#include "kiln/cpu.h"
#include "kiln/generate.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

namespace kiln {
namespace {

// Window [begin, end) of the text scores its tokens [score_from, end).
struct Window {
  int64_t begin = 0, end = 0, score_from = 0;
};

// Hugging Face's loop: a window every `stride` tokens, until one ends at n.
std::vector<Window> SlidingWindows(int64_t n, int64_t window, int64_t stride) {
  std::vector<Window> out;
  int64_t prev_end = 0;
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min(begin + window, n);
    // Tokens up to prev_end were scored by earlier windows; the window's
    // first token has no logits before it in the window.
    out.push_back({begin, end, std::max(prev_end, begin + 1)});
    prev_end = end;
    if (end == n)
      return out;
  }
}

// After each step of a window: the step ran `ran` tokens and gave `count`
// rows of logits (none for a step that only fills the KV), for the window's
// positions [first, first + count).
using StepRows =
    std::function<Status(int64_t ran, int64_t first, const float *rows, int64_t count)>;

// Runs one window of a plan, from an empty past.
class Scorer {
public:
  virtual ~Scorer() = default;
  // Width of a logits row; 0 when only a run tells.
  virtual int64_t vocab() const = 0;
  // Runs `tokens` (positions 0..) and hands the logits of positions [from,
  // tokens.size()) to `on_step`, in order.
  virtual Status Run(const std::vector<int32_t> &tokens, int64_t from, const StepRows &on_step) = 0;
};

// A ragged plan: one sequence over a private KV cache that holds a window,
// its window run in steps of at most step_tokens. Positions before `from`
// only fill the KV (their logits are never computed: the LM head runs on
// the rows asked for); the rest come back as whole chunks (`all_logits`).
class RaggedScorer : public Scorer {
public:
  static StatusOr<std::unique_ptr<Scorer>> Create(const Plan &plan, const std::string &device,
                                                  int64_t window, int64_t step_tokens) {
    constexpr int64_t kBlockSize = 16;
    std::unique_ptr<RaggedScorer> s(new RaggedScorer());
    s->step_tokens_ = step_tokens;
    KILN_ASSIGN_OR_RETURN(s->backend_, CreateBackend(device));
    const int64_t blocks = (window + kBlockSize - 1) / kBlockSize;
    KILN_ASSIGN_OR_RETURN(s->runner_,
                          engine::PlanModelRunner::Create(plan, *s->backend_, blocks, kBlockSize));
    s->runner_->SetCudaGraphs(false); // no decode steps here
    s->seq_.id = 1;
    for (int64_t b = 0; b < blocks; ++b)
      s->seq_.block_table.push_back(static_cast<int32_t>(b));
    return std::unique_ptr<Scorer>(std::move(s));
  }

  int64_t vocab() const override { return runner_->vocab_size(); }

  Status Run(const std::vector<int32_t> &tokens, int64_t from, const StepRows &on_step) override {
    seq_.prompt = tokens;
    const int64_t n = static_cast<int64_t>(tokens.size());
    for (int64_t pos = 0; pos < n;) {
      const bool rows = pos >= from;
      const int64_t len = std::min(step_tokens_, (rows ? n : from) - pos);
      engine::Step step;
      step.chunks.push_back(engine::ScheduledChunk{&seq_, seq_.id, pos, len, false, rows});
      step.num_tokens = len;
      KILN_RETURN_IF_ERROR(runner_->Run(step, logits_));
      KILN_RETURN_IF_ERROR(on_step(len, pos, rows ? logits_.data() : nullptr, rows ? len : 0));
      pos += len;
    }
    return Status::Ok();
  }

private:
  RaggedScorer() = default;
  std::unique_ptr<Backend> backend_; // outlives the runner, which runs on it
  std::unique_ptr<engine::PlanModelRunner> runner_;
  engine::Sequence seq_;
  int64_t step_tokens_ = 0;
  std::vector<float> logits_;
};

// A dense plan: each window is one prefill, whose logits hold every position.
class DenseScorer : public Scorer {
public:
  static StatusOr<std::unique_ptr<Scorer>> Create(const Plan &plan) {
    std::unique_ptr<DenseScorer> s(new DenseScorer());
    KILN_ASSIGN_OR_RETURN(s->session_, DecoderSession::Create(plan));
    const PlanTensor &logits = plan.tensors()[plan.graph().decoder()->logits()];
    if (!logits.dims.empty())
      s->vocab_ = std::max<int64_t>(0, logits.dims.back().value);
    if (s->vocab_ == 0)
      if (const fb::ModelMetadata *m = plan.fb().metadata())
        s->vocab_ = std::max<int64_t>(0, m->vocab_size());
    if (s->vocab_ == 0)
      return InvalidArgument("the plan's logits " + logits.DimsToString() +
                             " have no static vocabulary dim, and its metadata no vocab_size");
    return std::unique_ptr<Scorer>(std::move(s));
  }

  int64_t vocab() const override { return vocab_; }

  Status Run(const std::vector<int32_t> &tokens, int64_t from, const StepRows &on_step) override {
    KILN_RETURN_IF_ERROR(session_->AllLogits(tokens, logits_));
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (static_cast<int64_t>(logits_.size()) != n * vocab_)
      return Internal("the plan's logits hold " + std::to_string(logits_.size()) + " values for " +
                      std::to_string(n) + " tokens of a vocabulary of " + std::to_string(vocab_));
    return on_step(n, from, logits_.data() + from * vocab_, n - from);
  }

private:
  DenseScorer() = default;
  std::unique_ptr<DecoderSession> session_;
  int64_t vocab_ = 0;
  std::vector<float> logits_;
};

// -log softmax(row)[target], the sum over the row in double precision.
// -inf logits are allowed (a token the model rules out); NaN and +inf are
// the model's failure, not the text's.
StatusOr<double> TokenNll(const float *row, int64_t vocab, int32_t target) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t v = 0; v < vocab; ++v) {
    if (std::isnan(row[v]) || row[v] == std::numeric_limits<float>::infinity())
      return Internal("logit " + std::to_string(v) + " is " + std::to_string(row[v]) +
                      ": the plan's logits are not finite");
    max = std::max(max, static_cast<double>(row[v]));
  }
  if (std::isinf(max))
    return Internal("every logit is -inf");
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(static_cast<double>(row[v]) - max);
  return max + std::log(sum) - static_cast<double>(row[target]);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The options with their defaults filled in, checked against the plan.
StatusOr<PerplexityOptions> Resolve(const Plan &plan, PerplexityOptions o) {
  int64_t context = 0;
  if (const fb::ModelMetadata *m = plan.fb().metadata())
    context = std::max<int64_t>(0, m->context_length());
  if (o.window == 0)
    o.window =
        context > 0 ? std::min(context, kDefaultMaxPerplexityWindow) : kDefaultMaxPerplexityWindow;
  if (o.window < 2)
    return InvalidArgument("the window must be at least 2 tokens (its first token is never "
                           "scored), got " +
                           std::to_string(o.window));
  if (context > 0 && o.window > context)
    return InvalidArgument("the window of " + std::to_string(o.window) +
                           " tokens is longer than the plan's context length, " +
                           std::to_string(context));
  if (o.stride == 0)
    o.stride = std::max<int64_t>(1, o.window / 2);
  if (o.stride < 1 || o.stride > o.window)
    return InvalidArgument("the stride must be in [1, window = " + std::to_string(o.window) +
                           "] (a larger one would skip tokens), got " + std::to_string(o.stride));
  if (o.max_tokens != 0 && o.max_tokens < 2)
    return InvalidArgument("max_tokens must be at least 2 (0: the whole text), got " +
                           std::to_string(o.max_tokens));
  if (o.step_tokens < 1)
    return InvalidArgument("step_tokens must be at least 1, got " + std::to_string(o.step_tokens));
  if (o.threads < 0)
    return InvalidArgument("threads must be >= 0 (0: leave as it is), got " +
                           std::to_string(o.threads));
  return o;
}

// Whether the plan can be scored on o.device, before anything is loaded.
Status CheckScorable(const Plan &plan, const PerplexityOptions &o) {
  if (plan.graph().ragged())
    return Status::Ok();
  const fb::DecoderIO *d = plan.graph().decoder();
  if (!d || d->input_ids() < 0 || d->logits() < 0)
    return InvalidArgument("the plan has no logits output (an encoder: `kiln embed` runs it); "
                           "perplexity needs a decoder");
  if (o.device != "cpu")
    return InvalidArgument("device '" + o.device +
                           "' runs only plans with the ragged interface; this plan is dense "
                           "(built with --no-ragged, or the ragged pass could not rewrite it): "
                           "use the cpu");
  return Status::Ok();
}

StatusOr<std::unique_ptr<Scorer>> MakeScorer(const Plan &plan, const PerplexityOptions &o) {
  if (plan.graph().ragged())
    return RaggedScorer::Create(plan, o.device, o.window, o.step_tokens);
  return DenseScorer::Create(plan);
}

} // namespace

StatusOr<PerplexityResult> Perplexity(const Plan &plan, const std::vector<int32_t> &text_ids,
                                      const PerplexityOptions &options,
                                      const PerplexityCallback &progress) {
  KILN_ASSIGN_OR_RETURN(const PerplexityOptions o, Resolve(plan, options));
  KILN_RETURN_IF_ERROR(CheckScorable(plan, o));
  int64_t n = static_cast<int64_t>(text_ids.size());
  if (o.max_tokens > 0)
    n = std::min(n, o.max_tokens);
  if (n < 2)
    return InvalidArgument("the text is " + std::to_string(n) +
                           " token(s); perplexity needs at least 2 (the first is never scored)");
  const std::vector<int32_t> ids(text_ids.begin(), text_ids.begin() + n);
  if (o.threads > 0)
    SetCpuThreads(o.threads);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Scorer> scorer, MakeScorer(plan, o));
  const int64_t vocab = scorer->vocab();
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return InvalidArgument("token " + std::to_string(i) + " of the text, id " +
                             std::to_string(ids[i]) + ", is outside the model's vocabulary of " +
                             std::to_string(vocab) + " (the tokenizer and the model disagree)");

  const std::vector<Window> windows = SlidingWindows(n, o.window, o.stride);
  PerplexityResult r;
  r.tokens = n;
  r.window = o.window;
  r.stride = o.stride;
  r.windows = static_cast<int64_t>(windows.size());
  PerplexityProgress p;
  p.windows = r.windows;
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> inputs;
  for (const Window &w : windows) {
    // The logits at position t - 1 score token t: the window's last token
    // is never an input, and rows start at the first scored token's input.
    inputs.assign(ids.begin() + w.begin, ids.begin() + (w.end - 1));
    const int64_t from = w.score_from - 1 - w.begin;
    auto on_step = [&](int64_t ran, int64_t first, const float *rows, int64_t count) -> Status {
      for (int64_t i = 0; i < count; ++i) {
        const float *row = rows + i * vocab;
        const int64_t target = w.begin + first + i + 1;
        StatusOr<double> nll = TokenNll(row, vocab, ids[target]);
        if (!nll.ok())
          return nll.status().WithContext("window " + std::to_string(p.windows_done + 1) +
                                          ", the logits before token " + std::to_string(target));
        r.nll += *nll;
        ++r.scored;
      }
      p.tokens_run += ran;
      p.scored = r.scored;
      p.seconds = Seconds(start);
      if (progress)
        progress(p);
      return Status::Ok();
    };
    // stride == window leaves a last window of one token: nothing to score.
    if (w.score_from < w.end)
      KILN_RETURN_IF_ERROR(scorer->Run(inputs, from, on_step));
    ++p.windows_done;
  }
  r.seconds = Seconds(start);
  r.nll_per_token = r.nll / static_cast<double>(r.scored);
  r.perplexity = std::exp(r.nll_per_token);
  if (progress) {
    p.seconds = r.seconds;
    progress(p);
  }
  return r;
}

StatusOr<PerplexityResult> TextPerplexity(const Plan &plan, std::string_view text,
                                          const PerplexityOptions &options,
                                          const PerplexityCallback &progress) {
  const auto *tj = plan.fb().tokenizer_json();
  if (tj == nullptr || tj->size() == 0)
    return InvalidArgument("the plan has no tokenizer (its model folder had no tokenizer.json "
                           "when it was built), so it cannot read a text");
  StatusOr<std::unique_ptr<Tokenizer>> tok =
      Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size()));
  if (!tok.ok())
    return tok.status().WithContext("the plan's tokenizer");
  // Bad options and plans before the text, which may be long to encode.
  KILN_ASSIGN_OR_RETURN(const PerplexityOptions resolved, Resolve(plan, options));
  KILN_RETURN_IF_ERROR(CheckScorable(plan, resolved));
  if (text.empty())
    return InvalidArgument("the text is empty");
  StatusOr<std::vector<int32_t>> ids = (*tok)->Encode(text, /*add_special_tokens=*/true);
  if (!ids.ok())
    return ids.status().WithContext("the text");
  return Perplexity(plan, *ids, options, progress);
}

} // namespace kiln
