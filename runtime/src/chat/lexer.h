// Splits a template into text and tag tokens, with Jinja's whitespace
// control applied as transformers configures it (trim_blocks and
// lstrip_blocks on, one trailing newline dropped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/status.h"

namespace kiln::chat {

enum class Tok {
  kText,        // template text between tags
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value is the unescaped string
  kInt,
  kFloat,
  kOp,          // operators and punctuation
  kEof,
};

struct Token {
  Tok type;
  std::string value;
  int line = 1, col = 1;
};

// Position "line:col" for messages.
std::string Where(int line, int col);

StatusOr<std::vector<Token>> Lex(std::string_view source);

}  // namespace kiln::chat
