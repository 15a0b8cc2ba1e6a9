// One engine thread stepping the pipeline continuously; HTTP handler threads
// submit requests to it and read their tokens from per-request queues. The
// Pipeline is not thread-safe (except Cancel), so only the engine thread
// calls Submit, Step and TakeFinished.
#pragma once

#include "kiln/pipeline.h"
#include "serve/metrics.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::serve {

using Clock = std::chrono::steady_clock;

// What a request's reader gets: a piece of one choice's text (with its
// sampled token), or that choice's final Response.
struct ChoiceEvent {
  int choice = 0; // prompt index * n + completion
  std::string text;
  bool has_sample = false;
  SampledToken sample;
  bool final = false;
  Response response; // when final
};

// One HTTP request's engine requests (one per prompt) and their events.
class RequestStream {
public:
  enum class Next { kEvent, kDone, kFailed, kTimeout };
  // The next event, waiting until `deadline`. kDone once every choice's
  // final event was read; kFailed when the engine failed the request
  // (status()).
  Next Pop(Clock::time_point deadline, ChoiceEvent *out);
  // Waits until the engine thread accepted every prompt, or refused one
  // (the status says why: InvalidArgument for a bad prompt).
  Status WaitAdmitted();
  Status status() const;
  int choices() const { return static_cast<int>(prompts_.size()) * n_; }

private:
  friend class EngineLoop;
  std::vector<Request> prompts_;
  int n_ = 1;
  Clock::time_point arrival_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ChoiceEvent> events_;
  bool admitted_ = false;
  Status status_;
  std::vector<int64_t> engine_ids_;
  int pending_ = 0;           // final responses still to come
  bool cancelled_ = false;    // the stream callback stops its completions
  std::string cancel_reason_; // for metrics
  // Engine thread only: what the request consumed, reported to on_usage_.
  int64_t used_prompt_ = 0, used_completion_ = 0;
  std::function<void(int64_t, int64_t)> on_usage_;
};

class EngineLoop {
public:
  struct Options {
    int max_queue = 256;         // requests admitted at once
    double ready_interval_s = 5; // a step this recent proves readiness
    int32_t probe_token = 0;     // the readiness probe's one-token prompt
  };
  EngineLoop(Pipeline *pipe, const Options &options, Metrics *metrics);
  ~EngineLoop();

  void Start();
  // Cancels whatever runs and joins the thread.
  void Stop();

  // Called once on the engine thread when a request ends however it ends
  // (every choice finished, cancelled, failed or refused): the prompt tokens
  // (once per prompt) and the tokens generated (all choices), as
  // kiln_prompt_tokens_total and kiln_generation_tokens_total counted them.
  using UsageCallback = std::function<void(int64_t prompt_tokens, int64_t completion_tokens)>;

  // Admits a request and hands it to the engine thread. ResourceExhausted
  // (the caller answers 503) when max_queue requests are in flight.
  StatusOr<std::shared_ptr<RequestStream>> Submit(std::vector<Request> prompts,
                                                  UsageCallback on_usage = nullptr);
  // Cancels a request (disconnect, timeout, drain); its KV blocks are freed
  // at the next step. `reason` labels the cancellation metric.
  void Cancel(RequestStream &stream, const std::string &reason);
  void CancelAll(const std::string &reason);
  int in_flight() const;

  // True when an engine step succeeded within ready_interval_s; otherwise
  // runs a one-token probe through the engine and waits up to `wait`.
  bool Ready(std::chrono::milliseconds wait);

private:
  void Run();
  void Admit(const std::shared_ptr<RequestStream> &s);
  void Route(Response &r);
  void FailAll(const Status &s);
  void Finished(RequestStream &s); // under no lock; updates in_flight, reports usage
  void Report(RequestStream &s);   // calls the stream's usage callback, once
  void UpdateGauges();

  Pipeline *pipe_;
  Options options_;
  Metrics *metrics_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_, ready_cv_;
  bool stop_ = false;
  std::vector<std::shared_ptr<RequestStream>> inbox_;
  int in_flight_ = 0;
  bool probe_wanted_ = false;
  uint64_t probes_done_ = 0;
  bool last_step_ok_ = false;
  Clock::time_point last_ok_step_{};

  // Engine thread only.
  struct Route_ {
    std::shared_ptr<RequestStream> stream;
    int prompt_index = 0;
  };
  std::map<int64_t, Route_> routes_;
  int64_t probe_id_ = -1;
  std::vector<std::shared_ptr<RequestStream>> live_;
  int64_t last_preemptions_ = 0, last_steps_ = 0;
};

} // namespace kiln::serve
