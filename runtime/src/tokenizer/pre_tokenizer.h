// The tokenizer.json "pre_tokenizer": cuts normalized text into the words that
// the model encodes one by one (for byte-level BPE, mapped to its alphabet).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace kiln::tokenizer {

// What HF's Split does with a regex match.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
public:
  // Accepts null (the text is one word), ByteLevel, Split, BertPreTokenizer,
  // and Sequence of those.
  static StatusOr<std::unique_ptr<PreTokenizer>> FromJson(const Json *config);
  // Appends the non-empty words of `text` (valid UTF-8) to *words.
  Status Split(std::string_view text, std::vector<std::string> *words) const;

private:
  struct Step {
    bool byte_level = false;
    bool bert = false;            // BertPreTokenizer: split on whitespace, isolate punctuation
    std::unique_ptr<Regex> regex; // Split's pattern, or ByteLevel's (null: use_regex false)
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  Status AddSteps(const Json &config, const std::string &path);
  Status AddSplit(const Json &config, const std::string &path);
  Status AddByteLevel(const Json &config, const std::string &path);
  static void BertSplit(const std::string &piece, std::vector<std::string> *out);
  static Status RunStep(const Step &step, const std::string &piece, std::vector<std::string> *out);

  std::vector<Step> steps_;
};

} // namespace kiln::tokenizer
