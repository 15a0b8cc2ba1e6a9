// The server's settings: defaults, a JSON settings file (`--config`) and
// flags that override it. Every key is listed in SettingKeys() with its help
// text, which `kiln serve --help` prints; a key not in that table is an
// error, never silently ignored.
#pragma once

#include "kiln/serve.h"
#include "kiln/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::serve {

// ServeSettings is public: kiln/serve.h.
using kiln::ServeSettings;


// One key of the settings file: its name, its value's type ("string", "int",
// "number", "bool") and its help text. The flag of key `a_b` is `--a-b`.
using SettingKey = kiln::ServeSettingKey;
const std::vector<SettingKey> &SettingKeys();

// Sets `key` from a JSON value. InvalidArgument naming the key for an
// unknown key, a wrong type or a value out of range.
Status ApplySetting(const std::string &key, const nlohmann::json &value, ServeSettings *s);
// Every key of a JSON object, in order.
Status ApplySettingsJson(const nlohmann::json &object, ServeSettings *s);
// A flag's text value for `key`, converted to the key's type first.
Status ApplySettingText(const std::string &key, const std::string &text, ServeSettings *s);
// Ranges that involve two keys (timeouts), after everything is applied.
Status CheckSettings(const ServeSettings &s);

// "  --key-name VALUE   help" lines for --help.
std::string SettingsUsage();

} // namespace kiln::serve
