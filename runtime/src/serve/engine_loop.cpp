#include "serve/engine_loop.h"

#include <algorithm>
#include <cstdio>

namespace kiln::serve {

RequestStream::Next RequestStream::Pop(Clock::time_point deadline, ChoiceEvent *out) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_until(l, deadline,
                 [&] { return !events_.empty() || !status_.ok() || (admitted_ && pending_ == 0); });
  if (!events_.empty()) {
    *out = std::move(events_.front());
    events_.pop_front();
    return Next::kEvent;
  }
  if (!status_.ok())
    return Next::kFailed;
  if (admitted_ && pending_ == 0)
    return Next::kDone;
  return Next::kTimeout;
}

Status RequestStream::WaitAdmitted() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return admitted_ || !status_.ok(); });
  return status_;
}

Status RequestStream::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

EngineLoop::EngineLoop(Pipeline *pipe, const Options &options, Metrics *metrics)
    : pipe_(pipe), options_(options), metrics_(metrics) {}

EngineLoop::~EngineLoop() { Stop(); }

void EngineLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EngineLoop::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

StatusOr<std::shared_ptr<RequestStream>> EngineLoop::Submit(std::vector<Request> prompts,
                                                          UsageCallback on_usage) {
  auto s = std::make_shared<RequestStream>();
  s->on_usage_ = std::move(on_usage);
  s->n_ = prompts.empty() ? 1 : prompts[0].params.n;
  s->prompts_ = std::move(prompts);
  s->arrival_ = Clock::now();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_)
      return Status(StatusCode::kResourceExhausted, "the server is shutting down");
    if (in_flight_ >= options_.max_queue)
      return Status(StatusCode::kResourceExhausted, "the server is at its limit of " +
                                                        std::to_string(options_.max_queue) +
                                                        " requests in flight; retry later");
    ++in_flight_;
    inbox_.push_back(s);
  }
  cv_.notify_all();
  return s;
}

void EngineLoop::Cancel(RequestStream &s, const std::string &reason) {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> l(s.mu_);
    if (s.cancelled_ || (s.admitted_ && s.pending_ == 0))
      return;
    s.cancelled_ = true;
    s.cancel_reason_ = reason;
    ids = s.engine_ids_;
  }
  for (int64_t id : ids)
    pipe_->Cancel(id);
  metrics_->Add("kiln_cancellations_total", 1, reason);
  cv_.notify_all();
}

void EngineLoop::CancelAll(const std::string &reason) {
  std::vector<std::shared_ptr<RequestStream>> live;
  {
    std::lock_guard<std::mutex> l(mu_);
    live = live_;
    for (auto &s : inbox_)
      live.push_back(s);
  }
  for (auto &s : live)
    Cancel(*s, reason);
}

int EngineLoop::in_flight() const {
  std::lock_guard<std::mutex> l(mu_);
  return in_flight_;
}

bool EngineLoop::Ready(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> l(mu_);
  const auto fresh = std::chrono::duration<double>(options_.ready_interval_s);
  if (last_step_ok_ && Clock::now() - last_ok_step_ < fresh)
    return true;
  const uint64_t target = probes_done_ + 1;
  probe_wanted_ = true;
  cv_.notify_all();
  ready_cv_.wait_for(l, wait, [&] { return probes_done_ >= target || stop_; });
  const bool ok = probes_done_ >= target && last_step_ok_;
  return ok;
}

void EngineLoop::Run() {
  for (;;) {
    std::vector<std::shared_ptr<RequestStream>> incoming;
    bool probe = false;
    {
      std::unique_lock<std::mutex> l(mu_);
      if (!pipe_->HasUnfinished())
        cv_.wait(l, [&] { return stop_ || !inbox_.empty() || probe_wanted_; });
      if (stop_)
        break;
      incoming.swap(inbox_);
      if (probe_wanted_ && probe_id_ < 0) {
        probe = true;
        probe_wanted_ = false;
      }
    }
    for (auto &s : incoming)
      Admit(s);
    if (probe) {
      // Readiness from a real step: one greedy token through the model.
      Request r;
      r.prompt_ids = {options_.probe_token};
      r.params.max_new_tokens = 1;
      r.params.ignore_eos = true;
      auto id = pipe_->Submit(r);
      if (id.ok()) {
        probe_id_ = *id;
      } else {
        std::lock_guard<std::mutex> l(mu_);
        last_step_ok_ = false;
        ++probes_done_;
        ready_cv_.notify_all();
      }
    }
    if (pipe_->HasUnfinished()) {
      Status st = pipe_->Step();
      {
        std::lock_guard<std::mutex> l(mu_);
        last_step_ok_ = st.ok();
        if (st.ok())
          last_ok_step_ = Clock::now();
      }
      if (!st.ok()) {
        metrics_->Add("kiln_engine_step_errors_total", 1);
        std::fprintf(stderr, "kiln serve: engine step failed: %s\n", st.message().c_str());
        FailAll(st);
      }
    }
    for (Response &r : pipe_->TakeFinished())
      Route(r);
    UpdateGauges();
  }
  FailAll(Status(StatusCode::kResourceExhausted, "the server is shutting down"));
}

void EngineLoop::Admit(const std::shared_ptr<RequestStream> &s) {
  std::vector<int64_t> ids;
  Status err;
  const bool cancelled = [&] {
    std::lock_guard<std::mutex> l(s->mu_);
    return s->cancelled_;
  }();
  if (cancelled)
    err = Status(StatusCode::kResourceExhausted, "cancelled before it started");
  for (size_t i = 0; err.ok() && i < s->prompts_.size(); ++i) {
    const int index = static_cast<int>(i);
    // The callback owns the stream: the pipeline may call it after the
    // handler is gone (a cancelled request's last step).
    std::shared_ptr<RequestStream> raw = s;
    StreamCallback on_token = [raw, index](const StreamEvent &e) {
      std::lock_guard<std::mutex> l(raw->mu_);
      if (raw->cancelled_)
        return false;
      ChoiceEvent ev;
      ev.choice = index * raw->n_ + e.completion;
      ev.text = e.text;
      if (e.sample) {
        ev.has_sample = true;
        ev.sample = *e.sample;
      }
      raw->events_.push_back(std::move(ev));
      raw->cv_.notify_all();
      return true;
    };
    auto id = pipe_->Submit(s->prompts_[i], on_token);
    if (!id.ok()) {
      err = id.status();
      break;
    }
    ids.push_back(*id);
    routes_[*id] = {s, index};
  }
  if (!err.ok()) {
    // The prompts already queued are cancelled; their responses find no
    // route and are dropped.
    for (int64_t id : ids) {
      pipe_->Cancel(id);
      routes_.erase(id);
    }
    {
      std::lock_guard<std::mutex> l(s->mu_);
      s->status_ = err;
      s->admitted_ = true;
    }
    s->cv_.notify_all();
    Finished(*s);
    return;
  }
  {
    std::lock_guard<std::mutex> l(s->mu_);
    s->engine_ids_ = ids;
    s->pending_ = s->choices();
    s->admitted_ = true;
    // A cancel that came while the prompts were queued reaches them now.
    if (s->cancelled_)
      for (int64_t id : ids)
        pipe_->Cancel(id);
  }
  s->cv_.notify_all();
  std::lock_guard<std::mutex> l(mu_);
  live_.push_back(s);
}

void EngineLoop::Route(Response &r) {
  if (r.request_id == probe_id_) {
    probe_id_ = -1;
    std::lock_guard<std::mutex> l(mu_);
    ++probes_done_;
    last_step_ok_ = r.finish_reason != FinishReason::kCancelled;
    if (last_step_ok_)
      last_ok_step_ = Clock::now();
    ready_cv_.notify_all();
    return;
  }
  auto it = routes_.find(r.request_id);
  if (it == routes_.end())
    return;
  std::shared_ptr<RequestStream> s = it->second.stream;
  const int index = it->second.prompt_index;
  metrics_->Add("kiln_requests_finished_total", 1, FinishReasonName(r.finish_reason));
  metrics_->Add("kiln_prompt_tokens_total", r.prompt_length);
  metrics_->Add("kiln_generation_tokens_total", r.generated_length);
  if (r.completion == 0)
    s->used_prompt_ += r.prompt_length;
  s->used_completion_ += r.generated_length;
  metrics_->Add("kiln_prefix_cache_hit_tokens_total", static_cast<double>(r.prefix_hit_tokens));
  if (r.finish_reason != FinishReason::kCancelled && r.generated_length > 0) {
    const double queued = std::chrono::duration<double>(Clock::now() - s->arrival_).count() -
                          r.total_seconds; // arrival to Submit, which the engine does not see
    metrics_->Observe("kiln_time_to_first_token_seconds", queued + r.ttft_seconds);
    metrics_->Observe("kiln_e2e_request_latency_seconds", queued + r.total_seconds);
    if (r.generated_length > 1)
      metrics_->Observe("kiln_time_per_output_token_seconds",
                        (r.total_seconds - r.ttft_seconds) / (r.generated_length - 1));
  }
  // The request's place in the queue is freed before its last response is
  // published: a client that has read the end of one response and sends the
  // next must find the place free (only this thread lowers pending_).
  bool done;
  {
    std::lock_guard<std::mutex> l(s->mu_);
    done = s->pending_ == 1;
  }
  if (done) {
    for (int64_t id : s->engine_ids_)
      routes_.erase(id);
    Finished(*s);
  }
  {
    std::lock_guard<std::mutex> l(s->mu_);
    ChoiceEvent ev;
    ev.choice = index * s->n_ + r.completion;
    ev.final = true;
    ev.response = std::move(r);
    s->events_.push_back(std::move(ev));
    --s->pending_;
  }
  s->cv_.notify_all();
}

void EngineLoop::Finished(RequestStream &s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    --in_flight_;
    live_.erase(
        std::remove_if(live_.begin(), live_.end(),
                       [&](const std::shared_ptr<RequestStream> &p) { return p.get() == &s; }),
        live_.end());
  }
  Report(s);
}

void EngineLoop::Report(RequestStream &s) {
  if (!s.on_usage_)
    return;
  auto report = std::move(s.on_usage_);
  s.on_usage_ = nullptr;
  report(s.used_prompt_, s.used_completion_);
}

void EngineLoop::FailAll(const Status &st) {
  std::vector<std::shared_ptr<RequestStream>> live;
  {
    std::lock_guard<std::mutex> l(mu_);
    live.swap(live_);
    for (auto &s : inbox_)
      live.push_back(s);
    in_flight_ -= static_cast<int>(live.size());
    inbox_.clear();
    if (probe_id_ >= 0) {
      ++probes_done_;
      ready_cv_.notify_all();
    }
  }
  probe_id_ = -1;
  for (auto &s : live) {
    std::vector<int64_t> ids;
    {
      std::lock_guard<std::mutex> l(s->mu_);
      s->status_ =
          Status(st.code() == StatusCode::kResourceExhausted ? st.code() : StatusCode::kInternal,
                 st.message());
      s->admitted_ = true;
      s->cancelled_ = true;
      ids = s->engine_ids_;
    }
    s->cv_.notify_all();
    for (int64_t id : ids) {
      pipe_->Cancel(id);
      routes_.erase(id);
    }
    Report(*s);
  }
}

void EngineLoop::UpdateGauges() {
  const Pipeline::Stats st = pipe_->stats();
  metrics_->Add("kiln_preemptions_total", static_cast<double>(st.preemptions - last_preemptions_));
  metrics_->Add("kiln_engine_steps_total", static_cast<double>(st.steps - last_steps_));
  last_preemptions_ = st.preemptions;
  last_steps_ = st.steps;
  metrics_->Set("kiln_running", static_cast<double>(st.running));
  metrics_->Set("kiln_waiting", static_cast<double>(st.waiting));
  metrics_->Set("kiln_queue_depth", static_cast<double>(st.waiting));
  metrics_->Set("kiln_kv_blocks_total", static_cast<double>(st.kv_blocks));
  metrics_->Set("kiln_kv_blocks_used", static_cast<double>(st.kv_blocks - st.kv_blocks_free));
  metrics_->Set("kiln_kv_block_usage_ratio",
                st.kv_blocks > 0 ? static_cast<double>(st.kv_blocks - st.kv_blocks_free) /
                                       static_cast<double>(st.kv_blocks)
                                 : 0.0);
  const double prompt = metrics_->Get("kiln_prompt_tokens_total");
  metrics_->Set("kiln_prefix_cache_hit_rate",
                prompt > 0 ? metrics_->Get("kiln_prefix_cache_hit_tokens_total") / prompt : 0.0);
  std::lock_guard<std::mutex> l(mu_);
  metrics_->Set("kiln_requests_in_flight", in_flight_);
}

} // namespace kiln::serve
