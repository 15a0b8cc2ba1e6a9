#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// Printable Latin-1 bytes stand for themselves; the others (controls, space,
// DEL, NBSP, soft hyphen) take code points from U+0100 on, in byte order.
struct Alphabet {
  std::array<char32_t, 256> byte_to_char{};
  std::array<int, 0x180> char_to_byte{}; // every mapped char is below U+0180

  Alphabet() {
    char_to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      byte_to_char[b] = c;
      char_to_byte[c] = b;
    }
  }
};

const Alphabet &GetAlphabet() {
  static const Alphabet alphabet;
  return alphabet;
}

} // namespace

void ByteLevelEncode(std::string_view bytes, std::string *out) {
  const Alphabet &a = GetAlphabet();
  for (char c : bytes)
    AppendUtf8(a.byte_to_char[static_cast<uint8_t>(c)], out);
}

int ByteLevelByte(char32_t c) {
  const Alphabet &a = GetAlphabet();
  return c < a.char_to_byte.size() ? a.char_to_byte[c] : -1;
}

std::string ByteLevelDecodeToken(std::string_view token) {
  std::string bytes;
  size_t i = 0;
  while (i < token.size()) {
    const char32_t c = NextCodepoint(token, &i);
    const int b = ByteLevelByte(c);
    if (b < 0)
      return std::string(token);
    bytes.push_back(static_cast<char>(b));
  }
  return bytes;
}

} // namespace kiln::tokenizer
