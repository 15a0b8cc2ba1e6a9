// SentencePiece-style tokenizers against HF tokenizers: BPE with byte
// fallback (Llama 2, Mistral, Gemma, GGUF conversions) and Unigram (T5,
// XLM-R), every corpus and extra line of each variant, streaming decodes, and
// the malformed configurations. References: tools/make_sentencepiece_refs.py.
#include <gtest/gtest.h>

#include "kiln/tokenizer.h"
#include "reference_lines.h"
#include "test_data.h"

namespace kiln::tokenizer {
namespace {

using nlohmann::json;

class SentencePieceReferenceTest : public ::testing::TestWithParam<const char *> {};

TEST_P(SentencePieceReferenceTest, EveryLineMatchesHf) {
  testing::ExpectEveryLineMatchesHf(GetParam());
}

// Byte runs decode only once they end, so streaming is checked on every
// variant and on random id sequences (invalid and unfinished UTF-8 runs).
TEST_P(SentencePieceReferenceTest, StreamingAndRandomIdsMatchHf) {
  testing::ExpectStreamingMatchesDecode(GetParam(), /*all_variants=*/true);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SentencePieceReferenceTest,
                         ::testing::Values("llama2_sp", "t5_unigram"));

// The variants only prove something if HF's ids differ from the base's.
TEST(SentencePieceReferenceData, VariantsExerciseTheirOption) {
  auto differing = [](const char *fixture, const char *variant) {
    const json refs = testing::ReadTestJson(std::string("refs_") + fixture + ".json");
    for (const json &v : refs.at("variants")) {
      if (v.at("variant") != variant)
        continue;
      size_t n = 0;
      for (const json &c : v.at("cases"))
        n += !c.at("ids").is_null();
      return n;
    }
    return size_t{0};
  };
  for (const char *v : {"metaspace_first", "metaspace_always_split", "metaspace_never", "gemma",
                        "strip_normalizer", "no_byte_fallback", "no_fuse_unk"})
    EXPECT_GT(differing("llama2_sp", v), 0u) << v;
  for (const char *v : {"byte_fallback", "metaspace_first"})
    EXPECT_GT(differing("t5_unigram", v), 0u) << v;
}

json Unigram() { return testing::ReadTestJson("t5_unigram.json"); }

Status LoadStatus(const json &config) {
  auto tok = Tokenizer::FromJson(config.dump());
  return tok.ok() ? Status::Ok() : tok.status();
}

TEST(SentencePieceErrors, MalformedFieldsSayWhere) {
  struct Case {
    const char *path;
    json value;
    const char *needle;
  };
  const Case cases[] = {
      {"/model/vocab", json::array(), "model.vocab"},
      {"/model/vocab/3", json{"x"}, "model.vocab[3]"},
      {"/model/vocab/3", json{"x", "high"}, "model.vocab[3]"},
      {"/model/unk_id", 1 << 30, "model.unk_id"},
      {"/model/unk_id", -1, "model.unk_id"},
      {"/pre_tokenizer", json{{"type", "Metaspace"}, {"replacement", "__"}}, "replacement"},
      {"/pre_tokenizer", json{{"type", "Metaspace"}, {"replacement", "_"},
                              {"prepend_scheme", "sometimes"}},
       "prepend_scheme"},
      {"/normalizer", json{{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", "x"}},
       "normalizer.pattern"},
      {"/normalizer", json{{"type", "Prepend"}}, "prepend"},
      {"/decoder", json{{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}},
       "decoder.content"},
      {"/decoder", json{{"type", "Strip"}, {"content", " "}, {"start", -1}}, "decoder.start"},
  };
  for (const Case &c : cases) {
    json config = Unigram();
    config[json::json_pointer(c.path)] = c.value;
    const Status s = LoadStatus(config);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.path << ": " << s.message();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << c.path << ": " << s.message();
  }
}

// Without unk_id, a character no piece covers fails the encode with a
// message (HF raises); text the pieces cover still encodes.
TEST(SentencePieceErrors, UnigramWithoutUnkFailsOnlyWhenNeeded) {
  json config = Unigram();
  config["model"]["unk_id"] = nullptr;
  auto tok = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_TRUE((*tok)->Encode("the plan", false).ok());
  auto bad = (*tok)->Encode("the \U00011938", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unk_id"), std::string::npos) << bad.status().message();
}

// A word of a hundred thousand characters is cut in time linear in its length
// (the lattice holds one node per byte) and decodes back to itself.
TEST(SentencePieceTest, LongWordsEncodeAndRoundTrip) {
  for (const char *fixture : {"llama2_sp.json", "t5_unigram.json"}) {
    auto tok = Tokenizer::FromJson(testing::ReadTestFile(fixture));
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    std::string word;
    while (word.size() < 100000)
      word += "kilnfiresplan";
    auto ids = (*tok)->Encode(word, false);
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    EXPECT_GT(ids->size(), 1000u) << fixture;
    EXPECT_EQ((*tok)->Decode(*ids, false), word) << fixture;
  }
}

} // namespace
} // namespace kiln::tokenizer
