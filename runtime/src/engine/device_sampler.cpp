// DeviceSampler, and PlanModelRunner's on-device sampling.
#include "engine/device_sampler.h"

#include "engine/plan_runner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln::engine {
namespace {

namespace kc = sampling;

// What a history token is to the penalties, in tokens_ while building.
enum Kind : int32_t { kPrompt = 0, kGenerated = 1, kSuppressed = 2 };

bool DeviceSamplingDisabled() {
  const char *env = std::getenv("KILN_DEVICE_SAMPLING");
  return env && std::strcmp(env, "0") == 0;
}

} // namespace

std::unique_ptr<DeviceSampler> DeviceSampler::Create(Backend &backend) {
  const KernelDef *kernel = backend.kernels().Find(kc::kSampleOpType);
  if (!kernel || DeviceSamplingDisabled())
    return nullptr;
  return std::unique_ptr<DeviceSampler>(new DeviceSampler(backend, kernel));
}

Status DeviceSampler::Reserve(DeviceBuffer &buffer, uint64_t bytes) {
  if (buffer.bytes() >= bytes)
    return Status::Ok();
  uint64_t size = std::max<uint64_t>(4096, buffer.bytes());
  while (size < bytes)
    size *= 2;
  buffer.Reset();
  KILN_ASSIGN_OR_RETURN(buffer, DeviceBuffer::Allocate(backend_, size));
  return Status::Ok();
}

void DeviceSampler::BuildRow(const RowSampling &r, int64_t logits_row, int64_t vocab) {
  const SamplingParams &p = *r.params;
  const Sequence &seq = *r.seq;
  // The CPU sampler's conditions (Sampler::Process): the repetition penalty
  // over prompt and output, presence and frequency over the output.
  const bool repetition =
      p.repetition_penalty != 1.0f && (!seq.prompt.empty() || !seq.output.empty());
  const bool counted =
      (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) && !seq.output.empty();
  tokens_.clear();
  if (repetition)
    for (int32_t t : seq.prompt)
      tokens_.push_back({t, kPrompt});
  if (repetition || counted)
    for (int32_t t : seq.output)
      tokens_.push_back({t, kGenerated});
  if (r.suppressed)
    for (int32_t t : *r.suppressed)
      tokens_.push_back({t, kSuppressed});
  std::sort(tokens_.begin(), tokens_.end());
  kc::SampleRow row;
  row.logits_row = logits_row;
  row.temperature = p.temperature;
  row.top_p = p.top_p;
  row.min_p = p.min_p;
  row.repetition_penalty = p.repetition_penalty;
  row.presence_penalty = p.presence_penalty;
  row.frequency_penalty = p.frequency_penalty;
  row.top_k = p.top_k;
  row.logprobs = std::min(p.logprobs, kc::kMaxTopLogprobs);
  row.counted = counted ? 1 : 0;
  row.uniform_bits = r.uniform_bits;
  row.penalty_begin = static_cast<int32_t>(penalties_.size());
  for (size_t i = 0; i < tokens_.size();) {
    kc::PenaltyEntry e;
    e.token = tokens_[i].first;
    for (; i < tokens_.size() && tokens_[i].first == e.token; ++i) {
      if (tokens_[i].second == kSuppressed) {
        e.flags |= kc::kPenaltySuppressed;
        continue;
      }
      if (repetition)
        e.flags |= kc::kPenaltyRepeated;
      if (tokens_[i].second == kGenerated)
        ++e.generated;
    }
    if (e.token >= 0 && e.token < vocab)
      penalties_.push_back(e);
  }
  row.penalty_end = static_cast<int32_t>(penalties_.size());
  rows_.push_back(row);
}

Status DeviceSampler::Sample(const TensorView &logits, const std::vector<int64_t> &logits_rows,
                             const std::vector<RowSampling> &rows, std::vector<RowSample> &out) {
  out.clear();
  if (logits.dtype != DType::kF32 || logits.shape.size() != 2)
    return InvalidArgument("device sampling needs f32 [rows, vocab] logits, got " +
                           std::string(DTypeName(logits.dtype)) + ShapeToString(logits.shape));
  if (logits_rows.size() != rows.size())
    return InvalidArgument("device sampling got " + std::to_string(rows.size()) +
                           " rows to sample but " + std::to_string(logits_rows.size()) +
                           " logits rows");
  const int64_t vocab = logits.shape[1];
  rows_.clear();
  penalties_.clear();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (logits_rows[i] < 0 || logits_rows[i] >= logits.shape[0])
      return InvalidArgument("device sampling: logits row " + std::to_string(logits_rows[i]) +
                             " is outside [0, " + std::to_string(logits.shape[0]) + ")");
    if (!rows[i].params || !rows[i].seq)
      return InvalidArgument("device sampling: row " + std::to_string(i) +
                             " has no parameters or sequence");
    BuildRow(rows[i], logits_rows[i], vocab);
  }
  if (rows.empty())
    return Status::Ok();
  const uint64_t row_bytes = rows_.size() * sizeof(kc::SampleRow);
  const uint64_t penalty_bytes = penalties_.size() * sizeof(kc::PenaltyEntry);
  const uint64_t result_bytes = rows_.size() * sizeof(kc::SampleResult);
  KILN_RETURN_IF_ERROR(Reserve(rows_dev_, row_bytes));
  KILN_RETURN_IF_ERROR(Reserve(results_dev_, result_bytes));
  if (penalty_bytes > 0)
    KILN_RETURN_IF_ERROR(Reserve(penalties_dev_, penalty_bytes));
  KILN_RETURN_IF_ERROR(backend_.CopyFromHost(rows_dev_.data(), rows_.data(), row_bytes));
  if (penalty_bytes > 0)
    KILN_RETURN_IF_ERROR(
        backend_.CopyFromHost(penalties_dev_.data(), penalties_.data(), penalty_bytes));
  const MemorySpace space = backend_.memory_space();
  const auto bytes = [](uint64_t n) { return Shape{static_cast<int64_t>(n)}; };
  const TensorView row_view{DType::kU8, bytes(row_bytes), rows_dev_.data(), space};
  const TensorView penalty_view{DType::kU8, bytes(penalty_bytes), penalties_dev_.data(), space};
  Outputs outputs = {TensorView{DType::kU8, bytes(result_bytes), results_dev_.data(), space}};
  KILN_RETURN_IF_ERROR(
      kernel_->run(backend_.context(), OpAttrs{}, {&logits, &row_view, &penalty_view}, outputs));
  results_.resize(rows_.size());
  KILN_RETURN_IF_ERROR(backend_.CopyToHost(results_.data(), results_dev_.data(), result_bytes));
  out.resize(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) {
    const kc::SampleResult &res = results_[i];
    RowSample &o = out[i];
    o.drew = res.drew != 0;
    o.sample.token = res.token;
    if (rows_[i].logprobs > 0) {
      o.sample.logprob = res.logprob;
      const int n = std::clamp(res.num_top, 0, kc::kMaxTopLogprobs);
      for (int j = 0; j < n; ++j)
        o.sample.top.push_back({res.top_tokens[j], res.top_logprobs[j]});
    }
  }
  return Status::Ok();
}

Status PlanModelRunner::RunAndSample(const Step &step, const std::vector<RowSampling> &rows,
                                     std::vector<RowSample> &out) {
  if (!device_sampler_)
    return Unimplemented("the " + std::string(backend_.name()) +
                         " backend samples on the host (or KILN_DEVICE_SAMPLING=0)");
  for (const ScheduledChunk &c : step.chunks)
    if (c.all_logits)
      return InvalidArgument("a chunk that returns every position's logits cannot be sampled "
                             "on the device; use Run");
  int64_t sampled = 0;
  KILN_RETURN_IF_ERROR(Execute(step, &sampled));
  out.clear();
  if (static_cast<int64_t>(rows.size()) != sampled)
    return InvalidArgument("the step samples " + std::to_string(sampled) + " rows but " +
                           std::to_string(rows.size()) + " sampling rows were given");
  if (sampled == 0)
    return Status::Ok();
  const TensorView &o = executor_->output(logits_);
  TensorView view{DType::kF32, {o.numel() / vocab_, vocab_}, o.data, o.space};
  std::vector<int64_t> logits_rows(static_cast<size_t>(sampled));
  // A row per sampled chunk, or a padded decode step's bucket of rows whose
  // first `sampled` are the real sequences'.
  const int64_t padded_rows = static_cast<int64_t>(rows_buf_.size());
  if (o.dtype == DType::kF32 &&
      (o.numel() == sampled * vocab_ || o.numel() == padded_rows * vocab_)) {
    for (int64_t i = 0; i < sampled; ++i)
      logits_rows[i] = i;
  } else if (o.dtype == DType::kF32 && o.numel() == step.num_tokens * vocab_) {
    logits_rows.assign(rows_buf_.begin(), rows_buf_.begin() + sampled);
  } else {
    return Internal("the plan's logits are " + ShapeToString(o.shape) + " for " +
                    std::to_string(sampled) + " sampled rows of vocab " + std::to_string(vocab_));
  }
  return device_sampler_->Sample(view, logits_rows, rows, out);
}

} // namespace kiln::engine
