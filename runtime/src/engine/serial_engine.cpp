// SerialEngine: a dense plan (the model's own past/present KV) cannot batch,
// so each Step() runs the oldest request's completions to their end through
// DecoderSession. Same Request and Response semantics as BatchedEngine.
#include "engine/engine.h"

#include "kiln/generate.h"

#include <deque>
#include <unordered_set>

namespace kiln::engine {
namespace {

class SerialEngine : public Engine {
public:
  SerialEngine(const Plan &plan, const Tokenizer *tokenizer) : plan_(plan), tokenizer_(tokenizer) {}

  Status Init() {
    KILN_ASSIGN_OR_RETURN(session_, DecoderSession::Create(plan_));
    session_->set_tokenizer(tokenizer_);
    return Status::Ok();
  }

  Status Submit(Admitted request) override {
    KILN_RETURN_IF_ERROR(StopChecker::Create(request.params, request.eos_ids, tokenizer_).status());
    queue_.push_back(std::move(request));
    return Status::Ok();
  }

  Status Step() override {
    if (queue_.empty())
      return Status::Ok();
    Admitted request = std::move(queue_.front());
    queue_.pop_front();
    for (int i = 0; i < request.params.n; ++i) {
      GenerateOptions options;
      static_cast<RequestParams &>(options) = request.params;
      options.n = 1;
      options.sampling = CompletionSampling(request.params, i);
      options.eos_token_ids = request.eos_ids;
      if (cancelled_.count(request.id)) {
        Response r = Base(request, i);
        r.finish_reason = FinishReason::kCancelled;
        finished_.push_back(std::move(r));
        continue;
      }
      bool first = true;
      Clock::time_point first_token = Clock::now();
      session_->set_logits_hook(
          hook_ ? DecoderSession::LogitsHook([&](const float *logits, int64_t vocab) {
            hook_(request.id, i, logits, vocab);
          })
                : DecoderSession::LogitsHook());
      auto on_step = [&](const GenerateStep &step) {
        if (first) {
          first = false;
          first_token = Clock::now();
        }
        ++stats_.steps;
        bool keep = !cancelled_.count(request.id) && !(cancels_ && cancels_->Contains(request.id));
        if (request.on_token) {
          StreamEvent event;
          event.request_id = request.id;
          event.completion = i;
          event.token = step.token;
          event.text = step.text;
          event.sample = step.sample;
          keep = request.on_token(event) && keep;
        }
        return keep;
      };
      auto result = session_->GenerateStreaming(request.prompt, options, on_step);
      if (!result.ok())
        return result.status();
      Response r = Base(request, i);
      r.generated_text = std::move(result->text);
      r.tokens = std::move(result->tokens);
      r.logprobs = std::move(result->logprobs);
      r.generated_length = static_cast<int>(r.tokens.size());
      r.finish_reason = result->finish;
      r.ttft_seconds = first ? 0 : SecondsBetween(request.submitted, first_token);
      r.total_seconds = SecondsBetween(request.submitted, Clock::now());
      stats_.tokens_computed += static_cast<int64_t>(request.prompt.size()) + r.generated_length;
      finished_.push_back(std::move(r));
    }
    cancelled_.erase(request.id);
    return Status::Ok();
  }

  bool HasUnfinished() const override { return !queue_.empty(); }

  std::vector<Response> TakeFinished() override {
    std::vector<Response> out = std::move(finished_);
    finished_.clear();
    return out;
  }

  void Cancel(int64_t request_id) override {
    for (const Admitted &r : queue_)
      if (r.id == request_id)
        cancelled_.insert(request_id);
  }

  EngineStats stats() const override { return stats_; }

private:
  static Response Base(const Admitted &request, int completion) {
    Response r;
    r.request_id = request.id;
    r.completion = completion;
    r.prompt_length = static_cast<int>(request.prompt.size());
    return r;
  }

  const Plan &plan_;
  const Tokenizer *tokenizer_;
  std::unique_ptr<DecoderSession> session_;
  std::deque<Admitted> queue_;
  std::unordered_set<int64_t> cancelled_;
  std::vector<Response> finished_;
  EngineStats stats_;
};

} // namespace

StatusOr<std::unique_ptr<Engine>> CreateSerialEngine(const Plan &plan, const Tokenizer *tokenizer) {
  auto engine = std::make_unique<SerialEngine>(plan, tokenizer);
  KILN_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<Engine>(std::move(engine));
}

} // namespace kiln::engine
