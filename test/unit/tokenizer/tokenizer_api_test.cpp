// The Tokenizer API beyond the corpus: lookups, errors on bad input, and the
// streaming decoder's handling of split characters.
#include <gtest/gtest.h>

#include <thread>

#include "kiln/tokenizer.h"
#include "test_data.h"
#include "tokenizer/utf8.h"

namespace kiln {
namespace {

using nlohmann::json;

std::unique_ptr<Tokenizer> Load(const std::string &fixture) {
  auto tok = Tokenizer::FromJson(tokenizer::testing::ReadTestFile(fixture));
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(tok.value()) : nullptr;
}

// A tiny byte-level BPE written by hand, for error cases.
json Tiny() {
  return json::parse(R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3}, "merges": ["a b"]},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "added_tokens": [{"id": 4, "content": "<s>", "special": true}]
  })");
}

Status LoadStatus(const json &config) { return Tokenizer::FromJson(config.dump()).status(); }

TEST(TokenizerApi, LookupsAgreeWithTheFixture) {
  auto tok = Load("llama3.json");
  ASSERT_NE(tok, nullptr);
  const int32_t bos = tok->TokenToId("<|begin_of_text|>");
  ASSERT_GE(bos, 0);
  EXPECT_TRUE(tok->IsSpecial(bos));
  EXPECT_EQ(tok->IdToToken(bos), "<|begin_of_text|>");
  EXPECT_EQ(tok->vocab_size(), bos + 8); // eight specials follow the vocabulary
  const int32_t the = tok->TokenToId("Ġthe");
  ASSERT_GE(the, 0);
  EXPECT_FALSE(tok->IsSpecial(the));
  EXPECT_EQ(tok->IdToToken(the), "Ġthe");
  EXPECT_EQ(tok->TokenToId("no such token"), -1);
  EXPECT_EQ(tok->IdToToken(-1), "");
  EXPECT_EQ(tok->IdToToken(1 << 30), "");
  EXPECT_FALSE(tok->IsSpecial(-5));
}

TEST(TokenizerApi, BosOnlyWithAddSpecialTokens) {
  auto tok = Load("llama3.json");
  ASSERT_NE(tok, nullptr);
  const int32_t bos = tok->TokenToId("<|begin_of_text|>");
  auto with = tok->Encode("hello", true), without = tok->Encode("hello", false);
  ASSERT_TRUE(with.ok() && without.ok());
  ASSERT_EQ(with->size(), without->size() + 1);
  EXPECT_EQ(with->front(), bos);
  auto empty = tok->Encode("", true);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, std::vector<int32_t>{bos});
}

TEST(TokenizerApi, RejectsInvalidUtf8Input) {
  auto tok = Load("gpt2.json");
  ASSERT_NE(tok, nullptr);
  for (const char *bad : {"\xFF", "a\xC3", "\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80"}) {
    auto r = tok->Encode(bad, false);
    EXPECT_FALSE(r.ok()) << tokenizer::testing::Escape(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(TokenizerApi, DecodeDropsUnknownIdsAndReplacesBrokenUtf8) {
  auto tok = Load("gpt2.json");
  ASSERT_NE(tok, nullptr);
  auto ids = tok->Encode("é!", false);
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 2u);
  std::vector<int32_t> with_junk = {-7, 1 << 28};
  with_junk.insert(with_junk.end(), ids->begin(), ids->end());
  EXPECT_EQ(tok->Decode(with_junk, false), "é!");
  // "é" is two bytes; without its first byte the second is a lone continuation.
  const std::vector<int32_t> byte_ids = {tok->TokenToId("Ã"), tok->TokenToId("©")};
  ASSERT_GE(byte_ids[0], 0);
  ASSERT_GE(byte_ids[1], 0);
  EXPECT_EQ(tok->Decode(byte_ids, false), "é");
  EXPECT_EQ(tok->Decode({byte_ids[1]}, false), "\xEF\xBF\xBD");
  EXPECT_EQ(tok->Decode({byte_ids[0]}, false), "\xEF\xBF\xBD");
}

TEST(IncrementalDecoder, HoldsPartialCharactersUntilComplete) {
  auto tok = Load("gpt2.json");
  ASSERT_NE(tok, nullptr);
  // U+1F600 as four single-byte tokens: F0 9F 98 80.
  const std::vector<int32_t> ids = {tok->TokenToId("ð"), tok->TokenToId("Ł"), tok->TokenToId("ĺ"),
                                    tok->TokenToId("Ģ")};
  for (int32_t id : ids)
    ASSERT_GE(id, 0);
  IncrementalDecoder stream(*tok, false);
  EXPECT_EQ(stream.Add(ids[0]), "");
  EXPECT_EQ(stream.Add(ids[1]), "");
  EXPECT_EQ(stream.Add(ids[2]), "");
  EXPECT_EQ(stream.Add(ids[3]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(stream.Flush(), "");
  // A character cut off by the end of the stream becomes one U+FFFD.
  IncrementalDecoder cut(*tok, false);
  EXPECT_EQ(cut.Add(ids[0]), "");
  EXPECT_EQ(cut.Add(ids[1]), "");
  EXPECT_EQ(cut.Flush(), "\xEF\xBF\xBD");
  // A broken sequence is replaced as soon as it is known to be broken.
  IncrementalDecoder broken(*tok, false);
  EXPECT_EQ(broken.Add(ids[0]), "");
  EXPECT_EQ(broken.Add(tok->TokenToId("A")), "\xEF\xBF\xBD"
                                             "A");
}

// ByteLevel after Fuse maps the whole text, or keeps all of it as it is when
// any character is outside its alphabet (HF's rule, per token, on the one
// fused token): with a token that holds a space, the stream must wait for the
// end. Expected texts are HF tokenizers 0.23's decodes of the same ids.
TEST(IncrementalDecoder, ByteLevelAfterFuseWaitsWhenATokenLeavesTheAlphabet) {
  const json config = {
      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"\xC4\xA0" "b", 1}, {"c", 2}}},
                 {"merges", json::array()}}},
      {"added_tokens", {{{"id", 3}, {"content", "x y"}, {"special", false}, {"normalized", false}}}},
      {"decoder", {{"type", "Sequence"},
                   {"decoders", {{{"type", "Fuse"}}, {{"type", "ByteLevel"}}}}}}};
  auto tok = Tokenizer::FromJson(config.dump()); // "\xC4\xA0" is U+0120, byte-level's space
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const std::pair<std::vector<int32_t>, std::string> cases[] = {
      {{0, 1}, "a b"}, {{0, 3}, "ax y"}, {{1, 3}, "\xC4\xA0" "bx y"}, {{1, 2}, " bc"}, {{3}, "x y"}};
  for (const auto &[ids, want] : cases) {
    EXPECT_EQ((*tok)->Decode(ids, false), want);
    IncrementalDecoder stream(**tok, false);
    std::string streamed, first;
    for (int32_t id : ids)
      streamed += stream.Add(id);
    first = streamed;
    streamed += stream.Flush();
    EXPECT_EQ(streamed, want);
    EXPECT_EQ(first, "") << "a later token could still keep the text raw";
  }
}

TEST(IncrementalDecoder, SkipsSpecialTokensWhenAsked) {
  auto tok = Load("qwen2.json");
  ASSERT_NE(tok, nullptr);
  auto ids = tok->Encode("<|im_start|>hi<|im_end|>", false);
  ASSERT_TRUE(ids.ok());
  std::string kept, skipped;
  IncrementalDecoder keep(*tok, false), skip(*tok, true);
  for (int32_t id : *ids) {
    kept += keep.Add(id);
    skipped += skip.Add(id);
  }
  EXPECT_EQ(kept + keep.Flush(), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(skipped + skip.Flush(), "hi");
}

// Encode shares the word cache between threads; results must not depend on it.
TEST(TokenizerApi, ConcurrentEncodesAgree) {
  auto tok = Load("qwen2.json");
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> corpus = tokenizer::testing::ReadCorpus();
  std::vector<std::vector<int32_t>> want;
  for (const std::string &line : corpus)
    want.push_back(tok->Encode(line, true).value());
  auto fresh = Load("qwen2.json"); // empty cache, filled concurrently
  ASSERT_NE(fresh, nullptr);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < corpus.size(); ++k) {
        const size_t i = (k * 7 + t * 131) % corpus.size(); // a different order per thread
        auto ids = fresh->Encode(corpus[i], true);
        mismatches[t] += !ids.ok() || *ids != want[i];
      }
    });
  }
  for (std::thread &th : threads)
    th.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(TokenizerErrors, MalformedJson) {
  for (const char *doc : {"", "{", "[1, 2]", "{\"model\": 3}", "\"text\"", "{\"a\": \"\xFF\"}"}) {
    auto r = Tokenizer::FromJson(doc);
    EXPECT_FALSE(r.ok()) << doc;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
        << doc << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("tokenizer.json"), std::string::npos);
  }
}

TEST(TokenizerErrors, TinyTokenizerLoadsAndEncodes) {
  auto tok = Tokenizer::FromJson(Tiny().dump());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto ids = (*tok)->Encode("ab<s>ba", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{2, 4, 1, 0}));
}

TEST(TokenizerErrors, UnsupportedComponentsSayWhich) {
  struct Case {
    const char *path;
    json value;
    const char *needle;
  };
  const Case cases[] = {
      {"/model/type", "WordLevel", "WordLevel"},
      {"/model/dropout", 0.1, "dropout"},
      {"/model/continuing_subword_prefix", "##", "continuing_subword_prefix"},
      {"/normalizer", json{{"type", "NFKC"}}, "NFKC"},
      {"/normalizer", json{{"type", "Precompiled"}}, "Precompiled"},
      {"/pre_tokenizer", json{{"type", "Whitespace"}}, "Whitespace"},
      {"/decoder", json{{"type", "CTC"}}, "CTC"},
      // After Fuse the text is one token: a step that needs tokens is refused.
      {"/decoder", json{{"type", "Sequence"}, {"decoders", {{{"type", "Fuse"}},
                                                            {{"type", "ByteFallback"}}}}},
       "ByteFallback' after Fuse"},
  };
  for (const Case &c : cases) {
    json config = Tiny();
    config[json::json_pointer(c.path)] = c.value;
    const Status s = LoadStatus(config);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << c.path << ": " << s.message();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

TEST(TokenizerErrors, BadFieldsSayWhere) {
  struct Case {
    const char *path;
    json value;
    const char *needle;
  };
  const Case cases[] = {
      {"/model/merges", json::array({"a c"}), "model.merges[0]"},
      {"/model/merges", json::array({"ab"}), "model.merges[0]"},
      {"/model/merges", json::array({json::array({"a"})}), "model.merges[0]"},
      {"/model/vocab/a", -1, "model.vocab"},
      {"/model/vocab/a", "zero", "model.vocab"},
      {"/model/unk_token", "<unk>", "unk_token"},
      {"/pre_tokenizer", json::parse(R"({"type": "Split", "pattern": {"Regex": "(a"},
                                         "behavior": "Isolated"})"),
       "does not compile"},
      {"/pre_tokenizer", json::parse(R"({"type": "Split", "pattern": {"Regex": "a"},
                                         "behavior": "Sideways"})"),
       "Sideways"},
      {"/added_tokens/0/id", "four", "added_tokens[0].id"},
      {"/added_tokens/0/content", "", "added_tokens[0].content"},
      {"/post_processor", json::parse(R"({"type": "TemplateProcessing",
          "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A"}}],
          "special_tokens": {}})"),
       "<x>"},
      // Ids the template adds must be tokens (a fuzzer found encodings with
      // an id past the vocabulary when they were not checked).
      {"/post_processor", json::parse(R"({"type": "TemplateProcessing",
          "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A"}}],
          "special_tokens": {"<x>": {"id": "<x>", "ids": [4000], "tokens": ["<x>"]}}})"),
       "adds id 4000"},
      {"/post_processor", json::parse(R"({"type": "BertProcessing",
          "cls": ["[CLS]", 0], "sep": ["[SEP]", 77]})"),
       "adds id 77"},
  };
  for (const Case &c : cases) {
    json config = Tiny();
    config[json::json_pointer(c.path)] = c.value;
    const Status s = LoadStatus(config);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.path << ": " << s.message();
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

TEST(TokenizerErrors, UnknownCharactersUseUnkOrVanish) {
  json config = Tiny();
  config["pre_tokenizer"] = nullptr;
  config["decoder"] = nullptr;
  auto plain = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto ids = (*plain)->Encode("axxb", false); // no unk_token: HF drops "x"
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{2}));
  config["model"]["vocab"]["<unk>"] = 5;
  config["model"]["unk_token"] = "<unk>";
  auto unk = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(unk.ok()) << unk.status().message();
  ids = (*unk)->Encode("axxb", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 5, 5, 1}));
  config["model"]["fuse_unk"] = true;
  auto fused = Tokenizer::FromJson(config.dump());
  ASSERT_TRUE(fused.ok());
  ids = (*fused)->Encode("axxb", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 5, 1}));
  // Without a decoder HF joins tokens with spaces.
  EXPECT_EQ((*fused)->Decode({0, 5, 1}, false), "a <unk> b");
}

} // namespace
} // namespace kiln
