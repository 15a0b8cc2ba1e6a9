// The tokenizer.json "normalizer": applied to the text between added tokens
// before pre-tokenization.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class Normalizer {
public:
  // Accepts null (no normalizer), NFC, and Sequence of those.
  static StatusOr<std::unique_ptr<Normalizer>> FromJson(const Json *config);
  // `text` must be valid UTF-8.
  std::string Normalize(std::string_view text) const;
  bool is_identity() const { return !nfc_; }

private:
  bool nfc_ = false; // NFC is idempotent, so a sequence reduces to one flag
};

} // namespace kiln::tokenizer
