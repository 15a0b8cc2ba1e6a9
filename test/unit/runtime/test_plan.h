// Builds small plan files in tests with the FlatBuffers builder and
// WritePlanFile, the same path the compiler's plan writer takes.
#pragma once

#include "kiln/tensor.h"
#include "kiln_schema/plan_generated.h"
#include "plan_file.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace kiln::test {

// A dim is a static size or a symbol: {"batch", 4}.
struct DimSpec {
  DimSpec(int v) : value(v) {}
  DimSpec(const char *s) : symbol(s) {}
  int64_t value = -1;
  std::string symbol;
};

struct AttrSpec {
  std::string name;
  fb::AttrKind kind = fb::AttrKind::Int;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
};
inline AttrSpec AInt(std::string n, int64_t v) { return {n, fb::AttrKind::Int, v, 0, "", {}}; }
inline AttrSpec AFloat(std::string n, float v) { return {n, fb::AttrKind::Float, 0, v, "", {}}; }
inline AttrSpec AInts(std::string n, std::vector<int64_t> v) {
  return {n, fb::AttrKind::Ints, 0, 0, "", std::move(v)};
}

class TestPlan {
public:
  struct T {
    std::string name;
    DType dtype;
    std::vector<DimSpec> dims;
    fb::TensorKind kind;
    int slot = -1;
    bool host = false;
    uint64_t offset = 0, size = 0;
  };
  struct O {
    std::string type, name;
    std::vector<int> in, out;
    std::vector<AttrSpec> attrs;
  };

  int Input(const std::string &name, DType dt, std::vector<DimSpec> dims) {
    tensors_.push_back({name, dt, std::move(dims), fb::TensorKind::Input});
    inputs_.push_back(static_cast<int>(tensors_.size()) - 1);
    return inputs_.back();
  }
  template <typename V>
  int Weight(const std::string &name, DType dt, std::vector<DimSpec> dims,
             const std::vector<V> &values) {
    uint64_t size = values.size() * sizeof(V);
    uint64_t off = section_.Append(values.data(), size);
    tensors_.push_back({name, dt, std::move(dims), fb::TensorKind::Weight, -1, false, off, size});
    return static_cast<int>(tensors_.size()) - 1;
  }
  // An activation; slot -1 gives it a slot of its own.
  int Act(const std::string &name, DType dt, std::vector<DimSpec> dims, int slot = -1,
          bool host = false) {
    if (slot < 0 && !host)
      slot = next_slot_++;
    if (slot >= next_slot_)
      next_slot_ = slot + 1;
    tensors_.push_back({name, dt, std::move(dims), fb::TensorKind::Activation, slot, host});
    return static_cast<int>(tensors_.size()) - 1;
  }
  int HostAct(const std::string &name, DType dt, std::vector<DimSpec> dims) {
    return Act(name, dt, std::move(dims), -1, true);
  }
  void Op(const std::string &type, std::vector<int> in, std::vector<int> out,
          std::vector<AttrSpec> attrs = {}) {
    ops_.push_back({type, "node_" + std::to_string(ops_.size()) + "_" + type, std::move(in),
                    std::move(out), std::move(attrs)});
  }
  void Output(int id) { outputs_.push_back(id); }

  // Decoder roles (tensor ids, -1 when absent) and metadata.
  int input_ids = -1, attention_mask = -1, position_ids = -1, logits = -1;
  std::vector<std::pair<int, int>> kv; // past, present
  int64_t context_length = 0;
  std::vector<int64_t> eos;
  int64_t bos = -1;
  std::string tokenizer_json;
  std::string chat_template;
  // Extra padding in the FlatBuffer, to push sections to later pages.
  std::string build_config_json;
  bool with_section = true;

  std::vector<uint8_t> FlatBuffer(const std::vector<SectionPlacement> &placements) const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::Tensor>> ts;
    for (const T &t : tensors_) {
      std::vector<flatbuffers::Offset<fb::Dim>> dims;
      for (const DimSpec &d : t.dims)
        dims.push_back(fb::CreateDim(b, d.value, d.symbol.empty() ? 0 : b.CreateString(d.symbol)));
      ts.push_back(fb::CreateTensor(
          b, b.CreateString(t.name), static_cast<fb::DType>(t.dtype), b.CreateVector(dims), t.kind,
          t.kind == fb::TensorKind::Weight ? 0 : -1, t.offset, t.size, t.slot, t.host));
    }
    std::vector<flatbuffers::Offset<fb::Op>> os;
    for (const O &o : ops_) {
      std::vector<flatbuffers::Offset<fb::Attr>> as;
      for (const AttrSpec &a : o.attrs)
        as.push_back(fb::CreateAttr(b, b.CreateString(a.name), a.kind, a.i, a.f,
                                    a.s.empty() ? 0 : b.CreateString(a.s),
                                    a.ints.empty() ? 0 : b.CreateVector(a.ints)));
      os.push_back(fb::CreateOp(b, b.CreateString(o.type), b.CreateString(o.name),
                                b.CreateVector(o.in), b.CreateVector(o.out),
                                b.CreateVectorOfSortedTables(&as)));
    }
    std::vector<int64_t> slot_bytes(next_slot_, 0);
    for (const T &t : tensors_) {
      if (t.kind != fb::TensorKind::Activation || t.host)
        continue;
      if (t.slot < 0 || t.slot >= next_slot_)
        continue; // tests of bad slots
      int64_t n = static_cast<int64_t>(DTypeSize(t.dtype));
      for (const DimSpec &d : t.dims)
        n = d.value < 0 || n < 0 ? -1 : n * d.value;
      int64_t &s = slot_bytes[t.slot];
      s = (n < 0 || s < 0) ? -1 : std::max(s, n);
    }
    auto mp = fb::CreateMemoryPlan(b, next_slot_, 64, b.CreateVector(slot_bytes), -1);
    std::vector<flatbuffers::Offset<fb::Section>> ss;
    for (const SectionPlacement &p : placements)
      ss.push_back(
          fb::CreateSection(b, b.CreateString("shared"), -1, p.offset, p.size, p.checksum));
    std::vector<flatbuffers::Offset<fb::KVPair>> kvs;
    for (auto [past, present] : kv)
      kvs.push_back(fb::CreateKVPair(b, past, present));
    auto dec = fb::CreateDecoderIO(b, input_ids, attention_mask, position_ids, logits,
                                   b.CreateVector(kvs));
    auto meta = fb::CreateModelMetadata(b, b.CreateString("toy"), b.CreateString("test"), 0,
                                        context_length, 1, 4, bos, b.CreateVector(eos));
    auto gen = fb::CreateGenerationDefaults(b);
    auto plan = fb::CreatePlan(b, kPlanFormatMajor, kPlanFormatMinor, b.CreateString("test"), meta,
                               tokenizer_json.empty() ? 0 : b.CreateString(tokenizer_json),
                               chat_template.empty() ? 0 : b.CreateString(chat_template), gen,
                               b.CreateString(build_config_json), 0, b.CreateVector(ts),
                               b.CreateVector(os), b.CreateVector(inputs_),
                               b.CreateVector(outputs_), mp, b.CreateVector(ss), dec);
    fb::FinishPlanBuffer(b, plan);
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }

  // Writes the plan; returns WritePlanFile's error ("" on success).
  std::string Write(const std::string &path) const {
    std::vector<SectionBlob> sections;
    if (with_section)
      sections.push_back(section_.blob());
    return WritePlanFile(
        path, [this](const std::vector<SectionPlacement> &p) { return FlatBuffer(p); }, sections);
  }

  std::vector<uint8_t> Bytes(const std::string &path) const {
    std::string err = Write(path);
    if (!err.empty())
      return {};
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  }

  std::vector<T> &tensors() { return tensors_; }
  std::vector<O> &ops() { return ops_; }

private:
  std::vector<T> tensors_;
  std::vector<O> ops_;
  std::vector<int> inputs_, outputs_;
  SectionBuffer section_;
  int next_slot_ = 0;
};

// A path under the test's temp dir, unique per name and per process: ctest
// runs each test in its own process, several at once, and tests that share
// a fixture file would otherwise race on it. The process's folder is
// removed when it exits.
inline std::string TempPath(const std::string &name) {
  struct Folder {
    std::filesystem::path path;
    Folder() {
      const char *dir = std::getenv("TMPDIR");
      path = std::filesystem::path(dir && *dir ? dir : "/tmp") /
             ("kiln_rt_test_" + std::to_string(static_cast<long>(getpid())));
      std::filesystem::create_directories(path);
    }
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Folder folder;
  return (folder.path / name).string();
}

} // namespace kiln::test
