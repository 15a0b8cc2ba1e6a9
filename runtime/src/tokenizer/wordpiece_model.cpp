#include "tokenizer/wordpiece_model.h"

#include "tokenizer/utf8.h"

namespace kiln::tokenizer {

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
    size_t end = word.size();
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
      } while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
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
