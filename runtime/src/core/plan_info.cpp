// The typed view of a plan's model-wide fields (kiln/plan_info.h).
#include "kiln/plan_info.h"

#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

namespace kiln {
namespace {

std::string Str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

std::string_view View(const flatbuffers::String *s) {
  return s ? std::string_view(s->c_str(), s->size()) : std::string_view();
}

} // namespace

const char *PlanInterfaceName(PlanInterface i) {
  switch (i) {
  case PlanInterface::kRagged:
    return "ragged";
  case PlanInterface::kDecoder:
    return "dense";
  case PlanInterface::kEncoder:
    return "encoder";
  }
  return "?";
}

PlanInterface GraphInterface(const Plan &plan) {
  const fb::Plan &g = plan.graph();
  if (g.ragged() != nullptr)
    return PlanInterface::kRagged;
  if (g.decoder() != nullptr && g.decoder()->logits() >= 0)
    return PlanInterface::kDecoder;
  return PlanInterface::kEncoder;
}

PlanInfo DescribePlan(const Plan &plan) {
  const fb::Plan &f = plan.fb();
  PlanInfo info;
  info.format_major = f.format_major();
  info.format_minor = f.format_minor();
  info.compiler_version = Str(f.compiler_version());
  if (const fb::ModelMetadata *m = f.metadata()) {
    ModelInfo &o = info.model;
    o.present = true;
    o.architecture = Str(m->architecture());
    o.model_name = Str(m->model_name());
    o.producer = Str(m->producer());
    o.vocab_size = m->vocab_size();
    o.context_length = m->context_length();
    o.num_layers = m->num_layers();
    o.hidden_size = m->hidden_size();
    o.bos_token_id = m->bos_token_id();
    if (m->eos_token_ids())
      o.eos_token_ids.assign(m->eos_token_ids()->begin(), m->eos_token_ids()->end());
    o.pad_token_id = m->pad_token_id();
    o.opset = m->opset();
  }
  if (const fb::GenerationDefaults *g = f.generation()) {
    GenerationInfo &o = info.generation;
    o.present = true;
    o.max_new_tokens = g->max_new_tokens();
    o.temperature = g->temperature();
    o.top_k = g->top_k();
    o.top_p = g->top_p();
    o.repetition_penalty = g->repetition_penalty();
  }
  if (const fb::Pooling *p = f.pooling()) {
    info.pooling.present = true;
    info.pooling.mode = Str(p->mode());
    info.pooling.normalize = p->normalize();
  }
  info.tokenizer_json = View(f.tokenizer_json());
  info.chat_template = View(f.chat_template());
  info.build_config_json = View(f.build_config_json());
  info.injection_report = View(f.injection_report());
  if (f.sections())
    for (const fb::Section *s : *f.sections())
      info.sections.push_back({Str(s->name()), s->rank(), s->offset(), s->size(), s->checksum()});
  if (const fb::TensorParallel *tp = f.tensor_parallel()) {
    info.tp_size = tp->tp_size();
    info.build_id = Str(tp->build_id());
    info.partition_report = Str(tp->partition_report());
    if (tp->ranks())
      for (const fb::RankProgram *r : *tp->ranks())
        info.tp_ranks.push_back(r->rank());
  }
  info.interface = GraphInterface(plan);
  return info;
}

} // namespace kiln
