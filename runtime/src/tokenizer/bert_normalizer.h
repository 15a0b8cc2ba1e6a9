// HF's BertNormalizer and the character-level normalizers it is made of.
#pragma once

#include <vector>

namespace kiln::tokenizer {

struct BertNormalizerOptions {
  bool clean_text = true;           // drop control characters, map whitespace to ' '
  bool handle_chinese_chars = true; // put spaces around CJK ideographs
  bool strip_accents = true;        // NFD, then drop nonspacing marks
  bool lowercase = true;
};

// Applies the options in HF's order: clean, Chinese, accents, lowercase.
void BertNormalize(const BertNormalizerOptions &options, std::vector<char32_t> *cps);

// Per-character full lowercase mapping (no context: a final sigma stays σ), as
// HF's Lowercase normalizer does it.
void LowercaseInPlace(std::vector<char32_t> *cps);

bool IsBertWhitespace(char32_t cp);
bool IsBertPunctuation(char32_t cp);

} // namespace kiln::tokenizer
