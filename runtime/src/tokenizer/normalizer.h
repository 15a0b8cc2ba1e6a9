// The tokenizer.json "normalizer": applied to the text between added tokens
// before pre-tokenization.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class Normalizer {
public:
  // Accepts null (no normalizer), NFC, NFD, Lowercase, BertNormalizer, and
  // Sequence of those.
  static StatusOr<std::unique_ptr<Normalizer>> FromJson(const Json *config);
  // `text` must be valid UTF-8.
  std::string Normalize(std::string_view text) const;
  bool is_identity() const { return steps_.empty(); }

private:
  enum class Kind { kNfc, kNfd, kLowercase, kBert };
  struct Step {
    Kind kind;
    BertNormalizerOptions bert; // kBert only
  };
  Status Collect(const Json &config, const std::string &path);
  Status AddBert(const Json &config, const std::string &path);

  std::vector<Step> steps_; // in order
};

} // namespace kiln::tokenizer
