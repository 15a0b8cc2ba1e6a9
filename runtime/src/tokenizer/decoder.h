// The tokenizer.json "decoder": how the tokens of a sequence of ids are joined
// back into text. Each token's contribution depends only on the token and on
// whether a token came before it, so decoding can stream.
#pragma once

#include <string>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class Decoder {
public:
  // Accepts null (tokens joined by spaces), ByteLevel, and WordPiece.
  Status Parse(const Json *config);
  bool byte_level() const { return kind_ == Kind::kByteLevel; }
  // Appends what `token` (already mapped back to bytes for ByteLevel)
  // contributes; `first` says no token was emitted before it.
  void Append(const std::string &token, bool first, std::string *out) const;

private:
  enum class Kind { kJoinWithSpaces, kByteLevel, kWordPiece };
  Kind kind_ = Kind::kJoinWithSpaces;
  std::string prefix_ = "##"; // WordPiece: marks a token that continues a word
  bool cleanup_ = true;       // WordPiece: undo the spaces BERT puts before punctuation
};

} // namespace kiln::tokenizer
