// Pipeline: request checking, tokenization and ids in front of an engine
// (batched for ragged plans, serial for dense ones).
#include "kiln/pipeline.h"

#include "backends/registry.h"
#include "comm/communicator.h"
#include "engine/engine.h"
#include "engine/plan_runner.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <limits>
#include <map>

namespace kiln {

struct Pipeline::Impl {
  std::unique_ptr<Plan> owned_plan;
  const Plan *plan = nullptr;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Backend> backend; // outlives the engine, which runs on it
  std::unique_ptr<engine::Engine> engine;
  engine::CancelList cancels;
  bool batched = false;
  int64_t context_length = 0;
  int64_t vocab_size = 0; // 0: unknown
  std::vector<int64_t> eos_ids;
  int64_t next_id = 1;
};

namespace {

Status ValidateOptions(const PipelineOptions &o) {
  auto bad = [](const std::string &what) { return InvalidArgument("pipeline option " + what); };
  if (o.kv_cache_bytes < 0)
    return bad("kv_cache_bytes must be >= 0 (0: the default), got " +
               std::to_string(o.kv_cache_bytes));
  if (o.block_size < 1 || o.block_size > 1024)
    return bad("block_size must be in [1, 1024], got " + std::to_string(o.block_size));
  if (o.max_seqs < 1)
    return bad("max_seqs must be >= 1, got " + std::to_string(o.max_seqs));
  if (o.max_batched_tokens < o.max_seqs)
    return bad("max_batched_tokens (" + std::to_string(o.max_batched_tokens) +
               ") must be >= max_seqs (" + std::to_string(o.max_seqs) +
               "), so every running sequence can decode in one step");
  if (o.max_tracked < o.max_seqs)
    return bad("max_tracked (" + std::to_string(o.max_tracked) + ") must be >= max_seqs (" +
               std::to_string(o.max_seqs) + ")");
  if (!(o.gpu_memory_utilization >= 0 && o.gpu_memory_utilization <= 1))
    return bad("gpu_memory_utilization must be in (0, 1] (0: off), got " +
               std::to_string(o.gpu_memory_utilization));
  return Status::Ok();
}

engine::EngineOptions ToEngineOptions(const PipelineOptions &o) {
  engine::EngineOptions e;
  e.kv_cache_bytes = o.kv_cache_bytes;
  e.kv_cache_cap = PipelineOptions::kDefaultKvCacheCap;
  e.block_size = o.block_size;
  e.max_batched_tokens = o.max_batched_tokens;
  e.max_seqs = o.max_seqs;
  e.max_tracked = o.max_tracked;
  e.prefix_caching = o.prefix_caching;
  return e;
}

// Leaves the pipeline idle and usable after a failed Generate: cancels the
// requests (cancels apply before the model runs) and drops their responses.
void Abandon(Pipeline &pipe, const std::map<int64_t, size_t> &requests) {
  for (const auto &[id, pos] : requests)
    pipe.Cancel(id);
  while (pipe.HasUnfinished())
    if (!pipe.Step().ok())
      break;
  (void)pipe.TakeFinished();
}

// The batched engine's model runner on `backend`, with its KV cache sized
// from `options`; under tensor parallelism every rank builds one the same
// way and the ranks agree on the smallest block count.
StatusOr<std::unique_ptr<engine::PlanModelRunner>>
MakeRunner(const Plan &plan, Backend &backend, const PipelineOptions &options,
           int64_t context_length) {
  backend.context().comm = options.comm;
  if (options.comm && options.comm->size() > 1 && options.comm->rank() == 0)
    KILN_RETURN_IF_ERROR(engine::SendTpControl(*options.comm, engine::TpControl::kOpen));
  std::unique_ptr<engine::PlanModelRunner> runner;
  if (options.gpu_memory_utilization > 0 && options.kv_cache_bytes == 0) {
    engine::PlanModelRunner::StepLimits limits;
    limits.max_tokens = options.max_batched_tokens;
    limits.max_seqs = options.max_seqs;
    limits.max_context = context_length;
    KILN_ASSIGN_OR_RETURN(runner, engine::PlanModelRunner::CreateForMemoryFraction(
                                      plan, backend, options.gpu_memory_utilization,
                                      options.block_size, limits));
  } else {
    KILN_ASSIGN_OR_RETURN(int64_t per_block,
                          engine::PlanModelRunner::BytesPerBlock(plan, options.block_size));
    int64_t blocks = 1; // a rank without KV heads: its peers set the count
    if (per_block > 0) {
      KILN_ASSIGN_OR_RETURN(blocks, engine::KvCacheBlocks(ToEngineOptions(options), per_block,
                                                          context_length));
    }
    KILN_ASSIGN_OR_RETURN(
        runner, engine::PlanModelRunner::Create(plan, backend, blocks, options.block_size));
  }
  runner->SetMaxBucket(std::min<int64_t>(options.max_seqs, options.max_batched_tokens));
  if (!options.cuda_graphs)
    runner->SetCudaGraphs(false);
  if (Communicator *comm = options.comm; comm && comm->size() > 1) {
    // Rank 0's block tables index every rank's cache: all take the
    // smallest count any rank could afford.
    std::vector<int64_t> counts(static_cast<size_t>(comm->size()));
    // A rank without KV heads has no limit of its own.
    const int64_t none = std::numeric_limits<int64_t>::max();
    const int64_t mine = runner->HoldsKv() ? runner->num_blocks() : none;
    KILN_RETURN_IF_ERROR(comm->AllGather(&mine, counts.data(),
                                         std::vector<int64_t>(counts.size(), 1), DType::kI64));
    const int64_t least = *std::min_element(counts.begin(), counts.end());
    if (least != none && least != runner->num_blocks())
      KILN_RETURN_IF_ERROR(runner->SetNumBlocks(least));
    runner->SetCommunicator(comm);
  }
  return runner;
}

} // namespace

Status RunFollower(const Plan &plan, const PipelineOptions &options) {
  KILN_RETURN_IF_ERROR(ValidateOptions(options));
  if (!options.comm || options.comm->rank() == 0)
    return InvalidArgument("RunFollower runs ranks other than 0 of a tensor-parallel run");
  if (!plan.graph().ragged())
    return InvalidArgument("tensor parallelism needs a plan with the ragged interface");
  int64_t context_length = 0;
  if (const fb::ModelMetadata *m = plan.fb().metadata())
    context_length = std::max<int64_t>(0, m->context_length());
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(options.backend));
  // One runner per pipeline rank 0 opens (kiln bench opens one per level).
  for (;;) {
    KILN_ASSIGN_OR_RETURN(engine::TpControl what, engine::ReceiveTpControl(*options.comm));
    if (what == engine::TpControl::kExit)
      return Status::Ok();
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<engine::PlanModelRunner> runner,
                          MakeRunner(plan, *backend, options, context_length));
    KILN_RETURN_IF_ERROR(runner->FollowSteps());
  }
}

Status EndFollowers(Communicator *comm) {
  if (!comm || comm->size() == 1 || comm->rank() != 0)
    return Status::Ok();
  return engine::SendTpControl(*comm, engine::TpControl::kExit);
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pipeline::~Pipeline() = default;

StatusOr<std::unique_ptr<Pipeline>> Pipeline::Open(const std::string &plan_path,
                                                   const PipelineOptions &options) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(plan_path));
  const Plan &ref = *plan;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, Create(ref, options));
  p->impl_->owned_plan = std::move(plan);
  return p;
}

StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(const Plan &plan,
                                                     const PipelineOptions &options) {
  KILN_RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_unique<Impl>();
  impl->plan = &plan;
  const fb::Plan &f = plan.fb();
  if (const auto *tj = f.tokenizer_json(); tj && tj->size() > 0) {
    auto t = Tokenizer::FromJson(std::string_view(tj->c_str(), tj->size()));
    if (!t.ok())
      return InvalidArgument("the plan's tokenizer: " + t.status().message());
    impl->tokenizer = std::move(*t);
  }
  if (const fb::ModelMetadata *m = f.metadata()) {
    impl->context_length = std::max<int64_t>(0, m->context_length());
    impl->vocab_size = std::max<int64_t>(0, m->vocab_size());
    if (m->eos_token_ids())
      impl->eos_ids.assign(m->eos_token_ids()->begin(), m->eos_token_ids()->end());
  }
  impl->batched = plan.graph().ragged() != nullptr;
  if (options.comm && options.comm->rank() != 0)
    return InvalidArgument("rank " + std::to_string(options.comm->rank()) +
                           " follows rank 0 (RunFollower); only rank 0 opens a pipeline");
  if (impl->batched) {
    const engine::EngineOptions engine_options = ToEngineOptions(options);
    KILN_ASSIGN_OR_RETURN(impl->backend, CreateBackend(options.backend));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<engine::PlanModelRunner> runner,
                          MakeRunner(plan, *impl->backend, options, impl->context_length));
    KILN_ASSIGN_OR_RETURN(impl->engine,
                          engine::CreateBatchedEngine(std::move(runner), impl->tokenizer.get(),
                                                      engine_options, impl->context_length));
  } else {
    if (options.comm && options.comm->size() > 1)
      return InvalidArgument("tensor parallelism needs a plan with the ragged interface; this "
                             "plan is dense (built with --no-ragged)");
    if (options.backend != "cpu")
      return InvalidArgument("backend '" + options.backend +
                             "' runs only plans with the ragged interface; this plan is dense "
                             "(built with --no-ragged, or the ragged pass could not rewrite it)");
    KILN_ASSIGN_OR_RETURN(impl->engine, engine::CreateSerialEngine(plan, impl->tokenizer.get()));
  }
  impl->engine->set_cancel_list(&impl->cancels);
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

RequestParams Pipeline::DefaultParams() const {
  RequestParams p;
  if (const fb::GenerationDefaults *g = impl_->plan->fb().generation()) {
    p.max_new_tokens = g->max_new_tokens();
    p.sampling.temperature = g->temperature();
    p.sampling.top_k = g->top_k();
    p.sampling.top_p = g->top_p();
    p.sampling.repetition_penalty = g->repetition_penalty();
  }
  return p;
}

StatusOr<int64_t> Pipeline::Submit(const Request &request, StreamCallback on_token) {
  KILN_RETURN_IF_ERROR(ValidateRequestParams(request.params));
  engine::Admitted a;
  if (!request.prompt_ids.empty()) {
    a.prompt = request.prompt_ids;
  } else {
    if (!impl_->tokenizer)
      return InvalidArgument("the plan has no tokenizer: give the prompt as token ids");
    KILN_ASSIGN_OR_RETURN(a.prompt, impl_->tokenizer->Encode(request.prompt, true));
  }
  if (a.prompt.empty())
    return InvalidArgument("the prompt is empty");
  for (int32_t id : a.prompt)
    if (id < 0 || (impl_->vocab_size > 0 && id >= impl_->vocab_size))
      return InvalidArgument("prompt token id " + std::to_string(id) +
                             " is outside the vocabulary [0, " + std::to_string(impl_->vocab_size) +
                             ")");
  KILN_RETURN_IF_ERROR(
      CheckPromptLength(static_cast<int64_t>(a.prompt.size()), impl_->context_length));
  a.id = impl_->next_id;
  a.params = request.params;
  a.eos_ids = impl_->eos_ids;
  a.on_token = std::move(on_token);
  a.submitted = engine::Clock::now();
  KILN_RETURN_IF_ERROR(impl_->engine->Submit(std::move(a)));
  return impl_->next_id++;
}

Status Pipeline::Step() {
  for (int64_t id : impl_->cancels.Drain())
    impl_->engine->Cancel(id);
  return impl_->engine->Step();
}

bool Pipeline::HasUnfinished() const { return impl_->engine->HasUnfinished(); }
std::vector<Response> Pipeline::TakeFinished() { return impl_->engine->TakeFinished(); }
void Pipeline::Cancel(int64_t request_id) { impl_->cancels.Add(request_id); }
void Pipeline::set_logits_hook(LogitsHook hook) { impl_->engine->set_logits_hook(std::move(hook)); }
bool Pipeline::batched() const { return impl_->batched; }
const Plan &Pipeline::plan() const { return *impl_->plan; }
const Tokenizer *Pipeline::tokenizer() const { return impl_->tokenizer.get(); }
int64_t Pipeline::context_length() const { return impl_->context_length; }
Pipeline::Stats Pipeline::stats() const {
  const engine::EngineStats e = impl_->engine->stats();
  Stats s;
  s.steps = e.steps;
  s.tokens_computed = e.tokens_computed;
  s.preemptions = e.preemptions;
  s.kv_blocks = e.kv_blocks;
  s.block_size = e.block_size;
  s.running = e.running;
  s.waiting = e.waiting;
  s.kv_blocks_free = e.kv_blocks_free;
  return s;
}

StatusOr<std::vector<Response>> Pipeline::Generate(const std::vector<std::string> &prompts,
                                                   const RequestParams &params,
                                                   const StreamCallback &on_token) {
  std::vector<Request> requests(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    requests[i].prompt = prompts[i];
    requests[i].params = params;
  }
  return Generate(requests, on_token);
}

StatusOr<std::vector<Response>> Pipeline::Generate(const std::vector<Request> &requests,
                                                   const StreamCallback &on_token) {
  if (HasUnfinished())
    return InvalidArgument("Generate needs an idle pipeline; finish the submitted requests first");
  // Check every request before running any, so a bad one fails the call
  // cleanly; with several, the message says which.
  auto which = [&](size_t i, const Status &s) {
    return requests.size() == 1
               ? s
               : Status(s.code(), "request " + std::to_string(i) + ": " + s.message());
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    Status s = ValidateRequestParams(requests[i].params);
    if (!s.ok())
      return which(i, s);
  }
  std::map<int64_t, size_t> order; // request id -> position
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = Submit(requests[i], on_token);
    if (!id.ok()) {
      Abandon(*this, order);
      return which(i, id.status());
    }
    order[*id] = i;
  }
  while (HasUnfinished()) {
    Status step = Step();
    if (!step.ok()) {
      Abandon(*this, order);
      return step;
    }
  }
  std::vector<Response> out = TakeFinished();
  std::stable_sort(out.begin(), out.end(), [&](const Response &a, const Response &b) {
    size_t pa = order[a.request_id], pb = order[b.request_id];
    return pa != pb ? pa < pb : a.completion < b.completion;
  });
  return out;
}

} // namespace kiln
