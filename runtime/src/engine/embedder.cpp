// Sentence embeddings from an encoder plan (kiln/embedder.h).
#include "kiln/embedder.h"

#include "kiln/device.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "kiln/tokenizer.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

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

StatusOr<Pooling> PlanPooling(const PlanInfo &info, bool normalize_option) {
  Pooling p;
  if (info.pooling.present) {
    if (info.pooling.mode == "cls") {
      p.mode = PoolMode::kCls;
    } else if (info.pooling.mode != "mean") {
      return InvalidArgument("the plan's pooling is '" + info.pooling.mode +
                             "' (from the model's sentence-transformers config); kiln embeds "
                             "only with 'mean' or 'cls' pooling");
    }
    p.normalize = info.pooling.normalize;
    p.from_plan = true;
  }
  p.normalize = p.normalize || normalize_option;
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

} // namespace

struct Embedder::Impl {
  const Plan *plan = nullptr;
  EncoderIO io;
  Pooling pooling;
  int batch_size = 16;
  int64_t positions = 0;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Device> device;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<BatchRunner> runner;
};

Embedder::Embedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Embedder::~Embedder() = default;

StatusOr<std::unique_ptr<Embedder>> Embedder::Create(const Plan &plan,
                                                     const EmbedderOptions &options) {
  if (options.batch_size < 1)
    return InvalidArgument("the embedding batch size must be at least 1");
  const PlanInfo info = DescribePlan(plan);
  auto impl = std::make_unique<Impl>();
  impl->plan = &plan;
  impl->batch_size = options.batch_size;
  KILN_ASSIGN_OR_RETURN(impl->io, FindEncoderIO(plan));
  KILN_ASSIGN_OR_RETURN(impl->pooling, PlanPooling(info, options.normalize));
  if (info.tokenizer_json.empty())
    return InvalidArgument("the plan has no tokenizer, so it cannot embed text");
  auto tokenizer = Tokenizer::FromJson(info.tokenizer_json);
  if (!tokenizer.ok())
    return InvalidArgument("the plan's tokenizer: " + tokenizer.status().message());
  impl->tokenizer = std::move(*tokenizer);
  impl->positions = std::max<int64_t>(0, info.model.context_length);
  const int64_t pad_id = std::max<int64_t>(0, info.model.pad_token_id);
  KILN_ASSIGN_OR_RETURN(impl->device, Device::Open(options.device));
  KILN_ASSIGN_OR_RETURN(impl->exec, Executor::Create(plan, impl->device->backend()));
  impl->runner = std::make_unique<BatchRunner>(plan, impl->io, *impl->exec, pad_id);
  return std::unique_ptr<Embedder>(new Embedder(std::move(impl)));
}

StatusOr<Embeddings> Embedder::Embed(const std::vector<std::string> &texts,
                                     const std::vector<std::vector<int32_t>> &ids) {
  std::vector<std::vector<int32_t>> all;
  all.reserve(texts.size() + ids.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto enc = impl_->tokenizer->Encode(texts[i], /*add_special_tokens=*/true);
    if (!enc.ok())
      return enc.status().WithContext("input " + std::to_string(i));
    all.push_back(std::move(*enc));
  }
  all.insert(all.end(), ids.begin(), ids.end());
  Embeddings out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].empty())
      return InvalidArgument("input " + std::to_string(i) + " has no tokens");
    if (impl_->positions > 0 && static_cast<int64_t>(all[i].size()) > impl_->positions)
      return InvalidArgument("input " + std::to_string(i) + " is " +
                             std::to_string(all[i].size()) + " tokens, more than the model's " +
                             std::to_string(impl_->positions) + " positions");
    out.token_counts.push_back(static_cast<int64_t>(all[i].size()));
    out.tokens += static_cast<int64_t>(all[i].size());
  }
  std::lock_guard<std::mutex> l(mu_);
  std::vector<float> vectors;
  int64_t hidden = 0;
  const size_t batch = static_cast<size_t>(impl_->batch_size);
  for (size_t begin = 0; begin < all.size(); begin += batch) {
    std::vector<std::vector<int32_t>> rows(all.begin() + begin,
                                           all.begin() + std::min(all.size(), begin + batch));
    KILN_RETURN_IF_ERROR(impl_->runner->Run(rows, impl_->pooling, &vectors, &hidden));
  }
  for (size_t i = 0; i < all.size(); ++i)
    out.vectors.emplace_back(vectors.begin() + i * hidden, vectors.begin() + (i + 1) * hidden);
  return out;
}

const Tokenizer &Embedder::tokenizer() const { return *impl_->tokenizer; }
const char *Embedder::pooling() const {
  return impl_->pooling.mode == PoolMode::kCls ? "cls" : "mean";
}
bool Embedder::pooling_from_plan() const { return impl_->pooling.from_plan; }
bool Embedder::normalized() const { return impl_->pooling.normalize; }
int64_t Embedder::context_length() const { return impl_->positions; }

} // namespace kiln
