#include "tokenizer/post_processor.h"

#include <string>

namespace kiln::tokenizer {
namespace {

// The ids of special token `name` from the template's "special_tokens" map.
Status SpecialIds(const Json &config, const std::string &name, const std::string &path,
                  std::vector<int32_t> *out) {
  const Json *specials = FindField(config, "special_tokens");
  const Json *entry = specials ? FindField(*specials, name.c_str()) : nullptr;
  const Json *ids = entry ? FindField(*entry, "ids") : nullptr;
  if (ids == nullptr || !ids->is_array()) {
    return FieldError(path + ".special_tokens", "no ids for special token '" + name + "'");
  }
  for (const Json &id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24)) {
      return FieldError(path + ".special_tokens[\"" + name + "\"].ids", "expected ids");
    }
    out->push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return Status::Ok();
}

// BertProcessing's "cls"/"sep": ["[CLS]", 101].
Status TokenPairId(const Json &config, const char *key, const std::string &path, int32_t *id) {
  const Json *pair = FindField(config, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[0].is_string() ||
      !(*pair)[1].is_number_integer() || (*pair)[1].get<int64_t>() < 0 ||
      (*pair)[1].get<int64_t>() >= (1 << 24)) {
    return FieldError(path + "." + key, "expected [\"token\", id]");
  }
  *id = static_cast<int32_t>((*pair)[1].get<int64_t>());
  return Status::Ok();
}

} // namespace

Status PostProcessor::Parse(const Json *config) {
  return config == nullptr ? Status::Ok() : ParseOne(*config, "post_processor");
}

Status PostProcessor::ParseOne(const Json &config, const std::string &path) {
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(config, path, &type));
  if (type == "ByteLevel")
    return Status::Ok(); // trims offsets; kiln keeps none
  if (type == "TemplateProcessing")
    return ParseTemplate(config, path);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return ParseClsSep(config, path);
  if (type == "Sequence") {
    const Json *list = FindField(config, "processors");
    if (list == nullptr || !list->is_array()) {
      return FieldError(path + ".processors", "expected an array");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      KILN_RETURN_IF_ERROR(ParseOne((*list)[i], path + ".processors[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unimplemented("tokenizer.json: " + path + ": post_processor type '" + type +
                       "' is not supported (supported: ByteLevel, TemplateProcessing, "
                       "BertProcessing, RobertaProcessing, Sequence)");
}

// A single sequence becomes cls $A sep; RoBERTa's other fields only move offsets.
Status PostProcessor::ParseClsSep(const Json &config, const std::string &path) {
  if (has_template_)
    return Unimplemented("tokenizer.json: " + path + ": a second template");
  int32_t cls, sep;
  KILN_RETURN_IF_ERROR(TokenPairId(config, "cls", path, &cls));
  KILN_RETURN_IF_ERROR(TokenPairId(config, "sep", path, &sep));
  before_ = {cls};
  after_ = {sep};
  has_template_ = true;
  return Status::Ok();
}

Status PostProcessor::ParseTemplate(const Json &config, const std::string &path) {
  if (has_template_)
    return Unimplemented("tokenizer.json: " + path + ": a second template");
  const Json *single = FindField(config, "single");
  if (single == nullptr || !single->is_array()) {
    return FieldError(path + ".single", "expected an array");
  }
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json &piece = (*single)[i];
    const std::string at = path + ".single[" + std::to_string(i) + "]";
    if (FindField(piece, "Sequence") != nullptr) {
      if (seen_sequence)
        return FieldError(at, "the single template has two sequences");
      seen_sequence = true;
    } else if (const Json *special = FindField(piece, "SpecialToken")) {
      std::string name;
      KILN_RETURN_IF_ERROR(ReadString(*special, "id", at + ".SpecialToken", &name));
      KILN_RETURN_IF_ERROR(SpecialIds(config, name, path, seen_sequence ? &after_ : &before_));
    } else {
      return FieldError(at, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!seen_sequence)
    return FieldError(path + ".single", "the template has no $A");
  has_template_ = true;
  return Status::Ok();
}

Status PostProcessor::CheckIds(const std::function<bool(int32_t)> &known) const {
  for (const std::vector<int32_t> *ids : {&before_, &after_})
    for (int32_t id : *ids)
      if (!known(id))
        return InvalidArgument("tokenizer.json: post_processor: the template adds id " +
                               std::to_string(id) +
                               ", which is neither in the vocabulary nor an added token");
  return Status::Ok();
}

std::vector<int32_t> PostProcessor::Apply(std::vector<int32_t> ids) const {
  if (!has_template_)
    return ids;
  std::vector<int32_t> out;
  out.reserve(before_.size() + ids.size() + after_.size());
  out.insert(out.end(), before_.begin(), before_.end());
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), after_.begin(), after_.end());
  return out;
}

} // namespace kiln::tokenizer
