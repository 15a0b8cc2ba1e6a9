// UTF-8 helpers shared by the tokenizer's stages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::tokenizer {

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Decodes the code point at s[*i] and advances *i past it. `s` must be valid UTF-8.
char32_t NextCodepoint(std::string_view s, size_t *i);

// Byte length of the character starting at s[i] (valid UTF-8).
size_t CodepointLength(std::string_view s, size_t i);

void AppendUtf8(char32_t cp, std::string *out);

// Rust's char::is_whitespace (Unicode White_Space): what HF's lstrip/rstrip,
// Strip and WhitespaceSplit treat as whitespace.
bool IsRustWhitespace(char32_t c);

// Rust's String::from_utf8_lossy, resumable: appends the text of `bytes` to *out,
// with one U+FFFD per maximal invalid subpart, and returns how many bytes it used.
// When `final` is false, an incomplete character at the end is left unconsumed so
// that the next call can finish it; when true, it becomes U+FFFD.
size_t DecodeUtf8Lossy(std::string_view bytes, bool final, std::string *out);

} // namespace kiln::tokenizer
