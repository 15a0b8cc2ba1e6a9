// WordPiece (BERT-family) tokenizers against HF tokenizers: every corpus line
// plus BERT-specific lines for each fixture and variant, every code point
// through BertNormalizer and BertPreTokenizer, and the error cases.
// References: tools/make_wordpiece_refs.py.
#include <gtest/gtest.h>

#include <cstdio>

#include "kiln/tokenizer.h"
#include "reference_lines.h"
#include "test_data.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

using nlohmann::json;

class WordPieceReferenceTest : public ::testing::TestWithParam<const char *> {};

// Fails on any mismatch anywhere and prints the first differing line.
TEST_P(WordPieceReferenceTest, EveryLineMatchesHf) { testing::ExpectEveryLineMatchesHf(GetParam()); }

// The streaming decoder gives Decode's text for WordPiece too (its pieces
// depend on whether a token came first).
TEST_P(WordPieceReferenceTest, IncrementalDecoderMatchesDecode) {
  testing::ExpectStreamingMatchesDecode(GetParam(), /*all_variants=*/false);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WordPieceReferenceTest,
                         ::testing::Values("bert_uncased", "bert_cased"));

std::string Fnv1a(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001B3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Every code point but the surrogates, in the generator's blocks.
std::vector<std::string> CodepointBlocks(size_t block) {
  std::vector<std::string> blocks;
  std::string current;
  size_t n = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000)
      continue;
    AppendUtf8(cp, &current);
    if (++n == block) {
      blocks.push_back(std::move(current));
      current.clear();
      n = 0;
    }
  }
  if (n > 0)
    blocks.push_back(current);
  return blocks;
}

// The generated tables, NFD and lowercasing together on every code point.
TEST(WordPieceUnicodeTest, BertNormalizerAndPreTokenizerOnEveryCodepoint) {
  const json refs = testing::ReadTestJson("refs_bert_unicode.json");
  const std::vector<std::string> blocks = CodepointBlocks(refs.at("block").get<size_t>());
  for (const json &n : refs.at("normalizers")) {
    json config = n.at("options");
    config["type"] = "BertNormalizer";
    auto normalizer = Normalizer::FromJson(&config);
    ASSERT_TRUE(normalizer.ok()) << normalizer.status().message();
    const json &hashes = n.at("hashes");
    ASSERT_EQ(hashes.size(), blocks.size());
    size_t bad = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (Fnv1a((*normalizer)->Normalize(blocks[b])) != hashes[b].get<std::string>() &&
          bad++ == 0) {
        ADD_FAILURE() << config.dump() << ": first differing block " << b << " (from U+" << std::hex
                      << b * 256 << ")";
      }
    }
    EXPECT_EQ(bad, 0u) << config.dump();
  }
  const json config = {{"type", "BertPreTokenizer"}};
  auto pre = PreTokenizer::FromJson(&config);
  ASSERT_TRUE(pre.ok());
  const json &hashes = refs.at("pre_tokenizer");
  size_t bad = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::vector<std::string> words;
    ASSERT_TRUE((*pre)->Split(blocks[b], &words).ok());
    std::string joined;
    for (size_t w = 0; w < words.size(); ++w)
      joined += (w ? "\n" : "") + words[w];
    bad += Fnv1a(joined) != hashes[b].get<std::string>();
  }
  EXPECT_EQ(bad, 0u) << "BertPreTokenizer: blocks differing from HF";
}

json UncasedFixture() { return testing::ReadTestJson("bert_uncased.json"); }

// HF fails the encode of a word that needs a missing unk_token; so does kiln,
// with a message, while words that need no unk still encode.
TEST(WordPieceErrorTest, MissingUnkFailsOnlyWhenNeeded) {
  json config = UncasedFixture();
  config["model"]["unk_token"] = "[NOPE]";
  auto tok = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_TRUE((*tok)->Encode("the", false).ok());
  auto bad = (*tok)->Encode("the \U00011938", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[NOPE]"), std::string::npos) << bad.status().message();
}

// With the word-length cap lifted, a long word is still cut in time linear in
// its length, and its pieces decode back to it.
TEST(WordPieceTest, LongWordWithoutLengthCap) {
  json config = UncasedFixture();
  config["model"]["max_input_chars_per_word"] = int64_t{1} << 40;
  auto tok = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  std::string word;
  while (word.size() < 200000)
    word += "thefunction";
  auto ids = (*tok)->Encode(word, false);
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_GT(ids->size(), 10000u);
  EXPECT_EQ((*tok)->Decode(*ids, false), word);
}

TEST(WordPieceErrorTest, MalformedFieldsAreInvalidArgument) {
  for (const auto &[field, value] :
       std::vector<std::pair<std::string, json>>{{"max_input_chars_per_word", -1},
                                                 {"max_input_chars_per_word", "100"},
                                                 {"unk_token", 3},
                                                 {"continuing_subword_prefix", false},
                                                 {"vocab", json::array()}}) {
    json config = UncasedFixture();
    config["model"][field] = value;
    auto tok = Tokenizer::FromJson(config.dump());
    ASSERT_FALSE(tok.ok()) << field;
    EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(tok.status().message().find(field), std::string::npos) << tok.status().message();
  }
  json config = UncasedFixture();
  config["post_processor"] = {
      {"type", "BertProcessing"}, {"sep", {"[SEP]"}}, {"cls", {"[CLS]", 2}}};
  auto tok = Tokenizer::FromJson(config.dump());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("post_processor.sep"), std::string::npos);
}

// Components kiln does not run are refused by name, not run wrongly.
TEST(WordPieceErrorTest, UnsupportedComponentsAreNamed) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"model", {{"type", "WordLevel"}, {"vocab", json::object()}}},
      {"normalizer", {{"type", "StripAccents"}}},
      {"pre_tokenizer", {{"type", "Whitespace"}}},
      {"decoder", {{"type", "BPEDecoder"}}},
  };
  for (const auto &[key, value] : cases) {
    json config = UncasedFixture();
    config[key] = value;
    auto tok = Tokenizer::FromJson(config.dump());
    ASSERT_FALSE(tok.ok()) << key;
    EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented) << key;
    EXPECT_NE(tok.status().message().find(value.at("type").get<std::string>()), std::string::npos)
        << tok.status().message();
  }
}

} // namespace
} // namespace kiln::tokenizer
