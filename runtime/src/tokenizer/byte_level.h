// GPT-2's byte-level alphabet: every byte maps to one printable character, so a
// BPE vocabulary of strings can cover arbitrary bytes and decode back exactly.
#pragma once

#include <string>
#include <string_view>

namespace kiln::tokenizer {

// Appends the byte-level characters (as UTF-8) of `bytes` to *out.
void ByteLevelEncode(std::string_view bytes, std::string *out);

// The bytes a token stands for, as HF's ByteLevel decoder reads it: each
// character maps back to its byte, but a token with any character outside the
// alphabet (an added token such as "hello world") stands for its own UTF-8.
std::string ByteLevelDecodeToken(std::string_view token);

// The byte that alphabet character `c` stands for, or -1 if `c` is not one.
int ByteLevelByte(char32_t c);

} // namespace kiln::tokenizer
