#include "tokenizer/utf8.h"

#include <cstdint>

#include "tokenizer/regex_tables.h"

namespace kiln::tokenizer {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD"; // U+FFFD

// Length a lead byte announces, or 0 if it can never start a character.
size_t SequenceLength(uint8_t lead) {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 0;
}

// The allowed range of the second byte depends on the lead byte: this is what
// rules out overlongs, surrogates and code points past U+10FFFF.
bool SecondByteOk(uint8_t lead, uint8_t b) {
  switch (lead) {
  case 0xE0:
    return b >= 0xA0 && b <= 0xBF;
  case 0xED:
    return b >= 0x80 && b <= 0x9F;
  case 0xF0:
    return b >= 0x90 && b <= 0xBF;
  case 0xF4:
    return b >= 0x80 && b <= 0x8F;
  default:
    return b >= 0x80 && b <= 0xBF;
  }
}

// How many bytes at s[i] form a valid prefix of a character: the full length if
// the character is complete and valid, fewer if it is cut off by the end of `s`
// (*truncated set) or broken by a bad byte (*truncated clear).
size_t ValidPrefix(std::string_view s, size_t i, bool *truncated) {
  *truncated = false;
  const auto lead = static_cast<uint8_t>(s[i]);
  const size_t len = SequenceLength(lead);
  if (len <= 1)
    return len;
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *truncated = true;
      return k;
    }
    const auto b = static_cast<uint8_t>(s[i + k]);
    const bool ok = k == 1 ? SecondByteOk(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok)
      return k;
  }
  return len;
}

} // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    bool truncated;
    const size_t n = ValidPrefix(s, i, &truncated);
    if (n == 0 || truncated || n != SequenceLength(static_cast<uint8_t>(s[i])))
      return false;
    i += n;
  }
  return true;
}

size_t CodepointLength(std::string_view s, size_t i) {
  return SequenceLength(static_cast<uint8_t>(s[i]));
}

char32_t NextCodepoint(std::string_view s, size_t *i) {
  const auto lead = static_cast<uint8_t>(s[*i]);
  const size_t len = SequenceLength(lead);
  if (len <= 1) {
    ++*i;
    return lead;
  }
  char32_t cp = lead & (0x7F >> len);
  for (size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<uint8_t>(s[*i + k]) & 0x3F);
  *i += len;
  return cp;
}

void AppendUtf8(char32_t cp, std::string *out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t DecodeUtf8Lossy(std::string_view bytes, bool final, std::string *out) {
  size_t i = 0;
  while (i < bytes.size()) {
    bool truncated;
    const size_t n = ValidPrefix(bytes, i, &truncated);
    if (n == 0) { // a byte that starts nothing
      out->append(kReplacement);
      ++i;
    } else if (truncated) {
      if (!final)
        return i;
      out->append(kReplacement);
      i += n;
    } else if (n == SequenceLength(static_cast<uint8_t>(bytes[i]))) {
      out->append(bytes.substr(i, n));
      i += n;
    } else { // a valid prefix broken by a bad byte: that byte starts afresh
      out->append(kReplacement);
      i += n;
    }
  }
  return i;
}

bool IsRustWhitespace(char32_t c) {
  for (size_t i = 0; i < kWhitespaceCount; ++i) {
    if (c >= kWhitespace[i].first && c <= kWhitespace[i].last)
      return true;
  }
  return false;
}

} // namespace kiln::tokenizer
