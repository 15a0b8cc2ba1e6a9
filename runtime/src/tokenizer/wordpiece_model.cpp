#include "tokenizer/wordpiece_model.h"

#include <algorithm>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

bool IsContinuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

} // namespace

StatusOr<std::unique_ptr<WordPieceModel>> WordPieceModel::FromJson(const Json &model) {
  auto wp = std::unique_ptr<WordPieceModel>(new WordPieceModel());
  const Json *vocab = FindField(model, "vocab");
  if (vocab == nullptr)
    return FieldError("model.vocab", "expected an object");
  KILN_RETURN_IF_ERROR(wp->vocab_.Parse(*vocab, "model.vocab"));
  // HF's defaults when a field is missing.
  if (FindField(model, "unk_token") != nullptr)
    KILN_RETURN_IF_ERROR(ReadString(model, "unk_token", "model", &wp->unk_token_));
  if (FindField(model, "continuing_subword_prefix") != nullptr) {
    KILN_RETURN_IF_ERROR(ReadString(model, "continuing_subword_prefix", "model", &wp->prefix_));
  }
  if (const Json *max = FindField(model, "max_input_chars_per_word")) {
    if (!max->is_number_unsigned())
      return FieldError("model.max_input_chars_per_word", "expected a non-negative integer");
    wp->max_input_chars_per_word_ =
        static_cast<int64_t>(std::min<uint64_t>(max->get<uint64_t>(), uint64_t{1} << 62));
  }
  wp->unk_id_ = wp->vocab_.TokenToId(wp->unk_token_);
  return wp;
}

Status WordPieceModel::Unknown(const std::string &word, std::vector<int32_t> *ids) const {
  if (unk_id_ < 0) {
    return InvalidArgument("tokenizer: the word '" + word + "' needs unk_token '" + unk_token_ +
                           "', which is not in the WordPiece vocabulary");
  }
  ids->push_back(unk_id_);
  return Status::Ok();
}

Status WordPieceModel::Encode(const std::string &word, std::vector<int32_t> *ids) const {
  int64_t chars = 0;
  for (size_t i = 0; i < word.size(); i += CodepointLength(word, i))
    ++chars;
  if (chars > max_input_chars_per_word_)
    return Unknown(word, ids);
  // Greedy longest match from the left; pieces found so far are kept aside so
  // that a word with an unmatchable tail becomes one unk, not a partial cut.
  std::vector<int32_t> pieces;
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    // No piece is longer than the longest token, so the search starts there
    // (on a character boundary): the result is HF's, without its quadratic
    // cost on a long word when max_input_chars_per_word is raised.
    const size_t marker = start > 0 ? prefix_.size() : 0;
    const size_t longest = vocab_.max_token_bytes();
    size_t end = longest > marker ? std::min(word.size(), start + longest - marker) : start;
    while (end > start && end < word.size() && IsContinuation(word[end]))
      --end;
    int32_t found = -1;
    while (start < end) {
      candidate.assign(start > 0 ? prefix_ : std::string());
      candidate.append(word, start, end - start);
      found = vocab_.TokenToId(candidate);
      if (found >= 0)
        break;
      // Drop the last character of the piece.
      do {
        --end;
      } while (end > start && IsContinuation(word[end]));
    }
    if (found < 0)
      return Unknown(word, ids);
    pieces.push_back(found);
    start = end;
  }
  ids->insert(ids->end(), pieces.begin(), pieces.end());
  return Status::Ok();
}

} // namespace kiln::tokenizer
