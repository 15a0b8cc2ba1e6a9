// The tokenizer.json "normalizer": applied to the text between added tokens
// before pre-tokenization.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace kiln::tokenizer {

// A Replace step's {"pattern": {"String": s} or {"Regex": r}} (normalizer and
// decoder alike): fills *literal or *regex.
Status ReadReplacePattern(const Json &config, const std::string &path, std::string *literal,
                          std::shared_ptr<const Regex> *regex);
// `text` with every match of `literal` (regex null) or `regex` (leftmost,
// non-overlapping) replaced by `content`.
std::string ReplaceMatches(std::string_view text, const std::string &literal, const Regex *regex,
                           const std::string &content);

class Normalizer {
public:
  // Accepts null (no normalizer), NFC, NFD, Lowercase, BertNormalizer,
  // Prepend, Replace, Strip (the SentencePiece-style normalizers of Llama 2,
  // Mistral and Gemma), and Sequence of those.
  static StatusOr<std::unique_ptr<Normalizer>> FromJson(const Json *config);
  // `text` must be valid UTF-8.
  std::string Normalize(std::string_view text) const;
  bool is_identity() const { return steps_.empty(); }

private:
  enum class Kind { kNfc, kNfd, kLowercase, kBert, kPrepend, kReplace, kStrip };
  struct Step {
    Kind kind;
    BertNormalizerOptions bert;         // kBert only
    std::string text;                   // kPrepend: what is prepended; kReplace: the content
    std::string literal;                // kReplace with a String pattern
    std::shared_ptr<const Regex> regex; // kReplace with a Regex pattern
    bool left = false, right = false;   // kStrip: which ends lose their whitespace
  };
  Status Collect(const Json &config, const std::string &path);
  Status AddBert(const Json &config, const std::string &path);
  Status AddReplace(const Json &config, const std::string &path);
  static std::string ApplyTextStep(const Step &step, std::string text);

  std::vector<Step> steps_; // in order
};

} // namespace kiln::tokenizer
