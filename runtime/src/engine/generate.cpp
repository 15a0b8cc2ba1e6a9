// DecoderSession: drives a plan's DecoderIO through prefill and decode steps.
#include "kiln/generate.h"

#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace kiln {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Writes `n` integers from `value(i)` as the tensor's dtype (i64 or i32).
template <typename F> void FillInts(std::vector<uint8_t> &buf, DType dtype, int64_t n, F value) {
  buf.resize(static_cast<size_t>(n) * DTypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::kI64) {
      int64_t v = value(i);
      std::memcpy(buf.data() + i * 8, &v, 8);
    } else {
      int32_t v = static_cast<int32_t>(value(i));
      std::memcpy(buf.data() + i * 4, &v, 4);
    }
  }
}

} // namespace

GenerateOptions GenerateOptions::FromPlan(const Plan &plan) {
  GenerateOptions o;
  if (const fb::GenerationDefaults *g = plan.fb().generation()) {
    o.max_new_tokens = g->max_new_tokens();
    o.sampling.temperature = g->temperature();
    o.sampling.top_k = g->top_k();
    o.sampling.top_p = g->top_p();
    o.sampling.repetition_penalty = g->repetition_penalty();
  }
  if (const fb::ModelMetadata *m = plan.fb().metadata())
    if (m->eos_token_ids())
      o.eos_token_ids.assign(m->eos_token_ids()->begin(), m->eos_token_ids()->end());
  return o;
}

StatusOr<std::unique_ptr<DecoderSession>> DecoderSession::Create(const Plan &plan) {
  std::unique_ptr<DecoderSession> s(new DecoderSession(plan));
  KILN_RETURN_IF_ERROR(s->Init());
  return s;
}

Status DecoderSession::Init() {
  const fb::DecoderIO *d = plan_.graph().decoder();
  if (!d || d->input_ids() < 0 || d->logits() < 0)
    return InvalidArgument("the plan has no decoder interface (input_ids and logits); "
                           "use `kiln exec` to run its graph");
  const auto &tensors = plan_.tensors();
  input_ids_ = plan_.InputIndex(d->input_ids());
  attention_mask_ = d->attention_mask() >= 0 ? plan_.InputIndex(d->attention_mask()) : -1;
  position_ids_ = d->position_ids() >= 0 ? plan_.InputIndex(d->position_ids()) : -1;
  logits_ = plan_.OutputIndex(d->logits());
  if (tensors[d->logits()].dtype != DType::kF32)
    return Unimplemented("logits are " + std::string(DTypeName(tensors[d->logits()].dtype)) +
                         "; generation reads f32 logits");
  for (int id : {d->input_ids(), d->attention_mask(), d->position_ids()}) {
    if (id < 0)
      continue;
    const PlanTensor &t = tensors[id];
    if ((t.dtype != DType::kI64 && t.dtype != DType::kI32) || t.dims.size() != 2)
      return InvalidArgument("decoder input '" + t.name + "' is " + DTypeName(t.dtype) +
                             t.DimsToString() + "; expected i64 or i32 of rank 2 [batch, seq]");
  }
  // The batch dim's name, to tell it from the sequence dim in past tensors.
  const std::string &batch_symbol = tensors[d->input_ids()].dims[0].symbol;

  std::vector<bool> has_role(plan_.inputs().size(), false);
  for (int i : {input_ids_, attention_mask_, position_ids_})
    if (i >= 0)
      has_role[i] = true;
  if (d->kv()) {
    for (const fb::KVPair *pair : *d->kv()) {
      KV kv;
      kv.past_input = plan_.InputIndex(pair->past());
      kv.present_output = plan_.OutputIndex(pair->present());
      has_role[kv.past_input] = true;
      const PlanTensor &past = tensors[pair->past()];
      const PlanTensor &present = tensors[pair->present()];
      if (past.dtype != present.dtype)
        return InvalidArgument("past '" + past.name + "' and present '" + present.name +
                               "' have different dtypes");
      // Before the first token the past is empty: batch 1, sequence 0.
      int sequence_dims = 0;
      for (size_t j = 0; j < past.dims.size(); ++j) {
        const PlanDim &dim = past.dims[j];
        bool batch = dim.value < 0 && ((!dim.symbol.empty() && dim.symbol == batch_symbol) ||
                                       (dim.symbol.empty() && j == 0));
        if (dim.value >= 0) {
          kv.initial_shape.push_back(dim.value);
        } else if (batch) {
          kv.initial_shape.push_back(1);
        } else {
          kv.initial_shape.push_back(0);
          ++sequence_dims;
        }
      }
      if (sequence_dims != 1)
        return InvalidArgument("past '" + past.name + "' " + past.DimsToString() +
                               ": expected exactly one dynamic sequence dim besides batch");
      kv_.push_back(std::move(kv));
    }
  }
  for (size_t i = 0; i < has_role.size(); ++i)
    if (!has_role[i])
      return InvalidArgument("plan input '" + tensors[plan_.inputs()[i]].name +
                             "' has no decoder role, so generation cannot bind it");
  if (const fb::ModelMetadata *m = plan_.fb().metadata())
    context_length_ = std::max<int64_t>(0, m->context_length());
  KILN_ASSIGN_OR_RETURN(executor_, Executor::Create(plan_));
  return Status::Ok();
}

Status DecoderSession::RunModel(const std::vector<int32_t> &tokens, int64_t past_len) {
  const auto &tensors = plan_.tensors();
  const auto &in_ids = plan_.inputs();
  int64_t total = static_cast<int64_t>(tokens.size());
  int64_t n = total - past_len;
  std::vector<TensorView> inputs(in_ids.size());
  auto bind_ints = [&](int pos, std::vector<uint8_t> &buf, int64_t len, auto value) {
    DType dt = tensors[in_ids[pos]].dtype;
    FillInts(buf, dt, len, value);
    inputs[pos] = {dt, {1, len}, buf.data()};
  };
  bind_ints(input_ids_, ids_buf_, n, [&](int64_t i) { return tokens[past_len + i]; });
  if (attention_mask_ >= 0)
    bind_ints(attention_mask_, mask_buf_, total, [](int64_t) { return 1; });
  if (position_ids_ >= 0)
    bind_ints(position_ids_, pos_buf_, n, [&](int64_t i) { return past_len + i; });
  for (KV &kv : kv_) {
    TensorView &v = inputs[kv.past_input];
    v.dtype = tensors[in_ids[kv.past_input]].dtype;
    v.shape = kv.shape;
    v.data = kv.buffers[kv.current].data();
  }
  KILN_RETURN_IF_ERROR(executor_->Bind(inputs));
  return executor_->Run();
}

void DecoderSession::ResetPast() {
  for (KV &kv : kv_) {
    kv.shape = kv.initial_shape;
    kv.current = 0;
    kv.buffers[0].clear();
  }
}

Status DecoderSession::Step(const std::vector<int32_t> &tokens, int64_t past_len) {
  KILN_RETURN_IF_ERROR(RunModel(tokens, past_len));
  const TensorView &logits = executor_->output(logits_);
  int64_t vocab = logits.shape.empty() ? 0 : logits.shape.back();
  if (vocab <= 0 || logits.numel() < vocab)
    return Internal("logits have shape " + ShapeToString(logits.shape));
  const float *last = logits.as<float>() + (logits.numel() - vocab);
  last_logits_.assign(last, last + vocab);

  // The present may sit in the arena (overwritten by the next run) or even
  // alias this step's past, so it is copied into the other buffer.
  for (KV &kv : kv_) {
    const TensorView &present = executor_->output(kv.present_output);
    std::vector<uint8_t> &next = kv.buffers[1 - kv.current];
    next.resize(present.bytes());
    if (present.bytes())
      std::memcpy(next.data(), present.data, present.bytes());
    kv.shape = present.shape;
    kv.current = 1 - kv.current;
  }
  return Status::Ok();
}

Status DecoderSession::AllLogits(const std::vector<int32_t> &tokens, std::vector<float> &logits) {
  logits.clear();
  if (tokens.empty())
    return InvalidArgument("no tokens to run");
  const int64_t n = static_cast<int64_t>(tokens.size());
  KILN_RETURN_IF_ERROR(CheckPromptLength(n, context_length_));
  ResetPast();
  KILN_RETURN_IF_ERROR(RunModel(tokens, 0));
  const TensorView &out = executor_->output(logits_);
  const int64_t vocab = out.shape.empty() ? 0 : out.shape.back();
  if (vocab <= 0 || out.numel() != n * vocab)
    return InvalidArgument("the plan's logits are " + ShapeToString(out.shape) + " for " +
                           std::to_string(n) +
                           " tokens; scoring needs a row for every position (the model was "
                           "exported to return only the last position's)");
  logits.assign(out.as<float>(), out.as<float>() + out.numel());
  return Status::Ok();
}

StatusOr<GenerateResult> DecoderSession::Generate(const std::vector<int32_t> &prompt,
                                                  const GenerateOptions &options,
                                                  const TokenCallback &on_token) {
  StepCallback on_step;
  if (on_token)
    on_step = [&on_token](const GenerateStep &step) { return on_token(step.token); };
  return GenerateStreaming(prompt, options, on_step);
}

StatusOr<GenerateResult> DecoderSession::GenerateStreaming(const std::vector<int32_t> &prompt,
                                                           const GenerateOptions &options,
                                                           const StepCallback &on_step) {
  if (prompt.empty())
    return InvalidArgument("the prompt is empty");
  KILN_RETURN_IF_ERROR(CheckPromptLength(static_cast<int64_t>(prompt.size()), context_length_));
  if (options.n != 1)
    return InvalidArgument("n is " + std::to_string(options.n) +
                           ": a session generates one completion per call; give completion i "
                           "the sampling of CompletionSampling(options, i)");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<StopChecker> checker,
                        StopChecker::Create(options, options.eos_token_ids, tokenizer_));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Sampler> sampler, Sampler::Create(options.sampling));

  GenerateResult result;
  result.prompt_tokens = static_cast<int>(prompt.size());
  if (options.max_new_tokens == 0)
    return result;
  ResetPast();
  std::vector<int32_t> tokens = prompt;
  int64_t past_len = 0;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0;; ++step) {
    KILN_RETURN_IF_ERROR(Step(tokens, past_len));
    // With KV pairs the model has now seen every token; without, each step
    // starts again from the first.
    if (!kv_.empty())
      past_len = static_cast<int64_t>(tokens.size());
    if (logits_hook_)
      logits_hook_(last_logits_.data(), static_cast<int64_t>(last_logits_.size()));
    SampledToken sample =
        sampler->Sample(last_logits_.data(), static_cast<int64_t>(last_logits_.size()), tokens,
                        prompt.size(), checker->Suppressed());
    tokens.push_back(sample.token);
    result.tokens.push_back(sample.token);
    if (step == 0) {
      result.prefill_seconds = Seconds(start);
      start = std::chrono::steady_clock::now();
    } else {
      result.decode_steps = step;
      result.decode_seconds = Seconds(start);
    }
    GenerateStep out{sample.token, checker->Append(sample.token), &sample};
    bool context_full = !checker->finished() && context_length_ > 0 &&
                        static_cast<int64_t>(tokens.size()) >= context_length_;
    if (context_full)
      out.text += checker->Flush();
    result.text += out.text;
    bool keep_going = !on_step || on_step(out);
    if (options.sampling.logprobs > 0)
      result.logprobs.push_back(std::move(sample));
    // The order of reasons when several hold at once: the token's own (EOS,
    // stop id, stop string), then the caller, then length, then context.
    if (checker->finished() && checker->finish_reason() != FinishReason::kLength) {
      result.finish = checker->finish_reason();
      break;
    }
    if (!keep_going) {
      result.finish = FinishReason::kCancelled;
      result.text += checker->Flush();
      break;
    }
    if (checker->finished()) {
      result.finish = FinishReason::kLength;
      break;
    }
    if (context_full) {
      result.finish = FinishReason::kContext;
      break;
    }
  }
  return result;
}

} // namespace kiln
