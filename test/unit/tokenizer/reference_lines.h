// The reference layout that make_wordpiece_refs.py and
// make_sentencepiece_refs.py write: the corpus plus the file's extra lines,
// and per variant (a patch of the fixture) HF's ids and decodes of each line,
// plus, in the SentencePiece files, HF's decodes of random id sequences.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln::tokenizer::testing {

struct Case {
  std::vector<int32_t> ids, ids_special;
  std::string decode, decode_skip;
};

// The generator's nulls: in the base variant, ids_special = ids and decodes =
// the text; in the others, the base variant's value.
Case Resolve(const nlohmann::json &c, const Case *base, const std::string &text);

// Empty if kiln agrees with HF on every field of the line, else what differs.
std::string Differences(const Tokenizer &tok, const std::string &text, const Case &e);

// The corpus followed by the refs file's extra_lines.
std::vector<std::string> Lines(const nlohmann::json &refs);

// Every variant of refs_<fixture>.json: every line's ids and decodes equal
// HF's (a failure names the first differing line per variant).
void ExpectEveryLineMatchesHf(const std::string &fixture);

// Every variant (or only the first): the IncrementalDecoder, fed one id at a
// time, gives Decode's text for every line, and for each random sequence of
// the variant's "decodes" both give HF's text.
void ExpectStreamingMatchesDecode(const std::string &fixture, bool all_variants);

} // namespace kiln::tokenizer::testing
