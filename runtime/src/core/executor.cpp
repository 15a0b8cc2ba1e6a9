// Executor: op decoding at Create, op dispatch at Run. The shape pass and the
// arena live in executor_bind.cpp.
#include "core/executor_impl.h"

#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace {

// Ops that read only their operand's dims (never its values), so the host
// may evaluate them before the operand has data.
bool ReadsOnlyDims(const std::string &type) { return type == "shape" || type == "size"; }

AttrValue DecodeAttr(const fb::Attr &a) {
  AttrValue v;
  switch (a.kind()) {
  case fb::AttrKind::Int:
    v.kind = AttrValue::Kind::kInt;
    break;
  case fb::AttrKind::Float:
    v.kind = AttrValue::Kind::kFloat;
    break;
  case fb::AttrKind::String:
    v.kind = AttrValue::Kind::kString;
    break;
  case fb::AttrKind::Ints:
    v.kind = AttrValue::Kind::kInts;
    break;
  case fb::AttrKind::Floats:
    v.kind = AttrValue::Kind::kFloats;
    break;
  }
  v.i = a.i();
  v.f = a.f();
  if (a.s())
    v.s = a.s()->str();
  if (a.ints())
    v.ints.assign(a.ints()->begin(), a.ints()->end());
  if (a.floats())
    v.floats.assign(a.floats()->begin(), a.floats()->end());
  return v;
}

} // namespace

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() {
  if (impl_ && impl_->print_profile && impl_->totals.runs > 0)
    std::fputs(ProfileTable().c_str(), stderr);
}

StatusOr<std::unique_ptr<Executor>>
Executor::CreateWithHostKernels(const Plan &plan, Backend &backend, const KernelTable &host_kernels) {
  KILN_RETURN_IF_ERROR(CheckPlanRunsOn(plan, backend.kernels(), backend.name()));
  auto impl = std::make_unique<Impl>();
  impl->plan = &plan;
  impl->backend = &backend;
  if (const char *env = std::getenv("KILN_PROFILE"); env && *env && std::strcmp(env, "0") != 0) {
    impl->profiling = impl->print_profile = true;
    impl->profile_shapes = std::strcmp(env, "shape") == 0;
    impl->profile_graphs = std::strcmp(env, "graph") == 0;
    // KILN_PROFILE_SKIP=N: the first N runs warm up (first calls build
    // library plans and load kernels) and are left out of the profile.
    if (const char *skip = std::getenv("KILN_PROFILE_SKIP"))
      impl->profile_skip = std::max(0, std::atoi(skip));
  }
  const auto &tensors = plan.tensors();
  impl->views.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor &t = tensors[i];
    TensorView &v = impl->views[i];
    v.dtype = t.dtype;
    if (t.kind == TensorKind::kWeight)
      v.shape = t.StaticShape();
  }
  if (const fb::MemoryPlan *mp = plan.graph().memory_plan()) {
    impl->alignment = std::max<uint64_t>(64, static_cast<uint64_t>(mp->alignment()));
    impl->num_slots = mp->num_slots();
  }

  impl->value_input.assign(tensors.size(), false);
  const auto *ops = plan.graph().ops();
  for (uint32_t i = 0; ops && i < ops->size(); ++i) {
    const fb::Op &fop = *ops->Get(i);
    ExecOp op;
    std::string type = fop.type()->str();
    op.label = "op '" + (fop.name() ? fop.name()->str() : std::string()) + "' (" + type + ")";
    op.rule = FindShapeRule(type);
    if (!op.rule)
      return InvalidArgument(op.label + ": this runtime has no op type '" + type + "'");
    if (fop.attrs())
      for (const fb::Attr *a : *fop.attrs())
        op.attrs.Set(a->name()->str(), DecodeAttr(*a));
    if (fop.inputs())
      op.inputs.assign(fop.inputs()->begin(), fop.inputs()->end());
    if (fop.outputs())
      op.outputs.assign(fop.outputs()->begin(), fop.outputs()->end());
    op.host = !op.outputs.empty() && tensors[op.outputs[0]].host;
    op.kernel = op.host ? host_kernels.Find(type) : backend.kernels().Find(type);
    if (!op.kernel) // CheckPlanRunsOn covered the backend; the CPU has every op
      return InvalidArgument(op.label + ": no " + std::string(op.host ? "cpu" : backend.name()) +
                             " kernel for op type '" + type + "'");
    op.type = std::move(type);
    // A host op runs during Bind, before any activation has data. `shape`
    // and `size` read only their operand's shape; every other host op must
    // read values that exist then, and those graph inputs' values shape the
    // result.
    for (int t : op.inputs) {
      if (!op.host || t < 0)
        continue;
      const PlanTensor &pt = tensors[t];
      if (pt.kind == TensorKind::kInput && !ReadsOnlyDims(op.type))
        impl->value_input[t] = true;
      if (pt.kind == TensorKind::kActivation && !pt.host && !ReadsOnlyDims(op.type))
        return DataLoss(op.label + ": a host op reads '" + pt.name +
                        "', which is computed only at run time; the plan must mark it host");
    }
    for (int t : op.inputs)
      op.in.push_back(t < 0 ? nullptr : &impl->views[t]);
    op.out.resize(op.outputs.size());
    impl->ops.push_back(std::move(op));
  }
  KILN_RETURN_IF_ERROR(impl->UploadWeights());
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Status Executor::Impl::UploadWeights() {
  std::vector<WeightUse> uses;
  for (const ExecOp &op : ops)
    uses.push_back({op.type, &op.attrs, &op.inputs});
  UploadStats up;
  KILN_RETURN_IF_ERROR(backend->UploadWeights(*plan, uses, weight_data, up));
  stats.packed_weights = up.packed_weights;
  stats.packed_bytes = up.packed_bytes;
  stats.released_weights = up.released_weights;
  stats.narrowed_weights = up.narrowed_weights;
  stats.device_bytes = up.device_bytes;
  WeightViews(/*device=*/false);
  return Status::Ok();
}

void Executor::Impl::WeightViews(bool device) {
  const auto &tensors = plan->tensors();
  const bool host_backend = backend->memory_space() == MemorySpace::kHost;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].kind != TensorKind::kWeight)
      continue;
    TensorView &v = views[i];
    // Kernels take non-const views; weights are only ever operands, never
    // results (the loader checks), so no copy is ever written.
    v.data = device ? weight_data[i] : const_cast<void *>(tensors[i].data);
    v.space = device && !host_backend ? MemorySpace::kDevice : MemorySpace::kHost;
  }
}

Status Executor::Run() {
  Impl &m = *impl_;
  if (!m.bound)
    return InvalidArgument("Executor::Run called before a successful Bind");
  if (m.profiling && m.profile_skip > 0)
    --m.profile_skip; // a warm-up run: not profiled
  else if (m.profiling && m.profile_graphs && m.graphs && m.backend->CanCapture())
    return m.ProfiledGraphRun();
  else if (m.profiling)
    return m.ProfiledRun();
  if (m.graphs && m.backend->CanCapture())
    return m.GraphRun();
  KILN_RETURN_IF_ERROR(m.StageInputs());
  return m.RunOps();
}

Status Executor::Impl::RunOps() {
  ExecContext &ctx = backend->context();
  for (ExecOp &op : ops) {
    if (op.host)
      continue; // evaluated by Bind
    Status st = op.kernel->run(ctx, op.attrs, op.in, op.out);
    if (!st.ok())
      return st.WithContext(op.label);
  }
  return Status::Ok();
}

void Executor::SetGraphs(bool on) { impl_->graphs = on; }
void Executor::SetCheckPagedInputs(bool on) { impl_->check_paged_inputs = on; }
Status Executor::Wait() { return impl_->backend->Synchronize(); }
bool Executor::graphs() const { return impl_->graphs; }

Status Executor::CopyOutputToHost(int index, void *dst) const {
  const Impl &m = *impl_;
  if (index < 0 || static_cast<size_t>(index) >= m.plan->outputs().size())
    return InvalidArgument("the plan has no output " + std::to_string(index));
  const TensorView &v = m.views[m.plan->outputs()[index]];
  if (v.space == MemorySpace::kHost) {
    KILN_RETURN_IF_ERROR(m.backend->Synchronize());
    if (v.bytes() > 0 && dst != v.data)
      std::memcpy(dst, v.data, v.bytes());
    return Status::Ok();
  }
  return m.backend->CopyToHost(dst, v.data, v.bytes());
}

Backend &Executor::backend() const { return *impl_->backend; }

std::vector<TensorView> Executor::outputs() const {
  std::vector<TensorView> out;
  for (int id : impl_->plan->outputs())
    out.push_back(impl_->views[id]);
  return out;
}

const TensorView &Executor::output(int index) const {
  return impl_->views[impl_->plan->outputs().at(index)];
}

const Executor::Stats &Executor::stats() const { return impl_->stats; }

const void *Executor::TensorData(int tensor_id) const {
  if (tensor_id < 0 || static_cast<size_t>(tensor_id) >= impl_->views.size())
    return nullptr;
  return impl_->views[tensor_id].data;
}

} // namespace kiln
