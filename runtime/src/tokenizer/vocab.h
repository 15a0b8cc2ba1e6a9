// A tokenizer.json "model.vocab": the token <-> id table that every model type
// (BPE, WordPiece) carries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class Vocab {
public:
  // Parses {"token": id, ...}; ids must lie in [0, 2^24) so that dense per-id
  // tables stay small whatever a hostile file says.
  Status Parse(const Json &vocab, const std::string &path);

  int32_t TokenToId(std::string_view token) const; // -1 if absent
  const std::string *IdToToken(int32_t id) const;  // nullptr if absent
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  size_t max_token_bytes() const { return max_token_bytes_; } // the longest token

private:
  std::unordered_map<std::string, int32_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  size_t max_token_bytes_ = 0;
};

} // namespace kiln::tokenizer
