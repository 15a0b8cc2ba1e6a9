#include "tokenizer/normalizer.h"

#include "tokenizer/nfc.h"

namespace kiln::tokenizer {
namespace {

Status Collect(const Json &config, const std::string &path, bool *nfc) {
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(config, path, &type));
  if (type == "NFC") {
    *nfc = true;
    return Status::Ok();
  }
  if (type == "Sequence") {
    const Json *list = FindField(config, "normalizers");
    if (list == nullptr || !list->is_array()) {
      return FieldError(path + ".normalizers", "expected an array");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      KILN_RETURN_IF_ERROR(
          Collect((*list)[i], path + ".normalizers[" + std::to_string(i) + "]", nfc));
    }
    return Status::Ok();
  }
  return Unimplemented("tokenizer.json: " + path + ": normalizer type '" + type +
                       "' is not supported (supported: NFC, Sequence)");
}

} // namespace

StatusOr<std::unique_ptr<Normalizer>> Normalizer::FromJson(const Json *config) {
  auto n = std::make_unique<Normalizer>();
  if (config != nullptr)
    KILN_RETURN_IF_ERROR(Collect(*config, "normalizer", &n->nfc_));
  return n;
}

std::string Normalizer::Normalize(std::string_view text) const {
  return nfc_ ? NfcNormalize(text) : std::string(text);
}

} // namespace kiln::tokenizer
