// Sweeps every code point through the pieces where Unicode versions differ
// between engines: the regex classes (HF's Oniguruma vs PCRE2), case folding in
// the contractions group, and NFC (HF's own tables).
#include <gtest/gtest.h>

#include <set>

#include "test_data.h"
#include "tokenizer/nfc.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

using nlohmann::json;

std::set<char32_t> Expand(const json &ranges) {
  std::set<char32_t> out;
  for (const json &r : ranges) {
    for (char32_t c = r.at(0).get<char32_t>(); c <= r.at(1).get<char32_t>(); ++c)
      out.insert(c);
  }
  return out;
}

bool IsSurrogate(char32_t c) { return c >= 0xD800 && c < 0xE000; }

std::string Hex(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

// Code points on which two sets disagree, for the failure message.
std::string Disagreement(const std::set<char32_t> &want, const std::set<char32_t> &got) {
  std::string out;
  int shown = 0;
  for (char32_t c = 0; c < 0x110000 && shown < 8; ++c) {
    if (want.count(c) != got.count(c)) {
      out += " " + Hex(c) + (want.count(c) ? " (HF only)" : " (kiln only)");
      ++shown;
    }
  }
  return out;
}

TEST(RegexClasses, EveryCodepointMatchesLikeOniguruma) {
  const json refs = testing::ReadTestJson("unicode_refs.json");
  // All code points in one subject: each class matches single characters.
  std::string all;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (!IsSurrogate(c))
      AppendUtf8(c, &all);
  }
  ASSERT_GE(refs.at("classes").size(), 6u);
  for (const json &cls : refs.at("classes")) {
    const std::string pattern = cls.at("pattern");
    auto regex = Regex::Compile(pattern);
    ASSERT_TRUE(regex.ok()) << pattern << ": " << regex.status().message();
    std::vector<std::pair<size_t, size_t>> matches;
    ASSERT_TRUE((*regex)->FindAll(all, &matches).ok());
    std::set<char32_t> got;
    for (const auto &[begin, end] : matches) {
      size_t i = begin;
      got.insert(NextCodepoint(all, &i));
      ASSERT_EQ(i, end) << pattern << " matched more than one character";
    }
    const std::set<char32_t> want = Expand(cls.at("ranges"));
    EXPECT_EQ(got.size(), want.size()) << pattern;
    EXPECT_TRUE(got == want) << pattern << " differs at" << Disagreement(want, got);
  }
}

TEST(RegexClasses, ContractionCaseFoldingMatchesOniguruma) {
  const json refs = testing::ReadTestJson("unicode_refs.json");
  const json &c = refs.at("contraction");
  auto regex = Regex::Compile(c.at("pattern").get<std::string>());
  ASSERT_TRUE(regex.ok()) << regex.status().message();
  std::string text;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (IsSurrogate(cp))
      continue;
    text += '\'';
    AppendUtf8(cp, &text);
    text += '\0';
  }
  std::vector<std::pair<size_t, size_t>> matches;
  ASSERT_TRUE((*regex)->FindAll(text, &matches).ok());
  std::set<char32_t> got;
  for (const auto &[begin, end] : matches) {
    size_t i = begin + 1;
    const char32_t cp = NextCodepoint(text, &i);
    if (text[begin] == '\'' && i == end)
      got.insert(cp);
  }
  const std::set<char32_t> want = Expand(c.at("letters"));
  EXPECT_TRUE(want.count(0x17F)) << "reference lost the long s (U+017F) case";
  EXPECT_TRUE(got == want) << "differs at" << Disagreement(want, got);
}

TEST(RegexTranslation, RewritesOnlyTheVersionSensitiveEscapes) {
  EXPECT_EQ(TranslateOnigurumaPattern(R"('s|\d+)"), R"('s|\d+)");
  const std::string ws = TranslateOnigurumaPattern(R"(\s)");
  EXPECT_EQ(ws.front(), '[');
  EXPECT_EQ(ws.find("180E"), std::string::npos) << ws;        // U+180E is not White_Space
  EXPECT_EQ(TranslateOnigurumaPattern(R"([\S])"), R"([\S])"); // cannot expand inside a class
  EXPECT_EQ(TranslateOnigurumaPattern(R"(\S)").rfind("[^", 0), 0u);
  EXPECT_EQ(TranslateOnigurumaPattern(R"([^\p{L}])").rfind(R"([^\p{L}\x{)", 0), 0u);
  EXPECT_EQ(TranslateOnigurumaPattern(R"(\p{Lu})"), R"(\p{Lu})");
}

TEST(Nfc, MatchesHfOnEveryDecomposableCharacter) {
  const json refs = testing::ReadTestJson("unicode_refs.json");
  const json &cases = refs.at("nfc");
  ASSERT_GT(cases.size(), 5000u);
  size_t failures = 0;
  std::string first;
  for (const json &c : cases) {
    const std::string in = c.at(0), want = c.at(1);
    const std::string got = NfcNormalize(in);
    if (got != want && failures++ == 0) {
      first =
          testing::Escape(in) + ": want " + testing::Escape(want) + ", got " + testing::Escape(got);
    }
  }
  EXPECT_EQ(failures, 0u) << "first: " << first;
}

TEST(Nfc, KnownCompositionsAndOrder) {
  EXPECT_EQ(NfcNormalize("cafe\xCC\x81"), "caf\xC3\xA9"); // e + U+0301 -> é
  EXPECT_EQ(NfcNormalize("\xE2\x84\xAB"), "\xC3\x85");    // U+212B -> Å
  EXPECT_EQ(NfcNormalize("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"), "\xED\x95\x9C"); // jamo -> 한
  EXPECT_EQ(NfcNormalize("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87"); // reordered by class
  EXPECT_EQ(NfcNormalize("plain ascii"), "plain ascii");
}

} // namespace
} // namespace kiln::tokenizer
