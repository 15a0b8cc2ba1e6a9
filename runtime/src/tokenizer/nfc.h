// Unicode Normalization Forms C (canonical decomposition, reordering, canonical
// composition) and D (the first two), with the character data HF tokenizers uses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::tokenizer {

// NFC of `text`, which must be valid UTF-8.
std::string NfcNormalize(std::string_view text);

// NFD (canonical decomposition and reordering) of `cps`, in place.
void NfdInPlace(std::vector<char32_t> *cps);

} // namespace kiln::tokenizer
