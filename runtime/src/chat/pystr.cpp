#include "chat/pystr.h"

#include <cctype>
#include <cstdint>

namespace kiln::chat {
namespace {

// Decodes the code point at s[i], setting len to its byte count; invalid
// bytes decode as themselves so text passes through unchanged.
uint32_t Decode(const std::string &s, size_t i, size_t &len) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (i + extra >= s.size()) extra = 0;
  uint32_t cp = extra == 0 ? c : (c & (0x3F >> extra));
  for (int k = 1; k <= extra; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) {
      len = 1;
      return c;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  len = static_cast<size_t>(extra) + 1;
  return cp;
}

// Python's str.isspace().
bool IsPySpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::pair<size_t, size_t>> Chars(const std::string &s) {
  std::vector<std::pair<size_t, size_t>> out;  // (offset, length)
  for (size_t i = 0; i < s.size();) {
    size_t len;
    Decode(s, i, len);
    out.emplace_back(i, len);
    i += len;
  }
  return out;
}

void Append(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and
// Cyrillic; other scripts pass through unchanged.
bool PairedExtA(uint32_t c) {
  return (c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
}
bool PairedExtAOdd(uint32_t c) { return (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E); }

uint32_t ToUpperCp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (PairedExtA(c) && (c & 1)) return c - 1;
  if (PairedExtAOdd(c) && !(c & 1)) return c - 1;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

uint32_t ToLowerCp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c == 0x178) return 0xFF;
  if (PairedExtA(c) && !(c & 1)) return c + 1;
  if (PairedExtAOdd(c) && (c & 1)) return c + 1;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool IsCased(uint32_t c) { return ToUpperCp(c) != c || ToLowerCp(c) != c || c == 0xDF; }

// Maps every code point; upper-casing sharp s gives "SS", as in Python.
std::string MapCase(const std::string &s, bool upper) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = Decode(s, i, len);
    if (len == 1 && cp >= 0x80) {
      out += s[i];  // an invalid byte passes through
    } else if (upper && cp == 0xDF) {
      out += "SS";
    } else {
      Append(upper ? ToUpperCp(cp) : ToLowerCp(cp), out);
    }
    i += len;
  }
  return out;
}

}  // namespace

std::string PyStrip(const std::string &s, const std::string *chars, bool left, bool right) {
  auto cs = Chars(s);
  std::vector<uint32_t> set;
  if (chars) {
    for (auto [o, l] : Chars(*chars)) {
      size_t len;
      set.push_back(Decode(*chars, o, len));
    }
  }
  auto strip = [&](size_t idx) {
    size_t len;
    uint32_t cp = Decode(s, cs[idx].first, len);
    if (!chars) return IsPySpace(cp);
    for (uint32_t x : set)
      if (x == cp) return true;
    return false;
  };
  size_t b = 0, e = cs.size();
  if (left)
    while (b < e && strip(b)) ++b;
  if (right)
    while (e > b && strip(e - 1)) --e;
  if (b == e) return "";
  size_t from = cs[b].first, to = cs[e - 1].first + cs[e - 1].second;
  return s.substr(from, to - from);
}

std::string PyUpper(std::string s) { return MapCase(s, true); }
std::string PyLower(std::string s) { return MapCase(s, false); }

std::string PyCapitalize(const std::string &s) {
  if (s.empty()) return s;
  size_t len;
  Decode(s, 0, len);
  return MapCase(s.substr(0, len), true) + MapCase(s.substr(len), false);
}

std::string PyTitle(const std::string &s) {
  std::string out;
  bool prevCased = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = Decode(s, i, len);
    std::string ch = s.substr(i, len);
    bool cased = IsCased(cp);
    out += cased ? MapCase(ch, !prevCased) : ch;
    prevCased = cased;
    i += len;
  }
  return out;
}

std::string JinjaTitle(const std::string &s) {
  std::string out;
  bool wordStart = true;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t c = Decode(s, i, len);
    std::string ch = s.substr(i, len);
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsPySpace(c);
    if (sep) {
      out += ch;
      wordStart = true;
    } else {
      out += MapCase(ch, wordStart);
      wordStart = false;
    }
    i += len;
  }
  return out;
}

std::vector<std::string> PySplit(const std::string &s, const std::string *sep, long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string::npos) break;
      out.push_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.push_back(s.substr(start));
    return out;
  }
  auto cs = Chars(s);
  auto space = [&](size_t i) {
    size_t len;
    return IsPySpace(Decode(s, cs[i].first, len));
  };
  size_t i = 0;
  while (i < cs.size()) {
    while (i < cs.size() && space(i)) ++i;
    if (i == cs.size()) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) == maxsplit) {
      // The rest, with its trailing whitespace stripped, is the last piece.
      std::string rest = s.substr(cs[i].first);
      out.push_back(PyStrip(rest, nullptr, false, true));
      return out;
    }
    size_t b = i;
    while (i < cs.size() && !space(i)) ++i;
    size_t from = cs[b].first, to = i < cs.size() ? cs[i].first : s.size();
    out.push_back(s.substr(from, to - from));
  }
  return out;
}

std::string PyReplace(const std::string &s, const std::string &from, const std::string &to, long count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every character
    auto cs = Chars(s);
    long n = 0;
    for (auto [o, l] : cs) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      out += s.substr(o, l);
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t start = 0;
  long n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start);
    out += to;
    start = at + from.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

}  // namespace kiln::chat
