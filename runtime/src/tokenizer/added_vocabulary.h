// The tokenizer.json "added_tokens": tokens (special or not) that are cut out
// of the text before normalization and pre-tokenization, as HF's
// AddedVocabulary does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class Normalizer;

struct AddedToken {
  int32_t id = -1;
  std::string content;
  // What HF's id_to_token (and so its decode) gives for the id: the content,
  // normalized when `normalized` (a Prepend("▁") normalizer makes "café"
  // "▁café").
  std::string token;
  bool single_word = false; // match only where not inside a word
  bool lstrip = false;      // swallow whitespace on the left
  bool rstrip = false;      // swallow whitespace on the right
  bool normalized = true;   // match in normalized text (else in the raw text)
  bool special = false;
};

// A piece of text, or an added token (id >= 0) covering [begin, end).
struct Segment {
  int32_t id;
  size_t begin, end;
};

class AddedVocabulary {
public:
  Status Parse(const Json *added_tokens, const Normalizer &normalizer);

  // Splits `text` into added-token matches and the text between them, using the
  // tokens matched before normalization (normalized == false) or after it.
  void Split(std::string_view text, bool normalized, std::vector<Segment> *out) const;

  const AddedToken *FindById(int32_t id) const;
  int32_t FindByContent(std::string_view content) const; // -1 if absent
  const std::vector<AddedToken> &tokens() const { return tokens_; }

private:
  // A byte trie of the patterns of one matching pass.
  struct Trie {
    std::vector<std::unordered_map<unsigned char, int>> next{1};
    std::vector<int> token{-1}; // index into tokens_ of a pattern ending here
    bool first_byte[256] = {};
    void Insert(const std::string &pattern, int token_index);
    // The longest pattern starting at text[pos]: its token index and length.
    bool LongestAt(std::string_view text, size_t pos, int *token_index, size_t *len) const;
  };
  bool Accept(const AddedToken &t, std::string_view text, size_t *begin, size_t *end,
              size_t covered) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, int32_t> by_content_;
  Trie raw_, normalized_;
};

} // namespace kiln::tokenizer
