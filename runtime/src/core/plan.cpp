// Accessors of a loaded Plan; loading itself is in plan_loader.cpp.
#include "kiln/plan.h"

#include "kiln_schema/plan_generated.h"

#include <cstdlib>
#include <sys/mman.h>

namespace kiln {

bool PlanTensor::IsStatic() const {
  for (const PlanDim &d : dims)
    if (d.value < 0)
      return false;
  return true;
}

Shape PlanTensor::StaticShape() const {
  Shape s;
  for (const PlanDim &d : dims)
    s.push_back(d.value);
  return s;
}

std::string PlanTensor::DimsToString() const {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      out += ", ";
    if (dims[i].value >= 0)
      out += std::to_string(dims[i].value);
    else
      out += dims[i].symbol.empty() ? "?" : dims[i].symbol;
  }
  return out + "]";
}

Plan::~Plan() {
  if (!bytes_)
    return;
  if (mapped_)
    ::munmap(bytes_, static_cast<size_t>(bytes_size_));
  else
    std::free(bytes_);
}

int Plan::num_ops() const {
  return graph_ && graph_->ops() ? static_cast<int>(graph_->ops()->size()) : 0;
}

int Plan::FindTensor(const std::string &name) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int Plan::InputIndex(int tensor_id) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] == tensor_id)
      return static_cast<int>(i);
  return -1;
}

int Plan::OutputIndex(int tensor_id) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i] == tensor_id)
      return static_cast<int>(i);
  return -1;
}

uint64_t Plan::weight_bytes() const {
  uint64_t total = 0;
  if (fb_ && fb_->sections())
    for (int i : section_of_role_)
      if (i >= 0)
        total += fb_->sections()->Get(static_cast<uint32_t>(i))->size();
  return total;
}

namespace {

std::string Str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

PlanSourceFile SourceFile(const fb::SourceFile *f) {
  PlanSourceFile out;
  if (f) {
    out.path = Str(f->path());
    out.size = f->size();
    out.sha256 = Str(f->sha256());
  }
  return out;
}

} // namespace

bool Plan::provenance(PlanProvenance *out) const {
  const fb::Provenance *p = fb_ ? fb_->provenance() : nullptr;
  if (!p)
    return false;
  out->kiln_version = Str(p->kiln_version());
  out->source_commit = Str(p->source_commit());
  out->build_host = Str(p->build_host());
  out->build_time = Str(p->build_time());
  out->build_config_json = Str(p->build_config_json());
  out->model = SourceFile(p->model());
  out->external_data.clear();
  if (p->external_data())
    for (const fb::SourceFile *f : *p->external_data())
      out->external_data.push_back(SourceFile(f));
  return true;
}

const char *TensorKindName(TensorKind k) {
  switch (k) {
  case TensorKind::kActivation:
    return "Activation";
  case TensorKind::kWeight:
    return "Weight";
  case TensorKind::kInput:
    return "Input";
  }
  return "?";
}

uint64_t Plan::token_weight_bytes() const {
  uint64_t total = weight_bytes();
  if (!graph_ || !graph_->ops())
    return total;
  for (const fb::Op *op : *graph_->ops()) {
    if (Str(op->type()) != "moe" || !op->inputs() || op->inputs()->size() < 4 || !op->attrs())
      continue;
    const fb::Attr *k = op->attrs()->LookupByKey("top_k");
    const int router = op->inputs()->Get(1);
    if (!k || router < 0 || static_cast<size_t>(router) >= tensors_.size())
      continue;
    const std::vector<PlanDim> &rdims = tensors_[router].dims;
    if (rdims.size() != 2 || rdims[1].value <= 0 || k->i() < 1 || k->i() > rdims[1].value)
      continue;
    const uint64_t experts = static_cast<uint64_t>(rdims[1].value);
    const uint64_t idle = experts - static_cast<uint64_t>(k->i());
    for (int i : {2, 3}) {
      const int id = op->inputs()->Get(static_cast<uint32_t>(i));
      if (id < 0 || static_cast<size_t>(id) >= tensors_.size())
        continue;
      const uint64_t b = tensors_[id].size / experts * idle;
      total -= b < total ? b : total;
    }
  }
  return total;
}

} // namespace kiln
