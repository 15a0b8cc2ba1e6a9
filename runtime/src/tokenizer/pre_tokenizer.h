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
  // Metaspace, WhitespaceSplit, and Sequence of those.
  static StatusOr<std::unique_ptr<PreTokenizer>> FromJson(const Json *config);
  // Appends the non-empty words of `text` (valid UTF-8) to *words.
  // `at_text_start` says that `text` begins where the whole input began (no
  // added token or earlier text before it): Metaspace's prepend_scheme
  // "first" prefixes only such a piece, as HF's original offset 0.
  Status Split(std::string_view text, bool at_text_start, std::vector<std::string> *words) const;
  Status Split(std::string_view text, std::vector<std::string> *words) const {
    return Split(text, /*at_text_start=*/true, words);
  }

private:
  // Metaspace's prepend_scheme: when the replacement is put before a piece.
  enum class Prepend { kAlways, kFirst, kNever };
  struct Step {
    bool byte_level = false;
    bool bert = false;             // BertPreTokenizer: split on whitespace, isolate punctuation
    bool whitespace_split = false; // WhitespaceSplit: split on whitespace, dropping it
    bool metaspace = false;        // Metaspace: spaces become `replacement` (regex: split on it)
    std::string replacement;       // Metaspace only
    Prepend prepend = Prepend::kAlways;
    std::unique_ptr<Regex> regex; // Split's pattern, or ByteLevel's (null: use_regex false)
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  Status AddSteps(const Json &config, const std::string &path);
  Status AddSplit(const Json &config, const std::string &path);
  Status AddByteLevel(const Json &config, const std::string &path);
  Status AddMetaspace(const Json &config, const std::string &path);
  // A piece of text on its way through the steps.
  struct Piece {
    std::string text;
    bool at_start; // begins at the start of the input text
  };
  static void BertSplit(const Piece &piece, std::vector<Piece> *out);
  static void WhitespaceSplit(const Piece &piece, std::vector<Piece> *out);
  static Status RunStep(const Step &step, const Piece &piece, std::vector<Piece> *out);

  std::vector<Step> steps_;
};

} // namespace kiln::tokenizer
