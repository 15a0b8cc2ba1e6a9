// PlanModelRunner: a scheduled Step as the plan's ragged inputs.
#include "engine/plan_runner.h"

#include "core/paged_indices.h"
#include "engine/step_buckets.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace kiln::engine {
namespace {

// The ragged roles of `plan`, checked: every role is an input of the right
// dtype and rank, every input has a role, the caches are f32, f16 or bf16
// with static head counts and head dims.
struct Roles {
  int ids = -1, pos = -1, slots = -1, qstart = -1, ctx = -1, tables = -1, rows = -1, logits = -1;
  struct Layer {
    int key = -1, value = -1;
    int64_t kv_heads = 0, key_dim = 0, value_dim = 0;
    DType dtype = DType::kF32;
  };
  std::vector<Layer> layers;
  int64_t vocab = 0;
};

StatusOr<Roles> ReadRoles(const Plan &plan) {
  const fb::RaggedIO *r = plan.graph().ragged();
  if (!r)
    return InvalidArgument("the plan has no ragged interface (it was built with --no-ragged, or "
                           "kiln-ragged could not rewrite the model; `kiln build` said why)");
  const auto &tensors = plan.tensors();
  Roles roles;
  std::vector<bool> has_role(plan.inputs().size(), false);
  auto input = [&](int id, const char *role, int rank, int *out) -> Status {
    int index = id >= 0 && id < static_cast<int>(tensors.size()) ? plan.InputIndex(id) : -1;
    if (index < 0)
      return InvalidArgument(std::string("the plan's ragged role ") + role +
                             " is not a graph input");
    const PlanTensor &t = tensors[id];
    if (t.dtype != DType::kI64 || static_cast<int>(t.dims.size()) != rank)
      return InvalidArgument(std::string("ragged input ") + role + " is " + DTypeName(t.dtype) +
                             t.DimsToString() + "; expected i64 of rank " + std::to_string(rank));
    has_role[index] = true;
    *out = index;
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(input(r->input_ids(), "input_ids", 2, &roles.ids));
  KILN_RETURN_IF_ERROR(input(r->position_ids(), "position_ids", 2, &roles.pos));
  KILN_RETURN_IF_ERROR(input(r->kv_slots(), "kv_slots", 1, &roles.slots));
  KILN_RETURN_IF_ERROR(input(r->query_start(), "query_start", 1, &roles.qstart));
  KILN_RETURN_IF_ERROR(input(r->context_lens(), "context_lens", 1, &roles.ctx));
  KILN_RETURN_IF_ERROR(input(r->block_tables(), "block_tables", 2, &roles.tables));
  KILN_RETURN_IF_ERROR(input(r->logits_indices(), "logits_indices", 1, &roles.rows));

  int logits = r->logits();
  roles.logits =
      logits >= 0 && logits < static_cast<int>(tensors.size()) ? plan.OutputIndex(logits) : -1;
  if (roles.logits < 0)
    return InvalidArgument("the plan's ragged logits are not a graph output");
  const PlanTensor &lt = tensors[logits];
  if (lt.dtype != DType::kF32 || lt.dims.size() != 3 || lt.dims[2].value <= 0)
    return InvalidArgument("ragged logits are " + std::string(DTypeName(lt.dtype)) +
                           lt.DimsToString() +
                           "; expected f32 [1, rows, vocab] with a static vocab");
  roles.vocab = lt.dims[2].value;

  if (!r->kv_cache() || r->kv_cache()->size() == 0)
    return InvalidArgument("the plan's ragged interface has no KV cache");
  for (const fb::KVCache *c : *r->kv_cache()) {
    Roles::Layer layer;
    for (auto [id, out, dim] : {std::tuple{c->key(), &layer.key, &layer.key_dim},
                                std::tuple{c->value(), &layer.value, &layer.value_dim}}) {
      int index = id >= 0 && id < static_cast<int>(tensors.size()) ? plan.InputIndex(id) : -1;
      if (index < 0)
        return InvalidArgument("a KV cache of the plan's ragged interface is not a graph input");
      const PlanTensor &t = tensors[id];
      const bool float_type =
          t.dtype == DType::kF32 || t.dtype == DType::kF16 || t.dtype == DType::kBF16;
      // kv_heads 0: a tensor-parallel rank that holds none of the layer's
      // heads (docs/tensor-parallel.md); its cache is empty.
      if (!float_type || t.dims.size() != 4 || t.dims[1].value < 0 || t.dims[3].value <= 0)
        return InvalidArgument("KV cache '" + t.name + "' is " + DTypeName(t.dtype) +
                               t.DimsToString() +
                               "; expected f32, f16 or bf16 [num_blocks, kv_heads, block_size, "
                               "head_dim] with static kv_heads and head_dim");
      if (out == &layer.value && (layer.kv_heads != t.dims[1].value || layer.dtype != t.dtype))
        return InvalidArgument("KV cache '" + t.name +
                               "' has another head count or dtype than its key");
      layer.kv_heads = t.dims[1].value;
      layer.dtype = t.dtype;
      *dim = t.dims[3].value;
      *out = index;
      has_role[index] = true;
    }
    roles.layers.push_back(layer);
  }
  for (size_t i = 0; i < has_role.size(); ++i)
    if (!has_role[i])
      return InvalidArgument("plan input '" + tensors[plan.inputs()[i]].name +
                             "' has no ragged role, so the engine cannot bind it");
  return roles;
}

TensorView View(std::vector<int64_t> &buf, Shape shape) {
  return TensorView{DType::kI64, std::move(shape), buf.data()};
}

} // namespace

StatusOr<int64_t> PlanModelRunner::BytesPerBlock(const Plan &plan, int64_t block_size) {
  KILN_ASSIGN_OR_RETURN(Roles roles, ReadRoles(plan));
  if (block_size < 1)
    return InvalidArgument("block_size must be >= 1, got " + std::to_string(block_size));
  int64_t bytes = 0;
  for (const Roles::Layer &l : roles.layers)
    bytes += l.kv_heads * block_size * (l.key_dim + l.value_dim) *
             static_cast<int64_t>(DTypeSize(l.dtype));
  return bytes;
}

StatusOr<std::unique_ptr<PlanModelRunner>>
PlanModelRunner::Prepare(const Plan &plan, Backend &backend, int64_t block_size) {
  KILN_ASSIGN_OR_RETURN(Roles roles, ReadRoles(plan));
  if (block_size < 1)
    return InvalidArgument("the KV cache needs block_size >= 1, got " + std::to_string(block_size));
  std::unique_ptr<PlanModelRunner> r(new PlanModelRunner(plan, backend, 0, block_size));
  r->ids_ = roles.ids;
  r->pos_ = roles.pos;
  r->slots_ = roles.slots;
  r->qstart_ = roles.qstart;
  r->ctx_ = roles.ctx;
  r->tables_ = roles.tables;
  r->rows_ = roles.rows;
  r->logits_ = roles.logits;
  r->vocab_ = roles.vocab;
  r->kv_window_ = PagedKvWindow(plan);
  for (const Roles::Layer &l : roles.layers) {
    Cache c;
    c.key_input = l.key;
    c.value_input = l.value;
    c.dtype = l.dtype;
    c.key_shape = {0, l.kv_heads, block_size, l.key_dim};
    c.value_shape = {0, l.kv_heads, block_size, l.value_dim};
    r->caches_.push_back(std::move(c));
  }
  // The weights first: on a device they decide what memory is left.
  KILN_ASSIGN_OR_RETURN(r->executor_, Executor::Create(plan, backend));
  r->device_sampler_ = DeviceSampler::Create(backend);
  const char *env = std::getenv("KILN_CUDA_GRAPHS");
  r->SetCudaGraphs(!(env && std::strcmp(env, "0") == 0));
  return r;
}

bool PlanModelRunner::HoldsKv() const {
  for (const Cache &c : caches_)
    if (c.key_shape[1] > 0 || c.value_shape[1] > 0)
      return true;
  return false;
}

void PlanModelRunner::SetCudaGraphs(bool on) {
  graphs_ = on && backend_.CanCapture();
  buckets_ = graphs_;
}

Status PlanModelRunner::PadDecode(int64_t &T, int64_t &N) {
  StepArrays a;
  a.ids.swap(ids_buf_);
  a.pos.swap(pos_buf_);
  a.slots.swap(slots_buf_);
  a.qstart.swap(qstart_buf_);
  a.ctx.swap(ctx_buf_);
  a.tables.swap(tables_buf_);
  a.rows.swap(rows_buf_);
  a.width = max_blocks_;
  const bool padded = PadDecodeStep(a, DecodeBucket(N, max_bucket_), TableBucket(max_blocks_));
  const int64_t seqs = a.seqs();
  ids_buf_.swap(a.ids);
  pos_buf_.swap(a.pos);
  slots_buf_.swap(a.slots);
  qstart_buf_.swap(a.qstart);
  ctx_buf_.swap(a.ctx);
  tables_buf_.swap(a.tables);
  rows_buf_.swap(a.rows);
  if (!padded)
    return Internal("a decode step's index arrays are not one token per sequence");
  max_blocks_ = a.width;
  T = N = seqs;
  return Status::Ok();
}

Status PlanModelRunner::AllocateCaches() {
  for (Cache &c : caches_) {
    c.key.Reset();
    c.value.Reset();
  }
  for (Cache &c : caches_) {
    c.key_shape[0] = num_blocks_;
    c.value_shape[0] = num_blocks_;
    // Not zeroed: attention reads only positions its sequence wrote, and
    // untouched host pages cost no memory until a block is first used.
    const uint64_t elem = DTypeSize(c.dtype);
    uint64_t key_bytes = elem, value_bytes = elem;
    for (int64_t d : c.key_shape)
      key_bytes *= static_cast<uint64_t>(d);
    for (int64_t d : c.value_shape)
      value_bytes *= static_cast<uint64_t>(d);
    for (auto [bytes, buffer] : {std::pair{key_bytes, &c.key}, std::pair{value_bytes, &c.value}}) {
      StatusOr<DeviceBuffer> got = DeviceBuffer::Allocate(backend_, bytes);
      if (!got.ok())
        return Status(StatusCode::kResourceExhausted,
                      "cannot allocate a KV cache of " +
                          std::to_string((key_bytes + value_bytes) >> 20) +
                          " MiB for one layer on the " + backend_.name() +
                          " backend; lower the KV cache budget (" + got.status().message() + ")");
      *buffer = std::move(got.value());
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<PlanModelRunner>> PlanModelRunner::Create(const Plan &plan,
                                                                   Backend &backend,
                                                                   int64_t num_blocks,
                                                                   int64_t block_size) {
  KILN_RETURN_IF_ERROR(ReadRoles(plan).status());
  if (num_blocks < 1 || block_size < 1)
    return InvalidArgument("the KV cache needs num_blocks >= 1 and block_size >= 1, got " +
                           std::to_string(num_blocks) + " and " + std::to_string(block_size));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PlanModelRunner> r, Prepare(plan, backend, block_size));
  r->num_blocks_ = num_blocks;
  KILN_RETURN_IF_ERROR(r->AllocateCaches());
  return r;
}

StatusOr<std::unique_ptr<PlanModelRunner>>
PlanModelRunner::CreateForMemoryFraction(const Plan &plan, Backend &backend, double fraction,
                                         int64_t block_size, const StepLimits &limits) {
  if (!(fraction > 0 && fraction <= 1))
    return InvalidArgument("the KV cache's share of free device memory must be in (0, 1], got " +
                           std::to_string(fraction));
  if (limits.max_tokens < 1 || limits.max_seqs < 1)
    return InvalidArgument("a step needs at least one token and one sequence");
  if (backend.memory_space() == MemorySpace::kHost)
    return InvalidArgument(std::string("a KV cache sized by free device memory needs a device "
                                       "backend; the ") +
                           backend.name() + " backend's memory is the host's (give its size)");
  KILN_ASSIGN_OR_RETURN(const int64_t per_block, BytesPerBlock(plan, block_size));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PlanModelRunner> r, Prepare(plan, backend, block_size));
  KILN_RETURN_IF_ERROR(r->ReserveActivations(limits));
  r->SetMaxBucket(std::min(limits.max_seqs, limits.max_tokens));
  KILN_ASSIGN_OR_RETURN(DeviceMemoryInfo memory, backend.MemoryInfo());
  const double budget = fraction * static_cast<double>(memory.free_bytes);
  // A rank without heads holds no KV: any count fits (its peers decide).
  const int64_t blocks =
      per_block > 0 ? static_cast<int64_t>(budget / static_cast<double>(per_block)) : 1;
  if (blocks < 1)
    return Status(StatusCode::kResourceExhausted,
                  std::to_string(fraction) + " of the " + std::to_string(memory.free_bytes >> 20) +
                      " MiB the " + backend.name() +
                      " device has free after the weights and activations holds no KV block of " +
                      std::to_string(per_block) + " bytes");
  r->num_blocks_ = blocks;
  KILN_RETURN_IF_ERROR(r->AllocateCaches());
  return r;
}

Status PlanModelRunner::ReserveActivations(const StepLimits &limits) {
  // One-block caches: the step's shapes, not its cache, size the arena.
  num_blocks_ = 1;
  KILN_RETURN_IF_ERROR(AllocateCaches());
  // N sequences of one token each, but the last, which takes the rest; each
  // samples, and the block table is as wide as the longest context needs.
  const int64_t T = limits.max_tokens;
  const int64_t N = std::min(limits.max_seqs, T);
  const int64_t longest = std::max(limits.max_context, T);
  const int64_t width = (longest + block_size_ - 1) / block_size_;
  ids_buf_.assign(T, 0);
  pos_buf_.assign(T, 0);
  slots_buf_.assign(T, -1); // stores nothing
  qstart_buf_.assign(1, 0);
  ctx_buf_.clear();
  rows_buf_.clear();
  for (int64_t s = 0; s < N; ++s) {
    const int64_t n = s + 1 < N ? 1 : T - (N - 1);
    qstart_buf_.push_back(qstart_buf_.back() + n);
    ctx_buf_.push_back(n);
    rows_buf_.push_back(qstart_buf_.back() - 1);
  }
  tables_buf_.assign(static_cast<size_t>(N * width), 0);
  max_blocks_ = width;
  Status st = BindStep(T, N);
  num_blocks_ = 0;
  for (Cache &c : caches_) {
    c.key.Reset();
    c.value.Reset();
  }
  return st;
}

Status PlanModelRunner::BuildIndices(const Step &step) {
  const int64_t N = static_cast<int64_t>(step.chunks.size());
  int64_t max_blocks = 1;
  for (const ScheduledChunk &c : step.chunks)
    max_blocks = std::max(max_blocks, (c.start + c.num_tokens + block_size_ - 1) / block_size_);

  ids_buf_.clear();
  pos_buf_.clear();
  slots_buf_.clear();
  rows_buf_.clear();
  qstart_buf_.assign(1, 0);
  ctx_buf_.clear();
  tables_buf_.assign(static_cast<size_t>(N * max_blocks), 0);
  for (int64_t s = 0; s < N; ++s) {
    const ScheduledChunk &c = step.chunks[s];
    const Sequence &seq = *c.seq;
    const int64_t end = c.start + c.num_tokens;
    if (static_cast<int64_t>(seq.block_table.size()) * block_size_ < end)
      return Internal("sequence " + std::to_string(seq.id) + " has blocks for " +
                      std::to_string(seq.block_table.size() * block_size_) +
                      " tokens but the step computes up to position " + std::to_string(end));
    for (int64_t p = c.start; p < end; ++p) {
      ids_buf_.push_back(seq.TokenAt(p));
      pos_buf_.push_back(p);
      slots_buf_.push_back(int64_t{seq.block_table[p / block_size_]} * block_size_ +
                           p % block_size_);
    }
    qstart_buf_.push_back(static_cast<int64_t>(ids_buf_.size()));
    ctx_buf_.push_back(end);
    const int64_t used = (end + block_size_ - 1) / block_size_;
    for (int64_t j = 0; j < used; ++j)
      // A block released behind the window is never read: any valid id.
      tables_buf_[s * max_blocks + j] = std::max(seq.block_table[j], 0);
    if (c.all_logits) {
      for (int64_t row = qstart_buf_[s]; row < qstart_buf_[s + 1]; ++row)
        rows_buf_.push_back(row);
    } else if (c.samples) {
      rows_buf_.push_back(static_cast<int64_t>(ids_buf_.size()) - 1);
    }
  }
  max_blocks_ = max_blocks;
  return Status::Ok();
}

Status PlanModelRunner::BindStep(int64_t T, int64_t N) {
  std::vector<TensorView> inputs(plan_.inputs().size());
  inputs[ids_] = View(ids_buf_, {1, T});
  inputs[pos_] = View(pos_buf_, {1, T});
  inputs[slots_] = View(slots_buf_, {T});
  inputs[qstart_] = View(qstart_buf_, {N + 1});
  inputs[ctx_] = View(ctx_buf_, {N});
  inputs[tables_] = View(tables_buf_, {N, max_blocks_});
  inputs[rows_] = View(rows_buf_, {static_cast<int64_t>(rows_buf_.size())});
  const MemorySpace space = backend_.memory_space();
  for (Cache &c : caches_) {
    inputs[c.key_input] = TensorView{c.dtype, c.key_shape, c.key.data(), space};
    inputs[c.value_input] = TensorView{c.dtype, c.value_shape, c.value.data(), space};
  }
  return executor_->Bind(inputs);
}

Status PlanModelRunner::Run(const Step &step, std::vector<float> &logits) {
  logits.clear();
  int64_t L = 0;
  KILN_RETURN_IF_ERROR(Execute(step, &L));
  if (L == 0)
    return Status::Ok();
  const int64_t T = step.num_tokens;
  const TensorView &out = executor_->output(logits_);
  logits.resize(static_cast<size_t>(L * vocab_));
  const int64_t R = static_cast<int64_t>(rows_buf_.size()); // L, or a padded step's bucket
  if (out.dtype == DType::kF32 && out.numel() == L * vocab_)
    return executor_->CopyOutputToHost(logits_, logits.data());
  if (out.dtype == DType::kF32 && out.numel() == R * vocab_ && out.data) {
    // A padded step: its first L rows are the real sequences'.
    const uint64_t bytes = static_cast<uint64_t>(L * vocab_) * sizeof(float);
    if (out.space == MemorySpace::kDevice)
      return backend_.CopyToHost(logits.data(), out.data, bytes);
    KILN_RETURN_IF_ERROR(backend_.Synchronize());
    std::memcpy(logits.data(), out.data, bytes);
    return Status::Ok();
  }
  if (out.dtype == DType::kF32 && out.numel() == T * vocab_ && out.data)
    return CopyRows(out, static_cast<size_t>(L), logits);
  return Internal("the plan's logits are " + ShapeToString(out.shape) + " for " +
                  std::to_string(L) + " sampled rows of vocab " + std::to_string(vocab_));
}

Status PlanModelRunner::Execute(const Step &step, int64_t *sampled) {
  int64_t T = step.num_tokens;
  int64_t N = static_cast<int64_t>(step.chunks.size());
  if (T < 1 || N < 1)
    return InvalidArgument("an empty step has nothing to run");
  KILN_RETURN_IF_ERROR(BuildIndices(step));
  if (static_cast<int64_t>(ids_buf_.size()) != T)
    return Internal("step says " + std::to_string(T) + " tokens but its chunks hold " +
                    std::to_string(ids_buf_.size()));
  // Rows the caller gets back; a padded step computes more.
  const int64_t L = static_cast<int64_t>(rows_buf_.size());
  *sampled = L;
  const bool decode = IsDecodeOnly(step);
  if (decode && buckets_)
    KILN_RETURN_IF_ERROR(PadDecode(T, N));
  executor_->SetGraphs(decode && graphs_);
  if (L == 0) {
    // Nothing samples (every chunk is a middle piece of a prompt), but the
    // KV must still be written: run the LM head over one row and drop it.
    rows_buf_.push_back(0);
  }
  const int64_t max_blocks = max_blocks_;
  // Checked once here, for every layer's paged attention, so no backend's
  // kernel has to read the arrays back to check them.
  const PagedIndices indices{
      slots_buf_.data(), qstart_buf_.data(), ctx_buf_.data(), tables_buf_.data(), T, N, max_blocks};
  Status checked = CheckPagedIndices(indices, num_blocks_, block_size_);
  if (!checked.ok())
    return Internal("the scheduler built a bad step: " + checked.message());
  KILN_RETURN_IF_ERROR(SendStep(T, N, decode));
  KILN_RETURN_IF_ERROR(BindStep(T, N));
  return executor_->Run();
}

Status PlanModelRunner::CopyRows(const TensorView &out, size_t L, std::vector<float> &logits) {
  // A logits output with every token's row: only the sampled rows come
  // back, each run of consecutive rows in one copy.
  const uint64_t row_bytes = static_cast<uint64_t>(vocab_) * sizeof(float);
  const auto *base = static_cast<const uint8_t *>(out.data);
  if (out.space == MemorySpace::kHost)
    KILN_RETURN_IF_ERROR(backend_.Synchronize());
  for (size_t i = 0; i < L;) {
    size_t j = i + 1;
    while (j < L && rows_buf_[j] == rows_buf_[j - 1] + 1)
      ++j;
    const uint8_t *src = base + static_cast<uint64_t>(rows_buf_[i]) * row_bytes;
    float *dst = logits.data() + i * static_cast<size_t>(vocab_);
    if (out.space == MemorySpace::kHost)
      std::memcpy(dst, src, (j - i) * row_bytes);
    else
      KILN_RETURN_IF_ERROR(backend_.CopyToHost(dst, src, (j - i) * row_bytes));
    i = j;
  }
  return Status::Ok();
}

} // namespace kiln::engine
