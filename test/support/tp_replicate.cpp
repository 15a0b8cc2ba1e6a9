// kiln_tp_replicate in.plan N out.plan: wraps a plan built without tensor
// parallelism into a tensor-parallel plan of N ranks whose every rank runs
// the whole, unpartitioned graph (its weights all in the shared section,
// each rank's own section empty, no collectives). A test fixture for the
// multi-rank runtime independent of the partition pass: its --tp N run must
// give exactly the tokens of the plan's one-rank run. `--rank-file R` writes
// only rank R's program, as kiln reshard --split would.
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"
#include "plan_file.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace kiln;

flatbuffers::Offset<flatbuffers::String> Copy(flatbuffers::FlatBufferBuilder &b,
                                              const flatbuffers::String *s) {
  return s ? b.CreateString(s->str()) : 0;
}

std::string Replicate(const Plan &in, const std::vector<uint8_t> &program, int n, int only_rank,
                      const std::string &out_path) {
  const fb::Plan &f = in.fb();
  if (f.sections() && f.sections()->size() > 1)
    return "the plan has more than one section";
  const fb::Section *shared =
      f.sections() && f.sections()->size() == 1 ? f.sections()->Get(0) : nullptr;
  std::vector<SectionBlob> sections;
  // Bytes of the shared section, read from the loaded plan's mapping.
  const uint8_t *base = nullptr;
  for (const PlanTensor &t : in.tensors())
    if (t.kind == TensorKind::kWeight && t.section == 0 && t.size > 0) {
      // data = base + section offset + tensor offset; any weight gives base.
      const fb::Tensor *ft = f.tensors()->Get(static_cast<uint32_t>(in.FindTensor(t.name)));
      base = static_cast<const uint8_t *>(t.data) - ft->offset();
      break;
    }
  sections.push_back({base, shared && base ? shared->size() : 0});
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    if (only_rank < 0 || only_rank == r)
      ranks.push_back(r);
  for (size_t i = 0; i < ranks.size(); ++i)
    sections.push_back({nullptr, 0});
  auto build = [&](const std::vector<SectionPlacement> &placements) {
    flatbuffers::FlatBufferBuilder b;
    const fb::ModelMetadata *m = f.metadata();
    flatbuffers::Offset<fb::ModelMetadata> meta = 0;
    if (m) {
      std::vector<int64_t> eos;
      if (m->eos_token_ids())
        eos.assign(m->eos_token_ids()->begin(), m->eos_token_ids()->end());
      meta = fb::CreateModelMetadata(b, Copy(b, m->architecture()), Copy(b, m->model_name()),
                                     m->vocab_size(), m->context_length(), m->num_layers(),
                                     m->hidden_size(), m->bos_token_id(), b.CreateVector(eos),
                                     m->pad_token_id(), m->opset(), Copy(b, m->producer()));
    }
    flatbuffers::Offset<fb::GenerationDefaults> gen = 0;
    if (const fb::GenerationDefaults *g = f.generation())
      gen = fb::CreateGenerationDefaults(b, g->max_new_tokens(), g->temperature(), g->top_k(),
                                         g->top_p(), g->repetition_penalty());
    std::vector<flatbuffers::Offset<fb::Section>> ss;
    for (size_t i = 0; i < placements.size(); ++i)
      ss.push_back(fb::CreateSection(
          b, b.CreateString(i == 0 ? "shared" : "rank" + std::to_string(ranks[i - 1])),
          i == 0 ? -1 : ranks[i - 1], placements[i].offset, placements[i].size,
          placements[i].checksum));
    std::vector<flatbuffers::Offset<fb::RankProgram>> progs;
    for (int r : ranks) {
      // Nested FlatBuffers hold 8-byte fields: keep the bytes 16-aligned.
      b.ForceVectorAlignment(program.size(), 1, 16);
      auto bytes = b.CreateVector(program);
      progs.push_back(fb::CreateRankProgram(b, r, bytes));
    }
    auto tp =
        fb::CreateTensorParallel(b, n, b.CreateString("replicated-" + std::to_string(n)),
                                 b.CreateString("{\"replicated\": true}"), b.CreateVector(progs));
    auto tokenizer = Copy(b, f.tokenizer_json());
    auto chat = Copy(b, f.chat_template());
    auto config = Copy(b, f.build_config_json());
    auto version = Copy(b, f.compiler_version());
    auto sections_vec = b.CreateVector(ss);
    // Strings and vectors first: a table's builder must not be interleaved.
    fb::PlanBuilder pb(b);
    pb.add_compiler_version(version);
    pb.add_tokenizer_json(tokenizer);
    pb.add_chat_template(chat);
    pb.add_build_config_json(config);
    pb.add_format_major(kPlanFormatMajor);
    pb.add_format_minor(kPlanFormatMinor);
    pb.add_tensor_parallel(tp);
    pb.add_sections(sections_vec);
    if (!gen.IsNull())
      pb.add_generation(gen);
    if (!meta.IsNull())
      pb.add_metadata(meta);
    auto plan = pb.Finish();
    fb::FinishPlanBuffer(b, plan);
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  };
  return WritePlanFile(out_path, build, sections);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kiln_tp_replicate in.plan N out.plan [--rank-file R]\n");
    return 2;
  }
  const int n = std::atoi(argv[2]);
  const int only = argc >= 6 && std::string(argv[4]) == "--rank-file" ? std::atoi(argv[5]) : -1;
  auto plan = LoadPlan(argv[1]);
  if (!plan.ok() || n < 1) {
    std::fprintf(stderr, "kiln_tp_replicate: %s\n",
                 plan.ok() ? "N must be >= 1" : plan.status().message().c_str());
    return 2;
  }
  // The graph's FlatBuffer exactly as the plan file holds it.
  FILE *fp = std::fopen(argv[1], "rb");
  PlanHeader h;
  if (!fp || std::fread(&h, sizeof(h), 1, fp) != 1) {
    std::fprintf(stderr, "kiln_tp_replicate: cannot read %s\n", argv[1]);
    return 2;
  }
  std::vector<uint8_t> program(h.flatbuffer_size);
  std::fseek(fp, static_cast<long>(h.flatbuffer_offset), SEEK_SET);
  const bool read = std::fread(program.data(), 1, program.size(), fp) == program.size();
  std::fclose(fp);
  if (!read)
    return 2;
  std::string err = Replicate(**plan, program, n, only, argv[3]);
  if (!err.empty()) {
    std::fprintf(stderr, "kiln_tp_replicate: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
