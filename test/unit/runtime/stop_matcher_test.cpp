// Stop strings over streamed text: StopMatcher on hand-made pieces (inside
// one piece, across pieces, at the start, self-overlapping prefixes, several
// stop strings, multibyte text, nothing lost at the end), then StopChecker
// with the real incremental decoder of a byte-level BPE tokenizer.
#include "kiln/request.h"
#include "kiln/stop_matcher.h"
#include "kiln/tokenizer.h"
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace kiln {
namespace {

// Feeds `pieces` and returns every chunk released, the Flush last.
std::vector<std::string> Stream(StopMatcher &m, const std::vector<std::string> &pieces) {
  std::vector<std::string> out;
  for (const std::string &p : pieces)
    out.push_back(m.Feed(p));
  out.push_back(m.Flush());
  return out;
}

std::string Join(const std::vector<std::string> &chunks) {
  std::string s;
  for (const std::string &c : chunks)
    s += c;
  return s;
}

TEST(StopMatcher, InsideOnePiece) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Feed("abcENDxyz"), "abc");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), 0);
  EXPECT_EQ(m.Feed("more"), ""); // everything after the stop is dropped
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcher, AcrossPiecesNothingOfTheStopIsShown) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(Stream(m, {"xS", "T", "O", "Pz"}), (std::vector<std::string>{"x", "", "", "", ""}));
  EXPECT_TRUE(m.stopped());
  // A prefix that turns out not to be a stop is released as soon as it fails.
  StopMatcher n({"STOP"});
  EXPECT_EQ(Stream(n, {"xS", "TA", "y"}), (std::vector<std::string>{"x", "STA", "y", ""}));
  EXPECT_FALSE(n.stopped());
}

TEST(StopMatcher, AtTheVeryStart) {
  StopMatcher whole({"STOP"});
  EXPECT_EQ(whole.Feed("STOP and more"), "");
  EXPECT_TRUE(whole.stopped());
  StopMatcher split({"STOP"});
  EXPECT_EQ(Join(Stream(split, {"S", "TOP"})), "");
  EXPECT_TRUE(split.stopped());
}

TEST(StopMatcher, SelfOverlappingPrefixes) {
  // "aaab": the first "aa" is not the start of "aab", the second is.
  StopMatcher m({"aab"});
  EXPECT_EQ(Stream(m, {"a", "a", "a", "b"}), (std::vector<std::string>{"", "", "a", "", ""}));
  EXPECT_TRUE(m.stopped());
  // "ab" and "aab" both complete in "xaab": the earlier start wins.
  StopMatcher both({"ab", "aab"});
  EXPECT_EQ(both.Feed("xaab"), "x");
  EXPECT_EQ(both.matched(), 1);
  StopMatcher streamed({"ab", "aab"});
  EXPECT_EQ(Join(Stream(streamed, {"xa", "a", "b"})), "x");
  EXPECT_EQ(streamed.matched(), 1);
}

TEST(StopMatcher, SeveralStopStrings) {
  StopMatcher m({"\n\n", "User:"});
  EXPECT_EQ(m.Feed("Hello\n"), "Hello"); // "\n" may begin "\n\n"
  EXPECT_EQ(m.held(), 1u);
  EXPECT_EQ(m.Feed("Use"), "\n"); // "\nU" cannot be "\n\n", but "Use" may begin "User:"
  EXPECT_EQ(m.held(), 3u);
  EXPECT_EQ(m.Feed("r: hi"), "");
  EXPECT_EQ(m.matched(), 1);
}

TEST(StopMatcher, MultibyteText) {
  StopMatcher m({"日本", "😀!"});
  EXPECT_EQ(m.Feed("こんにちは日"), "こんにちは");
  EXPECT_EQ(m.Feed("曜"), "日曜"); // "日曜" is not "日本"
  EXPECT_EQ(m.Feed("a😀"), "a");
  EXPECT_EQ(m.Feed("?"), "😀?");
  EXPECT_EQ(m.Feed("日"), "");
  EXPECT_EQ(m.Feed("本語"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), 0);
}

TEST(StopMatcher, NothingIsLostWithoutAStop) {
  StopMatcher m({"STOP", "aab"});
  EXPECT_EQ(Stream(m, {"ab", "S", "aa"}), (std::vector<std::string>{"ab", "", "S", "aa"}));
  StopMatcher none({});
  EXPECT_EQ(Stream(none, {"x", "", "y"}), (std::vector<std::string>{"x", "", "y", ""}));
  StopMatcher empty({""}); // ignored, not a stop at position 0
  EXPECT_EQ(empty.Feed("abc"), "abc");
}

TEST(StopMatcher, AnySplitGivesTheTextBeforeTheFirstStop) {
  std::mt19937 gen(5);
  const std::string stop = "abab"; // self-overlapping
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    for (int i = 0; i < 12; ++i)
      text += "ab"[gen() % 2];
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      size_t len = std::min<size_t>(text.size() - at, gen() % 4);
      pieces.push_back(text.substr(at, len));
      at += len;
    }
    StopMatcher m({stop});
    std::vector<std::string> chunks = Stream(m, pieces);
    size_t first = text.find(stop);
    ASSERT_EQ(Join(chunks), text.substr(0, first)) << text;
    ASSERT_EQ(m.stopped(), first != std::string::npos);
  }
}

std::unique_ptr<Tokenizer> Gpt2() {
  std::ifstream in(std::string(KILN_TOKENIZER_TESTDATA) + "/gpt2.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto tok = Tokenizer::FromJson(ss.str());
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

struct Checked {
  std::vector<std::string> chunks; // released per token, then the Flush
  FinishReason reason = FinishReason::kLength;
  bool finished = false;
};

// Runs `text`'s tokens through a StopChecker until it finishes.
Checked Check(const Tokenizer &tok, const std::string &text, const RequestParams &p) {
  Checked r;
  auto ids = tok.Encode(text, false);
  auto c = StopChecker::Create(p, {2000}, &tok);
  EXPECT_TRUE(ids.ok() && c.ok());
  if (!ids.ok() || !c.ok())
    return r;
  for (int32_t id : *ids) {
    r.chunks.push_back((*c)->Append(id));
    if ((*c)->finished())
      break;
  }
  r.chunks.push_back((*c)->Flush());
  r.finished = (*c)->finished();
  r.reason = (*c)->finish_reason();
  return r;
}

TEST(StopChecker, StopStringsOverTheIncrementalDecoder) {
  auto tok = Gpt2();
  ASSERT_TRUE(tok);
  const std::string text = "Hello wörld, 日本語 and the return of 😀 here";
  RequestParams p;
  p.max_new_tokens = 1000;
  // No stop: the stream is the whole text, in valid UTF-8 pieces.
  Checked r = Check(*tok, text, p);
  EXPECT_EQ(Join(r.chunks), text);
  EXPECT_FALSE(r.finished);
  for (const std::string &c : r.chunks)
    EXPECT_TRUE(tokenizer::IsValidUtf8(c)) << c;

  // Stops that span several tokens, some inside multibyte characters' bytes.
  for (const std::string &stop : {std::string("本語"), std::string("e return"), std::string("😀"),
                                  std::string("Hello"), std::string("here")}) {
    p.stop = {"zzz", stop};
    r = Check(*tok, text, p);
    EXPECT_EQ(Join(r.chunks), text.substr(0, text.find(stop))) << stop;
    EXPECT_TRUE(r.finished) << stop;
    EXPECT_EQ(r.reason, FinishReason::kStopString) << stop;
    for (const std::string &chunk : r.chunks)
      EXPECT_TRUE(tokenizer::IsValidUtf8(chunk)) << stop;
  }
}

TEST(StopChecker, TextEndsCleanlyAtEosLengthAndMinTokens) {
  auto tok = Gpt2();
  ASSERT_TRUE(tok);
  RequestParams p;
  p.stop = {"STOP"};
  auto c = StopChecker::Create(p, {2000}, tok.get());
  ASSERT_TRUE(c.ok());
  auto ids = tok->Encode("ab ST", false);
  std::string out;
  for (int32_t id : *ids)
    out += (*c)->Append(id);
  EXPECT_EQ(out, "ab ");     // "ST" may begin "STOP"
  out += (*c)->Append(2000); // EOS: its text is not shown, what was held is
  EXPECT_EQ(out, "ab ST");
  EXPECT_EQ((*c)->finish_reason(), FinishReason::kEos);
  EXPECT_EQ((*c)->Flush(), "");

  // The length limit also releases what was held.
  p.max_new_tokens = static_cast<int>(ids->size());
  c = StopChecker::Create(p, {2000}, tok.get());
  out.clear();
  for (int32_t id : *ids)
    out += (*c)->Append(id);
  EXPECT_EQ(out, "ab ST");
  EXPECT_EQ((*c)->finish_reason(), FinishReason::kLength);

  // Before min_new_tokens a stop string does not count.
  auto stop_ids = tok->Encode("STOP then STOP", false);
  p.max_new_tokens = 100;
  p.min_new_tokens = 2;
  c = StopChecker::Create(p, {2000}, tok.get());
  out.clear();
  for (int32_t id : *stop_ids)
    if (!(*c)->finished())
      out += (*c)->Append(id);
  EXPECT_EQ(out, "STOP then ");
  EXPECT_EQ((*c)->finish_reason(), FinishReason::kStopString);
}

} // namespace
} // namespace kiln
