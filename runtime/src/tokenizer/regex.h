// Regular expressions as HF tokenizers runs them (Oniguruma, Ruby syntax),
// executed with PCRE2. Patterns are translated first so that \s, \S, \p{L} and
// \p{N} match exactly the code points Oniguruma's newer Unicode tables match;
// the other constructs used by tokenizer patterns ((?i:...), (?!...), classes,
// counted repeats) behave the same in both engines. Not translated: Ruby-only
// escapes such as \h (hex digit in Ruby, horizontal space in PCRE2).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/status.h"

namespace kiln::tokenizer {

// Rewrites an Oniguruma pattern into the PCRE2 pattern that matches the same.
std::string TranslateOnigurumaPattern(std::string_view pattern);

class Regex {
public:
  // `pattern` in Oniguruma syntax, or a literal string when `literal` is set.
  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern, bool literal = false);
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  // Byte ranges of the successive matches in `text` (valid UTF-8), with
  // Oniguruma's find_iter rule for empty matches. Fails only when PCRE2 runs out
  // of its match limits on hostile input.
  Status FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>> *matches) const;

private:
  explicit Regex(void *code) : code_(code) {}
  void *code_; // pcre2_code_8, kept out of this header
};

} // namespace kiln::tokenizer
