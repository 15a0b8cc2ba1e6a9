#include "reference_lines.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "test_data.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer::testing {

using nlohmann::json;

Case Resolve(const json &c, const Case *base, const std::string &text) {
  Case r;
  auto ids = [&](const char *k, const std::vector<int32_t> &usual) {
    return c.at(k).is_null() ? usual : c.at(k).get<std::vector<int32_t>>();
  };
  auto str = [&](const char *k, const std::string &usual) {
    return c.at(k).is_null() ? usual : c.at(k).get<std::string>();
  };
  r.ids = base ? ids("ids", base->ids) : c.at("ids").get<std::vector<int32_t>>();
  r.ids_special = ids("ids_special", base ? base->ids_special : r.ids);
  r.decode = str("decode", base ? base->decode : text);
  r.decode_skip = str("decode_skip", base ? base->decode_skip : text);
  return r;
}

std::string Differences(const Tokenizer &tok, const std::string &text, const Case &e) {
  std::string diff;
  auto ids = tok.Encode(text, /*add_special_tokens=*/false);
  auto sp = tok.Encode(text, /*add_special_tokens=*/true);
  if (!ids.ok() || !sp.ok())
    return "Encode failed: " + (ids.ok() ? sp : ids).status().message();
  if (*ids != e.ids)
    diff += "\n  ids:         want " + Describe(e.ids) + "\n               got  " + Describe(*ids);
  if (*sp != e.ids_special) {
    diff += "\n  ids_special: want " + Describe(e.ids_special) + "\n               got  " +
            Describe(*sp);
  }
  // Decodes start from HF's ids, so they test Decode on its own.
  const std::string d = tok.Decode(e.ids, /*skip_special_tokens=*/false);
  if (d != e.decode)
    diff += "\n  decode:      want " + Escape(e.decode) + "\n               got  " + Escape(d);
  const std::string ds = tok.Decode(e.ids_special, /*skip_special_tokens=*/true);
  if (ds != e.decode_skip) {
    diff +=
        "\n  decode_skip: want " + Escape(e.decode_skip) + "\n               got  " + Escape(ds);
  }
  return diff;
}

std::vector<std::string> Lines(const json &refs) {
  std::vector<std::string> lines = ReadCorpus();
  for (const json &l : refs.at("extra_lines"))
    lines.push_back(l.get<std::string>());
  return lines;
}

void ExpectEveryLineMatchesHf(const std::string &fixture) {
  const json refs = ReadTestJson("refs_" + fixture + ".json");
  const std::vector<std::string> lines = Lines(refs);
  std::vector<Case> base;
  for (const json &variant : refs.at("variants")) {
    const std::string name = fixture + "/" + variant.at("variant").get<std::string>();
    const json &cases = variant.at("cases");
    ASSERT_EQ(cases.size(), lines.size()) << name << ": refs are stale; rerun the generator";
    auto tok = Tokenizer::FromJson(PatchedFixture(refs.at("fixture"), variant.at("patch")));
    ASSERT_TRUE(tok.ok()) << name << ": " << tok.status().message();
    EXPECT_EQ((*tok)->vocab_size(), variant.at("vocab_size").get<int64_t>()) << name;
    const bool is_base = base.empty();
    size_t passed = 0;
    std::string first_failure;
    for (size_t i = 0; i < lines.size(); ++i) {
      const Case e = Resolve(cases[i], is_base ? nullptr : &base[i], lines[i]);
      if (is_base)
        base.push_back(e);
      const std::string diff = Differences(**tok, lines[i], e);
      if (diff.empty()) {
        ++passed;
      } else if (first_failure.empty()) {
        first_failure = "line " + std::to_string(i + 1) + " " + Escape(lines[i]) + diff;
      }
    }
    std::printf("[ tokenizer] %-36s %zu/%zu lines match HF\n", name.c_str(), passed, lines.size());
    EXPECT_EQ(passed, lines.size()) << name << ": first differing " << first_failure;
  }
}

namespace {

// The streamed text of `ids`, checking that no chunk ends inside a character.
std::string Stream(const Tokenizer &tok, const std::vector<int32_t> &ids, bool skip,
                   const std::string &where) {
  IncrementalDecoder stream(tok, skip);
  std::string text;
  for (int32_t id : ids) {
    const std::string chunk = stream.Add(id);
    EXPECT_TRUE(IsValidUtf8(chunk)) << where << ": chunk " << Escape(chunk);
    text += chunk;
  }
  return text + stream.Flush();
}

} // namespace

void ExpectStreamingMatchesDecode(const std::string &fixture, bool all_variants) {
  const json refs = ReadTestJson("refs_" + fixture + ".json");
  const std::vector<std::string> lines = Lines(refs);
  std::vector<Case> base;
  for (const json &variant : refs.at("variants")) {
    const std::string name = fixture + "/" + variant.at("variant").get<std::string>();
    auto tok = Tokenizer::FromJson(PatchedFixture(refs.at("fixture"), variant.at("patch")));
    ASSERT_TRUE(tok.ok()) << name << ": " << tok.status().message();
    const json &cases = variant.at("cases");
    ASSERT_EQ(cases.size(), lines.size()) << name;
    const bool is_base = base.empty();
    for (size_t i = 0; i < lines.size(); ++i) {
      const Case e = Resolve(cases[i], is_base ? nullptr : &base[i], lines[i]);
      if (is_base)
        base.push_back(e);
      for (bool skip : {false, true}) {
        const std::string where = name + " line " + std::to_string(i + 1);
        EXPECT_EQ(Stream(**tok, e.ids_special, skip, where), (*tok)->Decode(e.ids_special, skip))
            << where;
      }
    }
    if (variant.contains("decodes")) {
      size_t k = 0;
      for (const json &d : variant.at("decodes")) {
        const auto ids = d.at("ids").get<std::vector<int32_t>>();
        const std::string where = name + " random ids " + std::to_string(k++) + " " + Describe(ids);
        for (bool skip : {false, true}) {
          const std::string want = d.at(skip ? "decode_skip" : "decode").get<std::string>();
          EXPECT_EQ((*tok)->Decode(ids, skip), want) << where << " skip " << skip;
          EXPECT_EQ(Stream(**tok, ids, skip, where), want) << where << " streamed, skip " << skip;
        }
      }
    }
    if (!all_variants)
      break;
  }
}

} // namespace kiln::tokenizer::testing
