#include "tokenizer/model.h"

#include "tokenizer/bpe_model.h"
#include "tokenizer/wordpiece_model.h"

namespace kiln::tokenizer {

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
  if (type == "WordPiece") {
    KILN_ASSIGN_OR_RETURN(auto wordpiece, WordPieceModel::FromJson(model));
    return std::unique_ptr<Model>(std::move(wordpiece));
  }
  return Unimplemented("tokenizer.json: model type '" + type +
                       "' is not supported (supported: BPE, WordPiece)");
}

} // namespace kiln::tokenizer
