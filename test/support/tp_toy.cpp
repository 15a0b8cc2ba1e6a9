// kiln_tp_toy N V out.plan: a toy decoder with the ragged interface whose
// next token is argmax(E[id] + bias), written unpartitioned (N = 1, no
// tensor parallelism) or split over N ranks the way the partition pass
// splits an LM head: rank r holds columns [off_r, off_r + V_r) of E in its
// own section and all_gathers them (uneven when N does not divide V), adds
// the shared bias, then scales by its own 1/N and all_reduces (sum), so the
// N-rank plan computes exactly the one-rank logits. It exercises the whole
// multi-rank runtime (rank sections, both collectives, the step broadcast)
// without the compiler. `--rank-file R` writes rank R's program alone.
#include "kiln/tensor.h"
#include "kiln_schema/plan_generated.h"
#include "plan_file.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace kiln;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

struct Dim {
  int64_t value = -1;
  const char *symbol = nullptr;
};
Dim S(const char *sym) { return {-1, sym}; }
Dim V(int64_t v) { return {v, nullptr}; }

// One rank's graph (or the whole model when `rank` < 0).
class Graph {
public:
  int Tensor(const std::string &name, DType dt, std::vector<Dim> dims, fb::TensorKind kind,
             int section = -1, uint64_t offset = 0, uint64_t size = 0) {
    ts_.push_back({name, dt, dims, kind, section, offset, size,
                   kind == fb::TensorKind::Activation ? slots_++ : -1});
    if (kind == fb::TensorKind::Input)
      inputs_.push_back(static_cast<int>(ts_.size()) - 1);
    return static_cast<int>(ts_.size()) - 1;
  }
  struct Attr {
    std::string name;
    fb::AttrKind kind;
    int64_t i = 0;
    std::string s;
    std::vector<int64_t> ints;
  };
  void Op(const std::string &type, std::vector<int> in, std::vector<int> out,
          std::vector<Attr> attrs = {}) {
    ops_.push_back({type, in, out, attrs});
  }
  std::vector<int> outputs;
  int64_t vocab_ = 0;
  int ids, pos, slots, qstart, ctx, tables, rows, key, value, logits;

  // The graph as a Plan FlatBuffer; `sections`, `tp` for the outer plan of
  // a one-rank model (the rank programs have neither).
  void Build(FlatBufferBuilder &b, bool model_fields,
             const std::vector<SectionPlacement> *sections) const {
    std::vector<Offset<fb::Tensor>> ts;
    for (const T &t : ts_) {
      std::vector<Offset<fb::Dim>> dims;
      for (const Dim &d : t.dims)
        dims.push_back(fb::CreateDim(b, d.value, d.symbol ? b.CreateString(d.symbol) : 0));
      ts.push_back(fb::CreateTensor(b, b.CreateString(t.name), static_cast<fb::DType>(t.dtype),
                                    b.CreateVector(dims), t.kind, t.section, t.offset, t.size,
                                    t.slot, false));
    }
    std::vector<Offset<fb::Op>> os;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const O &o = ops_[i];
      std::vector<Offset<fb::Attr>> as;
      for (const Attr &a : o.attrs)
        as.push_back(fb::CreateAttr(b, b.CreateString(a.name), a.kind, a.i, 0,
                                    a.s.empty() ? 0 : b.CreateString(a.s),
                                    a.ints.empty() ? 0 : b.CreateVector(a.ints)));
      os.push_back(fb::CreateOp(
          b, b.CreateString(o.type), b.CreateString("op" + std::to_string(i) + "_" + o.type),
          b.CreateVector(o.in), b.CreateVector(o.out), b.CreateVectorOfSortedTables(&as)));
    }
    auto mp = fb::CreateMemoryPlan(b, slots_, 64, b.CreateVector(std::vector<int64_t>(slots_, -1)));
    std::vector<Offset<fb::KVCache>> kv = {fb::CreateKVCache(b, key, value)};
    auto ragged = fb::CreateRaggedIO(b, ids, pos, slots, qstart, ctx, tables, rows, logits,
                                     b.CreateVector(kv));
    Offset<fb::ModelMetadata> meta = 0;
    Offset<flatbuffers::Vector<Offset<fb::Section>>> secs = 0;
    if (model_fields) {
      meta = fb::CreateModelMetadata(b, b.CreateString("toy"), b.CreateString("tp-toy"), vocab_,
                                     4096, 1, 4, -1, b.CreateVector(std::vector<int64_t>{}));
    }
    if (sections) {
      std::vector<Offset<fb::Section>> ss;
      for (const SectionPlacement &p : *sections)
        ss.push_back(
            fb::CreateSection(b, b.CreateString("shared"), -1, p.offset, p.size, p.checksum));
      secs = b.CreateVector(ss);
    }
    auto plan = fb::CreatePlan(b, kPlanFormatMajor, kPlanFormatMinor, b.CreateString("tp-toy"),
                               meta, 0, 0, model_fields ? fb::CreateGenerationDefaults(b) : 0, 0, 0,
                               b.CreateVector(ts), b.CreateVector(os), b.CreateVector(inputs_),
                               b.CreateVector(outputs), mp, secs, 0, ragged);
    fb::FinishPlanBuffer(b, plan);
  }

private:
  struct T {
    std::string name;
    DType dtype;
    std::vector<Dim> dims;
    fb::TensorKind kind;
    int section;
    uint64_t offset, size;
    int slot;
  };
  struct O {
    std::string type;
    std::vector<int> in, out;
    std::vector<Attr> attrs;
  };
  std::vector<T> ts_;
  std::vector<O> ops_;
  std::vector<int> inputs_;
  int slots_ = 0;
};

float Entry(int64_t i, int64_t j, int64_t v) {
  // Row i peaks at column (7 i + 3) mod V, so greedy decoding walks a long
  // cycle of distinct tokens; the rest is small and distinct per entry.
  return j == (7 * i + 3) % v ? 1.0f : 0.001f * static_cast<float>((i * 31 + j * 17) % 97) / 97;
}

// Rank r's graph over n ranks (n = 1: the unpartitioned model). E_r, w_r
// go in `own` (section 1, or 0 when n = 1), the bias in `shared`.
Graph RankGraph(int r, int n, int64_t vocab, SectionBuffer &shared, SectionBuffer &own,
                bool collectives) {
  std::vector<int64_t> sizes;
  int64_t off = 0, mine = 0, my_off = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t s = vocab / n + (i < vocab % n ? 1 : 0);
    sizes.push_back(s);
    if (i == r) {
      mine = s;
      my_off = off;
    }
    off += s;
  }
  std::vector<float> e(static_cast<size_t>(vocab * mine));
  for (int64_t i = 0; i < vocab; ++i)
    for (int64_t j = 0; j < mine; ++j)
      e[static_cast<size_t>(i * mine + j)] = Entry(i, my_off + j, vocab);
  std::vector<float> bias(static_cast<size_t>(vocab));
  for (int64_t j = 0; j < vocab; ++j)
    bias[static_cast<size_t>(j)] = 0.0001f * static_cast<float>(j % 5);
  const std::vector<float> scale = {1.0f / static_cast<float>(n)};
  const int own_section = collectives ? 1 : 0;
  Graph g;
  g.vocab_ = vocab;
  using K = fb::TensorKind;
  g.ids = g.Tensor("input_ids", DType::kI64, {V(1), S("T")}, K::Input);
  g.pos = g.Tensor("position_ids", DType::kI64, {V(1), S("T")}, K::Input);
  g.slots = g.Tensor("kv_slots", DType::kI64, {S("T")}, K::Input);
  g.qstart = g.Tensor("query_start", DType::kI64, {S("N1")}, K::Input);
  g.ctx = g.Tensor("context_lens", DType::kI64, {S("N")}, K::Input);
  g.tables = g.Tensor("block_tables", DType::kI64, {S("N"), S("B")}, K::Input);
  g.rows = g.Tensor("logits_indices", DType::kI64, {S("L")}, K::Input);
  g.key = g.Tensor("kv_cache.0.key", DType::kF32, {S("nb"), V(1), S("bs"), V(4)}, K::Input);
  g.value = g.Tensor("kv_cache.0.value", DType::kF32, {S("nb"), V(1), S("bs"), V(4)}, K::Input);
  const uint64_t eb = e.size() * 4;
  const int E = g.Tensor("lm_head", DType::kF32, {V(vocab), V(mine)}, K::Weight, own_section,
                         own.Append(e.data(), eb), eb);
  const int B = g.Tensor("bias", DType::kF32, {V(vocab)}, K::Weight, 0,
                         shared.Append(bias.data(), bias.size() * 4), bias.size() * 4);
  const int W = g.Tensor("scale", DType::kF32, {V(1)}, K::Weight, own_section,
                         own.Append(scale.data(), 4), 4);
  using A = Graph::Attr;
  const int h = g.Tensor("h", DType::kF32, {V(1), S("T"), V(mine)}, K::Activation);
  g.Op("gather", {E, g.ids}, {h}, {A{"axis", fb::AttrKind::Int, 0}});
  int full = h;
  if (collectives) {
    full = g.Tensor("h_full", DType::kF32, {V(1), S("T"), V(vocab)}, K::Activation);
    g.Op("all_gather", {h}, {full},
         {A{"axis", fb::AttrKind::Int, 2}, A{"sizes", fb::AttrKind::Ints, 0, "", sizes}});
  }
  const int x = g.Tensor("x", DType::kF32, {V(1), S("T"), V(vocab)}, K::Activation);
  g.Op("add", {full, B}, {x});
  const int part = g.Tensor("part", DType::kF32, {V(1), S("T"), V(vocab)}, K::Activation);
  g.Op("mul", {x, W}, {part});
  int y = part;
  if (collectives) {
    y = g.Tensor("y", DType::kF32, {V(1), S("T"), V(vocab)}, K::Activation);
    g.Op("all_reduce", {part}, {y}, {A{"reduction", fb::AttrKind::String, 0, "sum"}});
  }
  g.logits = g.Tensor("logits", DType::kF32, {V(1), S("L"), V(vocab)}, K::Activation);
  g.Op("gather", {y, g.rows}, {g.logits}, {A{"axis", fb::AttrKind::Int, 1}});
  g.outputs = {g.logits};
  return g;
}

std::vector<uint8_t> Bytes(FlatBufferBuilder &b) {
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kiln_tp_toy N VOCAB out.plan [--rank-file R | --tp-plan]\n"
                         "  N = 1 writes a plan without tensor parallelism, unless --tp-plan:\n"
                         "  then a tensor-parallel plan of one rank, with its collectives\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  const int64_t vocab = std::atoll(argv[2]);
  const std::string out = argv[3];
  const int only = argc >= 6 && std::string(argv[4]) == "--rank-file" ? std::atoi(argv[5]) : -1;
  const bool tp_plan = n > 1 || (argc >= 5 && std::string(argv[4]) == "--tp-plan");
  // KILN_TP_TOY_BUILD_ID: another build's id, for the ranks' same-build check.
  const char *id_env = std::getenv("KILN_TP_TOY_BUILD_ID");
  const std::string build_id = id_env ? id_env : "toy-" + std::to_string(n);
  if (n < 1 || vocab < n) {
    std::fprintf(stderr, "kiln_tp_toy: need N >= 1 and VOCAB >= N\n");
    return 2;
  }
  std::string err;
  if (!tp_plan) {
    SectionBuffer shared;
    Graph g = RankGraph(0, 1, vocab, shared, shared, false);
    err = WritePlanFile(out,
                        [&](const std::vector<SectionPlacement> &p) {
                          FlatBufferBuilder b;
                          g.Build(b, true, &p);
                          return Bytes(b);
                        },
                        {shared.blob()});
  } else {
    SectionBuffer shared;
    std::vector<SectionBuffer> own(static_cast<size_t>(n));
    std::vector<std::vector<uint8_t>> programs;
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r) {
      SectionBuffer scratch_shared;
      Graph g = RankGraph(r, n, vocab, r == 0 ? shared : scratch_shared,
                          own[static_cast<size_t>(r)], true);
      if (only >= 0 && r != only)
        continue;
      FlatBufferBuilder b;
      g.Build(b, false, nullptr);
      programs.push_back(Bytes(b));
      ranks.push_back(r);
    }
    std::vector<SectionBlob> blobs = {shared.blob()};
    for (int r : ranks)
      blobs.push_back(own[static_cast<size_t>(r)].blob());
    err = WritePlanFile(
        out,
        [&](const std::vector<SectionPlacement> &p) {
          FlatBufferBuilder b;
          std::vector<Offset<fb::Section>> ss;
          for (size_t i = 0; i < p.size(); ++i)
            ss.push_back(fb::CreateSection(
                b, b.CreateString(i == 0 ? "shared" : "rank" + std::to_string(ranks[i - 1])),
                i == 0 ? -1 : ranks[i - 1], p[i].offset, p[i].size, p[i].checksum));
          std::vector<Offset<fb::RankProgram>> progs;
          for (size_t i = 0; i < programs.size(); ++i) {
            b.ForceVectorAlignment(programs[i].size(), 1, 16);
            auto bytes = b.CreateVector(programs[i]);
            progs.push_back(fb::CreateRankProgram(b, ranks[i], bytes));
          }
          auto tp = fb::CreateTensorParallel(b, n, b.CreateString(build_id),
                                             b.CreateString("{}"), b.CreateVector(progs));
          auto meta =
              fb::CreateModelMetadata(b, b.CreateString("toy"), b.CreateString("tp-toy"), vocab,
                                      4096, 1, 4, -1, b.CreateVector(std::vector<int64_t>{}));
          auto plan =
              fb::CreatePlan(b, kPlanFormatMajor, kPlanFormatMinor, b.CreateString("tp-toy"), meta,
                             0, 0, fb::CreateGenerationDefaults(b), 0, 0, 0, 0, 0, 0, 0,
                             b.CreateVector(ss), 0, 0, 0, 0, tp);
          fb::FinishPlanBuffer(b, plan);
          return Bytes(b);
        },
        blobs);
  }
  if (!err.empty()) {
    std::fprintf(stderr, "kiln_tp_toy: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
