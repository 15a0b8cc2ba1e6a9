#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

const Json *FindField(const Json &obj, const char *key) {
  if (!obj.is_object())
    return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Status FieldError(const std::string &path, const std::string &what) {
  return InvalidArgument("tokenizer.json: " + path + ": " + what);
}

Status ReadBool(const Json &obj, const char *key, const std::string &path, bool fallback,
                bool *out) {
  const Json *v = FindField(obj, key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  if (!v->is_boolean())
    return FieldError(path + "." + key, "expected true or false");
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadString(const Json &obj, const char *key, const std::string &path, std::string *out) {
  const Json *v = FindField(obj, key);
  if (v == nullptr || !v->is_string())
    return FieldError(path + "." + key, "expected a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ReadType(const Json &obj, const std::string &path, std::string *out) {
  if (!obj.is_object())
    return FieldError(path, "expected an object");
  return ReadString(obj, "type", path, out);
}

} // namespace kiln::tokenizer
