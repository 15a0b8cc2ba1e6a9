// kiln_tp_shard_check TP1.plan TPN.plan: rebuilds every weight of the TP = 1
// plan from the TP = N plan's shards (by their ShardSpec) and replicated
// tensors, and checks the bytes are identical. Fails (exit 1, naming the
// weight) when a shard's bytes differ from the TP = 1 weight they claim to
// be, when two ranks' overlapping slices (replicated GQA KV heads) differ,
// when part of a split weight is covered by no rank, or when a large TP = 1
// weight appears on no rank. Reads the files with FlatBuffers only, as
// kiln reshard must (no ONNX, no compiler). Given two one-rank plans, checks
// instead that they hold the same weights, byte for byte.
#include "kiln_schema/plan_generated.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> ReadFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

const kiln::fb::Plan *Root(const std::vector<uint8_t> &file) {
  if (file.size() < 64 || std::memcmp(file.data(), "KILNPLAN", 8) != 0)
    return nullptr;
  uint64_t off = 0, size = 0;
  std::memcpy(&off, file.data() + 16, 8);
  std::memcpy(&size, file.data() + 24, 8);
  if (off + size > file.size())
    return nullptr;
  flatbuffers::Verifier v(file.data() + off, size);
  if (!kiln::fb::VerifyPlanBuffer(v))
    return nullptr;
  return kiln::fb::GetPlan(file.data() + off);
}

int failures = 0;
void Fail(const std::string &what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++failures;
}

int64_t Elems(const kiln::fb::Tensor *t) {
  int64_t n = 1;
  for (const kiln::fb::Dim *d : *t->shape())
    n *= d->value();
  return n;
}

/// Two one-rank plans (kiln reshard N -> 1 against the first build): the
/// same weight names with the same bytes, both ways.
int SameWeights(const std::vector<uint8_t> &fa, const kiln::fb::Plan *a,
                const std::vector<uint8_t> &fb, const kiln::fb::Plan *b, const char *label) {
  auto weights = [](const std::vector<uint8_t> &file, const kiln::fb::Plan *p) {
    std::map<std::string, std::pair<const uint8_t *, uint64_t>> w;
    for (const kiln::fb::Tensor *t : *p->tensors())
      if (t->kind() == kiln::fb::TensorKind::Weight && t->section() >= 0)
        w[t->name()->str()] = {
            file.data() + p->sections()->Get(t->section())->offset() + t->offset(), t->size()};
    return w;
  };
  auto wa = weights(fa, a), wb = weights(fb, b);
  for (const auto &[name, bytes] : wa) {
    auto it = wb.find(name);
    if (it == wb.end())
      Fail(name + ": missing from the second plan");
    else if (it->second.second != bytes.second ||
             std::memcmp(it->second.first, bytes.first, bytes.second) != 0)
      Fail(name + ": bytes differ");
  }
  for (const auto &[name, bytes] : wb)
    if (!wa.count(name))
      Fail(name + ": only in the second plan");
  std::printf("%s: %zu weights compared with the first plan's; %d failures\n", label, wa.size(),
              failures);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kiln_tp_shard_check TP1.plan TPN.plan|TP1.plan\n");
    return 2;
  }
  std::vector<uint8_t> one = ReadFile(argv[1]), many = ReadFile(argv[2]);
  const kiln::fb::Plan *p1 = Root(one), *pn = Root(many);
  if (p1 && pn && !p1->tensor_parallel() && !pn->tensor_parallel())
    return SameWeights(one, p1, many, pn, argv[2]);
  if (!p1 || !pn || !pn->tensor_parallel() || !pn->tensor_parallel()->ranks() || !pn->sections()) {
    std::fprintf(stderr, "not a TP = 1 plan and a tensor-parallel plan\n");
    return 2;
  }
  // TP = 1 weights by name.
  struct Full {
    const uint8_t *bytes;
    uint64_t size;
    std::vector<uint8_t> rebuilt;
    std::vector<uint8_t> covered; // per byte
    bool replicatedSeen = false, sharded = false;
  };
  std::map<std::string, Full> full;
  for (const kiln::fb::Tensor *t : *p1->tensors()) {
    if (t->kind() != kiln::fb::TensorKind::Weight || t->section() < 0)
      continue;
    const kiln::fb::Section *s = p1->sections()->Get(t->section());
    full[t->name()->str()] = {one.data() + s->offset() + t->offset(), t->size(), {}, {}};
  }
  const auto *tp = pn->tensor_parallel();
  int tpSize = tp->tp_size();
  if (static_cast<int>(tp->ranks()->size()) != tpSize || pn->tensors())
    Fail("the outer plan must have tp_size rank programs and no graph");
  if (!tp->build_id() || tp->build_id()->size() == 0 || !tp->partition_report() ||
      tp->partition_report()->size() == 0)
    Fail("build_id and partition_report must be set");
  std::set<std::string> splitNames;
  for (const kiln::fb::RankProgram *rp : *tp->ranks()) {
    const kiln::fb::Plan *prog = rp->program_nested_root();
    const kiln::fb::Section *own = nullptr;
    for (const kiln::fb::Section *s : *pn->sections())
      if (s->rank() == rp->rank())
        own = s;
    const kiln::fb::Section *shared = pn->sections()->Get(0);
    if (!prog || !own || shared->rank() != -1) {
      Fail("rank " + std::to_string(rp->rank()) + ": no program or no section");
      continue;
    }
    for (const kiln::fb::Tensor *t : *prog->tensors()) {
      if (t->kind() != kiln::fb::TensorKind::Weight || t->size() == 0)
        continue;
      const kiln::fb::Section *s = t->section() == 0 ? shared : t->section() == 1 ? own : nullptr;
      if (!s || t->offset() + t->size() > s->size()) {
        Fail("rank " + std::to_string(rp->rank()) + " weight " + t->name()->str() +
             ": bad section or range");
        continue;
      }
      const uint8_t *bytes = many.data() + s->offset() + t->offset();
      const std::string name = t->name()->str();
      if (!t->shard()) {
        if (t->section() != 0)
          Fail(name + ": a replicated weight outside the shared section");
        auto it = full.find(name);
        // Constants the partition made (reshape targets) have no TP = 1 twin.
        // Unnamed constants are named by position ("constantN"), which
        // differs between plans.
        if (it == full.end() || it->second.size != t->size() || name.rfind("constant", 0) == 0)
          continue;
        if (std::memcmp(it->second.bytes, bytes, t->size()) != 0)
          Fail(name + ": replicated bytes differ from TP = 1 on rank " +
               std::to_string(rp->rank()));
        it->second.replicatedSeen = true;
        continue;
      }
      const kiln::fb::ShardSpec *spec = t->shard();
      if (t->section() != 1)
        Fail(name + ": a shard outside its rank's section");
      auto it = full.find(spec->full_name()->str());
      if (it == full.end()) {
        Fail(name + ": shard of unknown weight " + spec->full_name()->str());
        continue;
      }
      Full &f = it->second;
      f.sharded = true;
      splitNames.insert(it->first);
      if (f.rebuilt.empty()) {
        f.rebuilt.assign(f.size, 0);
        f.covered.assign(f.size, 0);
      }
      const int axis = spec->axis(), groups = 1;
      const auto *shape = t->shape();
      int64_t outer = 1, inner = static_cast<int64_t>(t->size()) / std::max<int64_t>(1, Elems(t));
      for (int i = 0; i < axis; ++i)
        outer *= shape->Get(i)->value();
      for (uint32_t i = axis + 1; i < shape->size(); ++i)
        inner *= shape->Get(i)->value();
      const int64_t count = shape->Get(axis)->value() / groups;
      const int64_t fullDim = spec->full_dim();
      if (static_cast<uint64_t>(outer * groups * fullDim * inner) != f.size) {
        Fail(name + ": shard spec does not fit the TP = 1 weight's size");
        continue;
      }
      const uint8_t *src = bytes;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t g = 0; g < groups; ++g) {
          uint64_t at =
              static_cast<uint64_t>(((o * groups + g) * fullDim + spec->offset()) * inner);
          for (int64_t i = 0; i < count * inner; ++i) {
            if (f.covered[at + i] && f.rebuilt[at + i] != src[i]) {
              Fail(name + ": overlapping shards disagree");
              o = outer;
              g = groups;
              break;
            }
            f.rebuilt[at + i] = src[i];
            f.covered[at + i] = 1;
          }
          src += count * inner;
        }
    }
  }
  for (auto &[name, f] : full) {
    if (f.sharded) {
      for (uint8_t c : f.covered)
        if (!c) {
          Fail(name + ": part of the weight is on no rank");
          break;
        }
      if (std::memcmp(f.rebuilt.data(), f.bytes, f.size) != 0)
        Fail(name + ": reassembled shards differ from the TP = 1 bytes");
    } else if (!f.replicatedSeen && f.size >= 1024) {
      Fail(name + ": a TP = 1 weight of " + std::to_string(f.size) + " bytes is on no rank");
    }
  }
  std::printf("%s: %zu weights split, %zu checked in all; %d failures\n", argv[2],
              splitNames.size(), full.size(), failures);
  return failures ? 1 : 0;
}
