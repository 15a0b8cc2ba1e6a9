// The plan file writer and the loader: layout, and refusal of every damaged
// or inconsistent file with a Status (never a crash; run under ASan).
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kiln {
namespace {

using test::AInt;
using test::AttrSpec;
using test::Mlp;
using test::TempPath;
using test::TestPlan;

std::vector<uint8_t> MlpBytes(const std::string &name) {
  Mlp m;
  return m.Build().Bytes(TempPath(name));
}

Status LoadBytes(const std::vector<uint8_t> &b) {
  auto p = LoadPlanFromBytes(b.data(), b.size());
  return p.ok() ? Status::Ok() : p.status();
}

// Rewrites both checksums after a deliberate edit of the FlatBuffer, so the
// edit reaches the verifier and the structural checks.
void Reseal(std::vector<uint8_t> &b) {
  PlanHeader h;
  std::memcpy(&h, b.data(), sizeof(h));
  h = MakePlanHeader(b.data() + kPlanHeaderSize, h.flatbuffer_size, b.size());
  std::memcpy(b.data(), &h, sizeof(h));
}

TEST(PlanFile, PlacesSectionsOnPageBoundaries) {
  uint8_t a[10] = {}, c[5000] = {};
  auto p = PlaceSections(100, {{a, sizeof(a)}, {c, sizeof(c)}, {a, 0}});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].offset, 4096u);
  EXPECT_EQ(p[1].offset, 8192u);
  EXPECT_EQ(p[2].offset, 8192u + 8192u);
  EXPECT_EQ(p[1].checksum, PlanChecksum(c, sizeof(c)));
  EXPECT_EQ(PlaceSections(4096 - 64, {{a, 10}})[0].offset, 4096u);
  EXPECT_EQ(PlaceSections(4096 - 63, {{a, 10}})[0].offset, 8192u);
}

TEST(PlanFile, LargeFlatBufferMovesSectionsAndStillLoads) {
  Mlp m;
  TestPlan p = m.Build();
  p.build_config_json = std::string(10000, 'x'); // FlatBuffer spans 3 pages
  std::string path = TempPath("large_fb.plan");
  ASSERT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_GE((*plan)->fb().sections()->Get(0)->offset(), 12288u);
  EXPECT_EQ((*plan)->fb().build_config_json()->size(), 10000u);
  const PlanTensor &w = (*plan)->tensors()[(*plan)->FindTensor("W")];
  EXPECT_EQ(static_cast<const float *>(w.data)[3], m.w[3]);
}

TEST(PlanFile, BuilderFailureIsReported) {
  std::string err = WritePlanFile(
      TempPath("never.plan"),
      [](const std::vector<SectionPlacement> &) { return std::vector<uint8_t>(); }, {});
  EXPECT_NE(err.find("no bytes"), std::string::npos);
}

TEST(PlanLoader, LoadsAndDecodesTensors) {
  Mlp m;
  std::string path = TempPath("mlp.plan");
  ASSERT_EQ(m.Build().Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const Plan &p = **plan;
  ASSERT_EQ(p.inputs().size(), 1u);
  EXPECT_EQ(p.tensors()[p.inputs()[0]].DimsToString(), "[batch, 4]");
  EXPECT_EQ(p.num_ops(), 3);
  EXPECT_EQ(p.weight_bytes(), 64u + 12u); // W padded to 64, then b
  EXPECT_EQ(p.FindTensor("nope"), -1);
}

// A token reads every weight except the experts a moe op leaves idle: of
// its 4 experts (top 2), half of w_gate_up's and w_down's bytes.
TEST(PlanLoader, TokenWeightBytesLeaveOutIdleExperts) {
  TestPlan p;
  const int x = p.Input("x", DType::kF32, {"batch", 8});
  const int wr = p.Weight("router", DType::kF32, {8, 4}, std::vector<float>(32, 0.5f));
  const int wgu = p.Weight("wgu", DType::kF32, {4, 8, 16}, std::vector<float>(512, 0.25f));
  const int wd = p.Weight("wd", DType::kF32, {4, 8, 8}, std::vector<float>(256, 0.125f));
  const int y = p.Act("y", DType::kF32, {"batch", 8});
  p.Op("moe", {x, wr, wgu, wd}, {y},
       {AInt("top_k", 2), AInt("normalize", 1),
        AttrSpec{"activation", fb::AttrKind::String, 0, 0, "silu", {}}});
  p.Output(y);
  const std::string path = TempPath("moe_bytes.plan");
  ASSERT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const uint64_t all = (*plan)->weight_bytes();
  EXPECT_GE(all, (32u + 512u + 256u) * 4u);
  EXPECT_EQ((*plan)->token_weight_bytes(), all - (512u + 256u) * 4u / 2u);
  // A plan without moe: every weight.
  Mlp m;
  const std::string mlp = TempPath("mlp_bytes.plan");
  ASSERT_EQ(m.Build().Write(mlp), "");
  auto dense = LoadPlan(mlp);
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ((*dense)->token_weight_bytes(), (*dense)->weight_bytes());
}

TEST(PlanLoader, MissingFileIsNotFound) {
  auto plan = LoadPlan(TempPath("does_not_exist.plan"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
}

TEST(PlanLoader, RefusesEveryTruncation) {
  std::vector<uint8_t> b = MlpBytes("trunc.plan");
  ASSERT_GT(b.size(), 4096u);
  ASSERT_TRUE(LoadBytes(b).ok());
  for (size_t len = 0; len < b.size(); len += (len < 256 ? 1 : 7)) {
    Status st = LoadBytes(std::vector<uint8_t>(b.begin(), b.begin() + len));
    ASSERT_FALSE(st.ok()) << "truncated to " << len;
  }
  std::vector<uint8_t> longer = b;
  longer.push_back(0);
  Status st = LoadBytes(longer);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("header says"), std::string::npos) << st.message();
}

TEST(PlanLoader, RefusesEverySingleBitFlip) {
  std::vector<uint8_t> b = MlpBytes("flip.plan");
  // Every bit of the header, FlatBuffer, zero padding and weights.
  for (size_t byte = 0; byte < b.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      b[byte] ^= static_cast<uint8_t>(1u << bit);
      Status st = LoadBytes(b);
      b[byte] ^= static_cast<uint8_t>(1u << bit);
      ASSERT_FALSE(st.ok()) << "flip of bit " << bit << " of byte " << byte << " loaded";
    }
  }
}

TEST(PlanLoader, RandomEditsBehindValidChecksumsNeverCrash) {
  // The checksums would stop these edits; resealing lets them through to
  // the FlatBuffers verifier and the structural checks, which must cope.
  std::vector<uint8_t> good = MlpBytes("fuzz.plan");
  PlanHeader h;
  std::memcpy(&h, good.data(), sizeof(h));
  std::mt19937_64 rng(1234);
  int refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = kPlanHeaderSize + rng() % h.flatbuffer_size;
      switch (rng() % 3) {
      case 0:
        b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:
        b[at] = static_cast<uint8_t>(rng());
        break;
      default:
        b[at] = (rng() % 2) ? 0xff : 0x00;
        break;
      }
    }
    Reseal(b);
    refused += LoadBytes(b).ok() ? 0 : 1;
  }
  EXPECT_GT(refused, 1000); // most random edits break something
}

TEST(PlanLoader, RefusesWrongMagicAndVersion) {
  std::vector<uint8_t> b = MlpBytes("magic.plan");
  std::vector<uint8_t> bad = b;
  bad[0] = 'X';
  Status st = LoadBytes(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a kiln plan"), std::string::npos);

  PlanHeader h;
  std::memcpy(&h, b.data(), sizeof(h));
  h.format_major = 99;
  h.header_checksum = PlanChecksum(&h, 48);
  std::memcpy(b.data(), &h, sizeof(h));
  st = LoadBytes(b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("version 99"), std::string::npos) << st.message();
}

// Structural problems in a well-formed file, each named in the message.
struct BadPlanCase {
  const char *name;
  std::function<void(TestPlan &, Mlp &)> edit;
  const char *message;
};

TEST(PlanLoader, RefusesInconsistentPlans) {
  std::vector<BadPlanCase> cases = {
      {"unknown op", [](TestPlan &p, Mlp &) { p.ops()[1].type = "frobnicate"; },
       "op type 'frobnicate' is not supported"},
      {"slot out of range", [](TestPlan &p, Mlp &m) { p.tensors()[m.z].slot = 7; },
       "slot 7 is outside"},
      {"live slot shared", [](TestPlan &p, Mlp &m) { p.tensors()[m.z].slot = 0; },
       "share slot 0 while both are live"},
      {"weight size", [](TestPlan &p, Mlp &) { p.tensors()[1].size = 40; }, "size 40 bytes"},
      {"weight offset", [](TestPlan &p, Mlp &) { p.tensors()[2].offset = 4; },
       "not a multiple of 64"},
      {"weight past section", [](TestPlan &p, Mlp &) { p.tensors()[2].offset = 128; },
       "past the end of its"},
      {"operand range", [](TestPlan &p, Mlp &) { p.ops()[0].in[1] = 99; },
       "operand 99 is not a tensor"},
      {"use before def", [](TestPlan &p, Mlp &m) { p.ops()[0].in[0] = m.z; },
       "before any op produces it"},
      {"writes a weight", [](TestPlan &p, Mlp &) { p.ops()[0].out[0] = 1; }, "of kind Weight"},
      {"produced twice", [](TestPlan &p, Mlp &m) { p.ops()[1].out[0] = m.h; }, "already produced"},
      {"dynamic weight", [](TestPlan &p, Mlp &) { p.tensors()[1].dims[0] = test::DimSpec("n"); },
       "static shape"},
      {"bad dtype", [](TestPlan &p, Mlp &) { p.tensors()[1].dtype = static_cast<DType>(42); },
       "unknown dtype 42"},
      {"no section", [](TestPlan &p, Mlp &) { p.with_section = false; },
       "section 0 does not exist"},
      {"decoder role", [](TestPlan &p, Mlp &m) { p.logits = m.z; }, "is not a graph output"},
  };
  for (auto &c : cases) {
    Mlp m;
    TestPlan p = m.Build();
    c.edit(p, m);
    std::vector<uint8_t> b = p.Bytes(TempPath("bad.plan"));
    ASSERT_FALSE(b.empty()) << c.name;
    Status st = LoadBytes(b);
    EXPECT_FALSE(st.ok()) << c.name;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << c.name << ": " << st.message();
  }
}

// A reshape-family result in its operand's slot is a view of it and extends
// its life: a third tensor written into that slot while the view is still
// read is refused, as is a non-view op sharing its operand's slot.
TEST(PlanLoader, ViewsExtendTheirOperandsLife) {
  test::ViewPlan ok;
  EXPECT_TRUE(LoadBytes(ok.Build().Bytes(TempPath("view.plan"))).ok());
  test::ViewPlan reuse;
  Status st = LoadBytes(reuse.Build(/*y_slot=*/0).Bytes(TempPath("view_reuse.plan")));
  EXPECT_NE(st.message().find("share slot 0 while both are live"), std::string::npos)
      << st.message();
  test::ViewPlan not_view;
  TestPlan p = not_view.Build();
  p.ops()[1].type = "relu"; // same slot, but not a view: kernels do not run in place
  p.ops()[1].in.resize(1);
  p.ops()[1].attrs.clear();
  st = LoadBytes(p.Bytes(TempPath("view_not.plan")));
  EXPECT_NE(st.message().find("share slot 0 while both are live"), std::string::npos)
      << st.message();
}

} // namespace
} // namespace kiln
