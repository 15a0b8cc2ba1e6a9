// Unicode Normalization Form C (canonical decomposition, reordering, canonical
// composition), with the character data HF tokenizers uses.
#pragma once

#include <string>
#include <string_view>

namespace kiln::tokenizer {

// NFC of `text`, which must be valid UTF-8.
std::string NfcNormalize(std::string_view text);

} // namespace kiln::tokenizer
