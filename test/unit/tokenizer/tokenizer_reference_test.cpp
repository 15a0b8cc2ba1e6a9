// Compares kiln's tokenizer with HF tokenizers on every line of the corpus, for
// each fixture and each patched variant recorded by tools/make_tokenizer_refs.py.
#include <gtest/gtest.h>

#include <optional>

#include "kiln/tokenizer.h"
#include "test_data.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

using nlohmann::json;
using testing::Describe;
using testing::Escape;

// One corpus line's expectations; a field the variant did not record is absent.
struct Expected {
  std::vector<int32_t> ids;
  std::optional<std::vector<int32_t>> ids_special;
  std::optional<std::string> decode, decode_skip;
};

// Resolves the generator's nulls: ids as the base variant's, ids_special as
// ids, decodes as the text itself.
Expected Resolve(const json &c, const std::vector<int32_t> &base_ids, const std::string &text) {
  Expected e;
  e.ids = c.at("ids").is_null() ? base_ids : c.at("ids").get<std::vector<int32_t>>();
  if (c.contains("ids_special")) {
    e.ids_special =
        c["ids_special"].is_null() ? e.ids : c["ids_special"].get<std::vector<int32_t>>();
  }
  if (c.contains("decode"))
    e.decode = c["decode"].is_null() ? text : c["decode"].get<std::string>();
  if (c.contains("decode_skip")) {
    e.decode_skip = c["decode_skip"].is_null() ? text : c["decode_skip"].get<std::string>();
  }
  return e;
}

// Empty if the line matches HF on every recorded field, else what differs.
std::string CompareLine(const Tokenizer &tok, const std::string &text, const Expected &e) {
  std::string diff;
  auto ids = tok.Encode(text, /*add_special_tokens=*/false);
  if (!ids.ok())
    return "Encode failed: " + ids.status().message();
  if (*ids != e.ids)
    diff += "\n  ids:         want " + Describe(e.ids) + "\n               got  " + Describe(*ids);
  if (e.ids_special) {
    auto sp = tok.Encode(text, /*add_special_tokens=*/true);
    if (!sp.ok())
      return "Encode(add_special_tokens) failed: " + sp.status().message();
    if (*sp != *e.ids_special) {
      diff += "\n  ids_special: want " + Describe(*e.ids_special) + "\n               got  " +
              Describe(*sp);
    }
  }
  // Decodes start from HF's ids, so they test Decode on its own.
  if (e.decode) {
    const std::string d = tok.Decode(e.ids, /*skip_special_tokens=*/false);
    if (d != *e.decode)
      diff += "\n  decode:      want " + Escape(*e.decode) + "\n               got  " + Escape(d);
  }
  if (e.decode_skip && e.ids_special) {
    const std::string d = tok.Decode(*e.ids_special, /*skip_special_tokens=*/true);
    if (d != *e.decode_skip) {
      diff +=
          "\n  decode_skip: want " + Escape(*e.decode_skip) + "\n               got  " + Escape(d);
    }
  }
  return diff;
}

class ReferenceTest : public ::testing::TestWithParam<const char *> {};

// Fails on any mismatch anywhere in the corpus and prints the first differing line.
TEST_P(ReferenceTest, WholeCorpusMatchesHf) {
  const std::vector<std::string> corpus = testing::ReadCorpus();
  const json refs = testing::ReadTestJson(std::string("refs_") + GetParam() + ".json");
  ASSERT_GT(corpus.size(), 500u);
  std::vector<std::vector<int32_t>> base_ids;
  for (const json &variant : refs.at("variants")) {
    const std::string name =
        std::string(GetParam()) + "/" + variant.at("variant").get<std::string>();
    const json &cases = variant.at("cases");
    ASSERT_EQ(cases.size(), corpus.size()) << name << ": refs are stale; rerun the generator";
    auto tok =
        Tokenizer::FromJson(testing::PatchedFixture(refs.at("fixture"), variant.at("patch")));
    ASSERT_TRUE(tok.ok()) << name << ": " << tok.status().message();
    EXPECT_EQ((*tok)->vocab_size(), variant.at("vocab_size").get<int64_t>()) << name;
    size_t passed = 0;
    std::string first_failure;
    for (size_t i = 0; i < corpus.size(); ++i) {
      if (base_ids.size() < corpus.size())
        base_ids.push_back(cases[i].at("ids").get<std::vector<int32_t>>());
      const std::string diff =
          CompareLine(**tok, corpus[i], Resolve(cases[i], base_ids[i], corpus[i]));
      if (diff.empty()) {
        ++passed;
      } else if (first_failure.empty()) {
        first_failure = "line " + std::to_string(i + 1) + " " + Escape(corpus[i]) + diff;
      }
    }
    std::printf("[ tokenizer] %-24s %zu/%zu corpus lines match HF\n", name.c_str(), passed,
                corpus.size());
    EXPECT_EQ(passed, corpus.size()) << name << ": first differing " << first_failure;
  }
}

// Streams every corpus line id by id: no chunk may end inside a character, and
// the chunks must add up to Decode's text.
TEST_P(ReferenceTest, IncrementalDecoderMatchesDecode) {
  const std::vector<std::string> corpus = testing::ReadCorpus();
  const json refs = testing::ReadTestJson(std::string("refs_") + GetParam() + ".json");
  const json &base = refs.at("variants").at(0);
  auto tok = Tokenizer::FromJson(testing::ReadTestFile(refs.at("fixture")));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  size_t partial_chars = 0; // ids that ended mid-character: the case this decoder exists for
  for (size_t i = 0; i < corpus.size(); ++i) {
    const json &c = base.at("cases").at(i);
    const std::vector<int32_t> ids = c.at("ids_special").is_null()
                                         ? c.at("ids").get<std::vector<int32_t>>()
                                         : c.at("ids_special").get<std::vector<int32_t>>();
    for (bool skip : {false, true}) {
      IncrementalDecoder stream(**tok, skip);
      std::string text;
      for (int32_t id : ids) {
        const std::string chunk = stream.Add(id);
        ASSERT_TRUE(IsValidUtf8(chunk)) << "line " << i + 1 << ": chunk " << Escape(chunk);
        text += chunk;
        if (chunk.empty())
          ++partial_chars;
      }
      text += stream.Flush();
      EXPECT_EQ(text, (*tok)->Decode(ids, skip)) << "line " << i + 1 << " " << Escape(corpus[i]);
    }
  }
  EXPECT_GT(partial_chars, 0u) << "the corpus never splits a character across ids";
}

size_t CodepointCount(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

// Word boundaries alone: a boundary that no merge crosses leaves the ids alone,
// so the regex engines' agreement is checked here directly.
TEST_P(ReferenceTest, PreTokenizerSplitsLikeHf) {
  const std::vector<std::string> corpus = testing::ReadCorpus();
  const json refs = testing::ReadTestJson("refs_pretokenize.json").at("fixtures").at(GetParam());
  ASSERT_EQ(refs.size(), corpus.size());
  const json config = testing::ReadTestJson(std::string(GetParam()) + ".json");
  auto pre = PreTokenizer::FromJson(&config.at("pre_tokenizer"));
  ASSERT_TRUE(pre.ok()) << pre.status().message();
  size_t passed = 0;
  std::string first_failure;
  for (size_t i = 0; i < corpus.size(); ++i) {
    std::vector<std::string> words;
    ASSERT_TRUE((*pre)->Split(corpus[i], &words).ok());
    std::vector<int32_t> lengths;
    for (const std::string &w : words)
      lengths.push_back(static_cast<int32_t>(CodepointCount(w)));
    const auto want = refs[i].get<std::vector<int32_t>>();
    if (lengths == want) {
      ++passed;
    } else if (first_failure.empty()) {
      first_failure = "line " + std::to_string(i + 1) + " " + Escape(corpus[i]) +
                      "\n  word lengths: want " + Describe(want) + "\n                got  " +
                      Describe(lengths);
    }
  }
  EXPECT_EQ(passed, corpus.size()) << GetParam() << ": first differing " << first_failure;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReferenceTest, ::testing::Values("gpt2", "llama3", "qwen2"));

// The variants only prove something if HF's output differs between them.
TEST(ReferenceData, VariantsExerciseTheirOption) {
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
  EXPECT_GT(differing("llama3", "no_ignore_merges"), 0u);
  EXPECT_GT(differing("qwen2", "no_normalizer"), 0u);
  EXPECT_GT(differing("gpt2", "prefix_space"), 0u);
  EXPECT_GT(differing("llama3", "split_invert"), 0u);
}

} // namespace
} // namespace kiln::tokenizer
