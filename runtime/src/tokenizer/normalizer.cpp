#include "tokenizer/normalizer.h"

#include "tokenizer/nfc.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {

Status Normalizer::Collect(const Json &config, const std::string &path) {
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(config, path, &type));
  if (type == "NFC" || type == "NFD" || type == "Lowercase") {
    steps_.push_back({type == "NFC"   ? Kind::kNfc
                      : type == "NFD" ? Kind::kNfd
                                      : Kind::kLowercase,
                      {}});
    return Status::Ok();
  }
  if (type == "BertNormalizer")
    return AddBert(config, path);
  if (type == "Sequence") {
    const Json *list = FindField(config, "normalizers");
    if (list == nullptr || !list->is_array()) {
      return FieldError(path + ".normalizers", "expected an array");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      KILN_RETURN_IF_ERROR(Collect((*list)[i], path + ".normalizers[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unimplemented(
      "tokenizer.json: " + path + ": normalizer type '" + type +
      "' is not supported (supported: NFC, NFD, Lowercase, BertNormalizer, Sequence)");
}

Status Normalizer::AddBert(const Json &config, const std::string &path) {
  Step step{Kind::kBert, {}};
  BertNormalizerOptions &o = step.bert;
  // HF's defaults when a field is missing; strip_accents null follows lowercase.
  KILN_RETURN_IF_ERROR(ReadBool(config, "clean_text", path, true, &o.clean_text));
  KILN_RETURN_IF_ERROR(
      ReadBool(config, "handle_chinese_chars", path, true, &o.handle_chinese_chars));
  KILN_RETURN_IF_ERROR(ReadBool(config, "lowercase", path, true, &o.lowercase));
  KILN_RETURN_IF_ERROR(ReadBool(config, "strip_accents", path, o.lowercase, &o.strip_accents));
  steps_.push_back(step);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Normalizer>> Normalizer::FromJson(const Json *config) {
  auto n = std::unique_ptr<Normalizer>(new Normalizer());
  if (config != nullptr)
    KILN_RETURN_IF_ERROR(n->Collect(*config, "normalizer"));
  return n;
}

std::string Normalizer::Normalize(std::string_view text) const {
  if (steps_.empty())
    return std::string(text);
  if (steps_.size() == 1 && steps_[0].kind == Kind::kNfc)
    return NfcNormalize(text); // the common case has its own fast path
  std::string current(text);
  std::vector<char32_t> cps;
  for (const Step &step : steps_) {
    if (step.kind == Kind::kNfc) {
      current = NfcNormalize(current);
      continue;
    }
    cps.clear();
    for (size_t i = 0; i < current.size();)
      cps.push_back(NextCodepoint(current, &i));
    if (step.kind == Kind::kNfd)
      NfdInPlace(&cps);
    else if (step.kind == Kind::kLowercase)
      LowercaseInPlace(&cps);
    else
      BertNormalize(step.bert, &cps);
    current.clear();
    for (char32_t cp : cps)
      AppendUtf8(cp, &current);
  }
  return current;
}

} // namespace kiln::tokenizer
