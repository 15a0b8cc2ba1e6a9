// Building blocks of plan writing and verification: SHA-256 (against the
// FIPS 180-4 / NIST example vectors, and the SHA-extension code against the
// portable code), the streaming section checksum, and the streaming plan
// writer read back by the loader.
#include "kiln/plan.h"
#include "sha256.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sys/stat.h>

namespace kiln {
namespace {

using test::Mlp;
using test::TempPath;

std::string Hex(const std::string &text, bool accelerated = true) {
  Sha256 sha(accelerated);
  sha.Update(text.data(), text.size());
  return sha.HexDigest();
}

TEST(Sha256, KnownVectors) {
  for (bool accelerated : {false, true}) {
    SCOPED_TRACE(accelerated ? "accelerated" : "portable");
    EXPECT_EQ(Hex("", accelerated),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(Hex("abc", accelerated),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", accelerated),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
                  "pqklmnopqrlmnopqrsmnopqrstnopqrstu",
                  accelerated),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(Hex(std::string(1000000, 'a'), accelerated),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
}

TEST(Sha256, StreamingAndAcceleratedMatchPortableOnEveryLength) {
  std::mt19937 rng(7);
  std::string data(3000, '\0');
  for (char &c : data)
    c = static_cast<char>(rng());
  // Lengths around the 55/56/64-byte padding boundaries and many blocks.
  for (size_t len : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 2999}) {
    std::string piece = data.substr(0, len);
    std::string expect = Hex(piece, /*accelerated=*/false);
    EXPECT_EQ(Hex(piece, true), expect) << len;
    Sha256 split;
    size_t pos = 0;
    while (pos < len) {
      size_t n = std::min<size_t>(len - pos, 1 + rng() % 97);
      split.Update(piece.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(split.HexDigest(), expect) << len;
  }
}

TEST(Sha256, HashesFilesAndNamesUnreadableOnes) {
  std::string path = TempPath("sha.bin");
  std::string text(3 << 20, 'k'); // several 1 MB read() buffers
  std::ofstream(path, std::ios::binary) << text;
  std::string hex;
  uint64_t size = 0;
  EXPECT_EQ(Sha256File(path, &hex, &size), "");
  EXPECT_EQ(size, text.size());
  EXPECT_EQ(hex, Hex(text));
  std::string err = Sha256File(TempPath("missing.bin"), &hex, &size);
  EXPECT_NE(err.find("missing.bin"), std::string::npos) << err;
}

TEST(PlanChecksum, StreamEqualsOneShotAcrossSplits) {
  std::mt19937 rng(3);
  std::vector<uint8_t> data(5000);
  for (uint8_t &b : data)
    b = static_cast<uint8_t>(rng());
  for (size_t len : {0, 7, 8, 31, 32, 33, 100, 4999}) {
    PlanChecksumStream s;
    size_t pos = 0;
    while (pos < len) {
      size_t n = std::min<size_t>(len - pos, rng() % 41);
      s.Update(data.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(s.Final(), PlanChecksum(data.data(), len)) << len;
  }
}

// A section produced piece by piece loads like the same bytes written at once.
TEST(PlanFile, StreamedSectionLoads) {
  Mlp m;
  test::TestPlan p = m.Build();
  std::string once = TempPath("once.plan"), streamed = TempPath("streamed.plan");
  ASSERT_EQ(p.Write(once), "");
  std::ifstream in(once, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  auto loaded = LoadPlan(once);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const fb::Section *s0 = (*loaded)->fb().sections()->Get(0);
  std::vector<uint8_t> section(bytes.begin() + s0->offset(),
                               bytes.begin() + s0->offset() + s0->size());
  auto fbBytes = [&](const std::vector<SectionPlacement> &placements) {
    return p.FlatBuffer(placements);
  };
  SectionSource source{
      section.size(), [&](SectionWriter &out) {
        for (size_t i = 0; i < section.size(); i += 5)
          if (!out.Write(section.data() + i, std::min<size_t>(5, section.size() - i)))
            return std::string("write failed");
        return std::string();
      }};
  ASSERT_EQ(StreamPlanFile(streamed, fbBytes, std::vector<SectionSource>{source}), "");
  auto plan = LoadPlan(streamed);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const PlanTensor &w = (*plan)->tensors()[(*plan)->FindTensor("W")];
  EXPECT_EQ(static_cast<const float *>(w.data)[3], m.w[3]);
}

TEST(PlanFile, StreamedSectionErrorsLeaveNoFile) {
  Mlp m;
  test::TestPlan p = m.Build();
  auto fbBytes = [&](const std::vector<SectionPlacement> &pl) { return p.FlatBuffer(pl); };
  std::string path = TempPath("short.plan");
  SectionSource shortSource{100, [](SectionWriter &out) {
                              return out.WriteZeros(60) ? std::string() : std::string("io");
                            }};
  std::string err = StreamPlanFile(path, fbBytes, std::vector<SectionSource>{shortSource});
  EXPECT_NE(err.find("wrote 60 bytes but declared 100"), std::string::npos) << err;
  SectionSource failing{10, [](SectionWriter &) { return std::string("weight 'x' is missing"); }};
  EXPECT_EQ(StreamPlanFile(path, fbBytes, std::vector<SectionSource>{failing}),
            "weight 'x' is missing");
  struct stat st;
  EXPECT_NE(::stat(path.c_str(), &st), 0);
  EXPECT_NE(::stat((path + ".tmp").c_str(), &st), 0);
}

// The hook between the sections and the final FlatBuffer: what it changes
// (here a string of the same width, as the plan writer's hashes) is what the
// file holds; its error aborts the write.
TEST(PlanFile, SectionsWrittenHookFillsTheFinalFlatBuffer) {
  Mlp m;
  test::TestPlan p = m.Build();
  p.build_config_json = std::string(64, '0');
  auto fbBytes = [&](const std::vector<SectionPlacement> &pl) { return p.FlatBuffer(pl); };
  std::vector<uint8_t> w(1000, 7);
  std::vector<SectionSource> sources = {
      {w.size(), [&](SectionWriter &out) { return out.Write(w.data(), w.size()) ? "" : "io"; }}};
  std::string path = TempPath("hook.plan");
  std::string final(64, 'f');
  ASSERT_EQ(StreamPlanFile(path, fbBytes, sources,
                           [&] {
                             p.build_config_json = final;
                             return std::string();
                           }),
            "");
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  // This section does not hold the MLP's tensors, so the loader would refuse
  // the graph: check the framing, the string and the section checksum.
  PlanHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  EXPECT_EQ(h.file_size, bytes.size());
  EXPECT_EQ(PlanChecksum(bytes.data() + kPlanHeaderSize, h.flatbuffer_size), h.flatbuffer_checksum);
  const auto *f = fb::GetPlan(bytes.data() + kPlanHeaderSize);
  EXPECT_EQ(f->build_config_json()->str(), final);
  EXPECT_EQ(f->sections()->Get(0)->checksum(), PlanChecksum(w.data(), w.size()));

  std::string err = StreamPlanFile(path + "2", fbBytes, sources,
                                   [] { return std::string("hashing 'x' failed"); });
  EXPECT_EQ(err, "hashing 'x' failed");
  struct stat st;
  EXPECT_NE(::stat((path + "2").c_str(), &st), 0);
}

} // namespace
} // namespace kiln
