#include "tokenizer/model.h"

#include "tokenizer/bpe_model.h"
#include "tokenizer/unigram_model.h"
#include "tokenizer/wordpiece_model.h"

namespace kiln::tokenizer {

std::string ByteFallbackToken(unsigned byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("<0x") + kHex[(byte >> 4) & 15] + kHex[byte & 15] + ">";
}

StatusOr<std::unique_ptr<Model>> Model::FromJson(const Json &model) {
  if (!model.is_object())
    return FieldError("model", "expected an object");
  std::string type = "BPE"; // older files leave the type out
  if (FindField(model, "type") != nullptr)
    KILN_RETURN_IF_ERROR(ReadType(model, "model", &type));
  if (type == "BPE") {
    KILN_ASSIGN_OR_RETURN(auto bpe, BpeModel::FromJson(model));
    return std::unique_ptr<Model>(std::move(bpe));
  }
  if (type == "Unigram") {
    KILN_ASSIGN_OR_RETURN(auto unigram, UnigramModel::FromJson(model));
    return std::unique_ptr<Model>(std::move(unigram));
  }
  if (type == "WordPiece") {
    KILN_ASSIGN_OR_RETURN(auto wordpiece, WordPieceModel::FromJson(model));
    return std::unique_ptr<Model>(std::move(wordpiece));
  }
  return Unimplemented("tokenizer.json: model type '" + type +
                       "' is not supported (supported: BPE, Unigram, WordPiece)");
}

} // namespace kiln::tokenizer
