// The tokenizer.json "model" of type Unigram (T5, XLM-R, ALBERT and other
// SentencePiece unigram models): scored pieces, and the Viterbi search that
// cuts one pre-tokenized word into the pieces of the best total score.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/model.h"
#include "tokenizer/word_cache.h"

namespace kiln::tokenizer {

class UnigramModel : public Model {
public:
  // {"vocab": [[piece, score], ...], "unk_id": n or null, "byte_fallback": bool}.
  static StatusOr<std::unique_ptr<UnigramModel>> FromJson(const Json &model);

  // As HF's Unigram: the best-scoring segmentation (ties keep the first path
  // found), a character no piece covers scored as the lowest score minus 10,
  // runs of such characters fused into one unknown piece, which becomes its
  // bytes' <0xXX> pieces under byte_fallback (when all exist), else unk_id.
  // InvalidArgument when the word needs unk_id and the model has none.
  Status Encode(const std::string &word, std::vector<int32_t> *ids) const override;

  int32_t TokenToId(std::string_view token) const override;
  const std::string *IdToToken(int32_t id) const override;
  int32_t max_id() const override { return static_cast<int32_t>(pieces_.size()) - 1; }

private:
  // A byte trie of the pieces: the root's children by byte, deeper ones as
  // sibling lists (most nodes have one or two children).
  struct Node {
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    int32_t piece = -1; // the piece ending here
    unsigned char byte = 0;
  };
  void Insert(const std::string &piece, int32_t id);
  int32_t Child(int32_t node, unsigned char byte) const;
  void EncodeWord(const std::string &word, std::vector<int32_t> *ids, bool *missing_unk) const;
  void AppendPiece(std::string_view piece, std::vector<int32_t> *ids, bool *missing_unk) const;

  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string_view, int32_t> by_piece_; // views into pieces_
  std::vector<Node> nodes_{1};
  int32_t root_children_[256];
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  int32_t byte_ids_[256]; // "<0xXX>" per byte, -1 where absent (byte_fallback only)
  double unk_score_ = 0;

  WordCache cache_;
};

} // namespace kiln::tokenizer
