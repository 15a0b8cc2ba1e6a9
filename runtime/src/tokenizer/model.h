// The tokenizer.json "model": turns one pre-tokenized word into ids. BPE
// (bpe_model.h), Unigram (unigram_model.h) and WordPiece (wordpiece_model.h)
// implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

// "<0xXX>" (two upper-case hex digits): the SentencePiece token that stands for
// one byte, which byte_fallback models use for characters they lack.
std::string ByteFallbackToken(unsigned byte);

class Model {
public:
  virtual ~Model() = default;
  // Reads "type" (BPE when absent, as older files have it) and builds that model;
  // other types give kUnimplemented.
  static StatusOr<std::unique_ptr<Model>> FromJson(const Json &model);

  // Appends the ids of `word` (one pre-tokenized word, valid UTF-8) to *ids.
  virtual Status Encode(const std::string &word, std::vector<int32_t> *ids) const = 0;
  virtual int32_t TokenToId(std::string_view token) const = 0; // -1 if absent
  virtual const std::string *IdToToken(int32_t id) const = 0;  // nullptr if absent
  virtual int32_t max_id() const = 0;
};

} // namespace kiln::tokenizer
