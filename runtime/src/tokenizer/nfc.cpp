#include "tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer/nfc_tables.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// Hangul syllables decompose and compose arithmetically (Unicode ch. 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t CombiningClass(char32_t cp) {
  if (cp < 0x300)
    return 0;
  const CccRange *end = kCccRanges + kCccRangeCount;
  const CccRange *it = std::upper_bound(kCccRanges, end, cp,
                                        [](char32_t c, const CccRange &r) { return c < r.first; });
  if (it == kCccRanges)
    return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

const Decomposition *FindDecomposition(char32_t cp) {
  const Decomposition *end = kDecompositions + kDecompositionCount;
  const Decomposition *it = std::lower_bound(
      kDecompositions, end, cp, [](const Decomposition &d, char32_t c) { return d.cp < c; });
  return it != end && it->cp == cp ? it : nullptr;
}

void Decompose(char32_t cp, std::vector<char32_t> *out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0)
      out->push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition *d = cp >= 0xC0 ? FindDecomposition(cp) : nullptr;
  if (d == nullptr) {
    out->push_back(cp);
    return;
  }
  Decompose(d->first, out);
  if (d->second != 0)
    Decompose(d->second, out);
}

uint64_t PairKey(char32_t a, char32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

const std::unordered_map<uint64_t, char32_t> &Compositions() {
  static const auto *map = [] {
    auto *m = new std::unordered_map<uint64_t, char32_t>();
    for (size_t i = 0; i < kDecompositionCount; ++i) {
      const Decomposition &d = kDecompositions[i];
      if (d.composes)
        (*m)[PairKey(d.first, d.second)] = d.cp;
    }
    return m;
  }();
  return *map;
}

// The primary composite of a + b, or 0.
char32_t Compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto &map = Compositions();
  const auto it = map.find(PairKey(a, b));
  return it == map.end() ? 0 : it->second;
}

// Stable sort of each run of nonzero combining classes.
void ReorderMarks(std::vector<char32_t> *cps) {
  std::vector<char32_t> &v = *cps;
  size_t i = 0;
  while (i < v.size()) {
    if (CombiningClass(v[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < v.size() && CombiningClass(v[j]) != 0)
      ++j;
    std::stable_sort(v.begin() + i, v.begin() + j,
                     [](char32_t a, char32_t b) { return CombiningClass(a) < CombiningClass(b); });
    i = j;
  }
}

// Canonical composition: each character joins the last starter unless a
// character of equal or higher class (or a starter) stands between them.
void ComposeAll(std::vector<char32_t> *cps) {
  std::vector<char32_t> &v = *cps;
  if (v.empty())
    return;
  size_t starter = 0;
  int last_class = CombiningClass(v[0]) == 0 ? 0 : 256; // 256: nothing to compose with
  size_t out = 1;
  for (size_t i = 1; i < v.size(); ++i) {
    const char32_t c = v[i];
    const int klass = CombiningClass(c);
    const char32_t composite = Compose(v[starter], c);
    if (composite != 0 && (last_class < klass || last_class == 0)) {
      v[starter] = composite;
      continue;
    }
    if (klass == 0)
      starter = out;
    last_class = klass;
    v[out++] = c;
  }
  v.resize(out);
}

// Text made only of code points below U+0300 is already NFC: nothing there
// decomposes, carries a combining class, or composes with what follows.
bool TriviallyNfc(std::string_view text) {
  for (char c : text) {
    if (static_cast<uint8_t>(c) >= 0xCC)
      return false; // lead bytes of U+0300 and up
  }
  return true;
}

} // namespace

void NfdInPlace(std::vector<char32_t> *cps) {
  std::vector<char32_t> out;
  out.reserve(cps->size());
  for (char32_t cp : *cps)
    Decompose(cp, &out);
  ReorderMarks(&out);
  cps->swap(out);
}

std::string NfcNormalize(std::string_view text) {
  if (TriviallyNfc(text))
    return std::string(text);
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  size_t i = 0;
  while (i < text.size())
    Decompose(NextCodepoint(text, &i), &cps);
  ReorderMarks(&cps);
  ComposeAll(&cps);
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : cps)
    AppendUtf8(cp, &out);
  return out;
}

} // namespace kiln::tokenizer
