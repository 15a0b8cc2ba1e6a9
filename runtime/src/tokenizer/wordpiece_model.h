// The tokenizer.json "model" of type WordPiece (BERT and its family): each
// word is cut greedily into the longest vocabulary pieces from the left, every
// piece after the first spelled with the continuing-subword prefix ("##").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tokenizer/model.h"
#include "tokenizer/vocab.h"

namespace kiln::tokenizer {

class WordPieceModel : public Model {
public:
  static StatusOr<std::unique_ptr<WordPieceModel>> FromJson(const Json &model);

  // A word that cannot be cut into vocabulary pieces, or that is longer than
  // max_input_chars_per_word characters, becomes the single unk_token, as in
  // HF. When unk_token is not in the vocabulary, that word is an error (HF
  // fails the same way).
  Status Encode(const std::string &word, std::vector<int32_t> *ids) const override;

  int32_t TokenToId(std::string_view token) const override { return vocab_.TokenToId(token); }
  const std::string *IdToToken(int32_t id) const override { return vocab_.IdToToken(id); }
  int32_t max_id() const override { return vocab_.max_id(); }

private:
  Status Unknown(const std::string &word, std::vector<int32_t> *ids) const;

  Vocab vocab_;
  std::string unk_token_ = "[UNK]";
  int32_t unk_id_ = -1;
  std::string prefix_ = "##";
  int64_t max_input_chars_per_word_ = 100;
};

} // namespace kiln::tokenizer
