// Typed, non-throwing access to tokenizer.json fields: every mistake becomes a
// Status that names the field's path.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "kiln/status.h"

namespace kiln::tokenizer {

using Json = nlohmann::json;

// The member `key` of object `obj`, or nullptr when absent or null.
const Json *FindField(const Json &obj, const char *key);

// "<path>: <what>" as an InvalidArgument status.
Status FieldError(const std::string &path, const std::string &what);

// Optional boolean: `fallback` when absent or null.
Status ReadBool(const Json &obj, const char *key, const std::string &path, bool fallback,
                bool *out);
// Required string.
Status ReadString(const Json &obj, const char *key, const std::string &path, std::string *out);
// The component's "type" string.
Status ReadType(const Json &obj, const std::string &path, std::string *out);

} // namespace kiln::tokenizer
