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
  if (type == "Prepend") {
    Step step{Kind::kPrepend, {}};
    KILN_RETURN_IF_ERROR(ReadString(config, "prepend", path, &step.text));
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Replace")
    return AddReplace(config, path);
  if (type == "Strip") {
    Step step{Kind::kStrip, {}};
    KILN_RETURN_IF_ERROR(ReadBool(config, "strip_left", path, true, &step.left));
    KILN_RETURN_IF_ERROR(ReadBool(config, "strip_right", path, true, &step.right));
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
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
      "' is not supported (supported: NFC, NFD, Lowercase, BertNormalizer, Prepend, Replace, "
      "Strip, Sequence)");
}

// {"pattern": {"String": s} or {"Regex": r}, "content": c}: every match of the
// pattern becomes c, as HF's Replace (and the Replace decoder) read it.
Status ReadReplacePattern(const Json &config, const std::string &path, std::string *literal,
                          std::shared_ptr<const Regex> *regex) {
  const Json *pattern = FindField(config, "pattern");
  const Json *re = pattern ? FindField(*pattern, "Regex") : nullptr;
  const Json *str = pattern ? FindField(*pattern, "String") : nullptr;
  if (re != nullptr && re->is_string()) {
    auto compiled = Regex::Compile(re->get<std::string>());
    if (!compiled.ok())
      return compiled.status().WithContext("tokenizer.json: " + path + ".pattern");
    *regex = std::shared_ptr<const Regex>(std::move(compiled.value()));
    return Status::Ok();
  }
  if (str != nullptr && str->is_string() && !str->get<std::string>().empty()) {
    *literal = str->get<std::string>();
    return Status::Ok();
  }
  return FieldError(path + ".pattern", "expected {\"String\": a non-empty string} or "
                                       "{\"Regex\": a pattern}");
}

std::string ReplaceMatches(std::string_view text, const std::string &literal, const Regex *regex,
                           const std::string &content) {
  std::string out;
  if (regex == nullptr) {
    size_t pos = 0, hit;
    while ((hit = text.find(literal, pos)) != std::string_view::npos) {
      out.append(text.substr(pos, hit - pos)).append(content);
      pos = hit + literal.size();
    }
    out.append(text.substr(pos));
    return out;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  // FindAll fails only past PCRE2's match limits; the text is then left as it is.
  if (!regex->FindAll(text, &matches).ok())
    return std::string(text);
  size_t pos = 0;
  for (const auto &[begin, end] : matches) {
    out.append(text.substr(pos, begin - pos)).append(content);
    pos = end;
  }
  out.append(text.substr(pos));
  return out;
}

Status Normalizer::AddReplace(const Json &config, const std::string &path) {
  Step step{Kind::kReplace, {}};
  KILN_RETURN_IF_ERROR(ReadReplacePattern(config, path, &step.literal, &step.regex));
  KILN_RETURN_IF_ERROR(ReadString(config, "content", path, &step.text));
  steps_.push_back(std::move(step));
  return Status::Ok();
}

std::string Normalizer::ApplyTextStep(const Step &step, std::string text) {
  switch (step.kind) {
  case Kind::kPrepend:
    // HF prepends only to a non-empty piece: there is no character to attach to.
    return text.empty() ? text : step.text + text;
  case Kind::kReplace:
    return ReplaceMatches(text, step.literal, step.regex.get(), step.text);
  case Kind::kStrip: {
    size_t begin = 0, end = text.size();
    if (step.left) {
      for (size_t i = 0; i < text.size() && IsRustWhitespace(NextCodepoint(text, &i));)
        begin = i;
    }
    if (step.right) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
          --start;
        size_t k = start;
        if (!IsRustWhitespace(NextCodepoint(text, &k)))
          break;
        end = start;
      }
    }
    return text.substr(begin, end - begin);
  }
  default:
    return text;
  }
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
    if (step.kind == Kind::kPrepend || step.kind == Kind::kReplace || step.kind == Kind::kStrip) {
      current = ApplyTextStep(step, std::move(current));
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
