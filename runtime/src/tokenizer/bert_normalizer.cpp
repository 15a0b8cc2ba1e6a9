#include "tokenizer/bert_normalizer.h"

#include <algorithm>

#include "tokenizer/bert_tables.h"
#include "tokenizer/nfc.h"

namespace kiln::tokenizer {
namespace {

void CleanText(std::vector<char32_t> *cps) {
  size_t out = 0;
  for (char32_t cp : *cps) {
    if (cp == 0 || cp == 0xFFFD || InRanges(kBertRemoved, kBertRemovedCount, cp))
      continue;
    (*cps)[out++] = IsBertWhitespace(cp) ? U' ' : cp;
  }
  cps->resize(out);
}

void SpaceChinese(std::vector<char32_t> *cps) {
  std::vector<char32_t> out;
  out.reserve(cps->size());
  for (char32_t cp : *cps) {
    if (InRanges(kBertChinese, kBertChineseCount, cp)) {
      out.insert(out.end(), {U' ', cp, U' '});
    } else {
      out.push_back(cp);
    }
  }
  cps->swap(out);
}

void StripAccents(std::vector<char32_t> *cps) {
  NfdInPlace(cps);
  cps->erase(std::remove_if(cps->begin(), cps->end(),
                            [](char32_t cp) {
                              return InRanges(kBertNonspacingMarks, kBertNonspacingMarkCount, cp);
                            }),
             cps->end());
}

} // namespace

bool InRanges(const CodepointRange *ranges, size_t count, char32_t cp) {
  const CodepointRange *end = ranges + count;
  const CodepointRange *it = std::upper_bound(
      ranges, end, cp, [](char32_t c, const CodepointRange &r) { return c < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

bool IsBertWhitespace(char32_t cp) { return InRanges(kBertWhitespace, kBertWhitespaceCount, cp); }

bool IsBertPunctuation(char32_t cp) {
  return InRanges(kBertPunctuation, kBertPunctuationCount, cp);
}

void LowercaseInPlace(std::vector<char32_t> *cps) {
  std::vector<char32_t> out;
  out.reserve(cps->size());
  const LowercaseMapping *end = kLowercase + kLowercaseCount;
  for (char32_t cp : *cps) {
    const LowercaseMapping *m = std::lower_bound(
        kLowercase, end, cp, [](const LowercaseMapping &l, char32_t c) { return l.cp < c; });
    if (m == end || m->cp != cp) {
      out.push_back(cp);
      continue;
    }
    for (char32_t lower : m->lower) {
      if (lower != 0)
        out.push_back(lower);
    }
  }
  cps->swap(out);
}

void BertNormalize(const BertNormalizerOptions &options, std::vector<char32_t> *cps) {
  if (options.clean_text)
    CleanText(cps);
  if (options.handle_chinese_chars)
    SpaceChinese(cps);
  if (options.strip_accents)
    StripAccents(cps);
  if (options.lowercase)
    LowercaseInPlace(cps);
}

} // namespace kiln::tokenizer
