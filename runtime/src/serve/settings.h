// The server's settings: defaults, a JSON settings file (`--config`) and
// flags that override it. Every key is listed in SettingKeys() with its help
// text, which `kiln serve --help` prints; a key not in that table is an
// error, never silently ignored.
#pragma once

#include "kiln/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::serve {

struct ServeSettings {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: any free port (the chosen one is printed)
  std::string api_keys; // keys file; "" only with allow_no_auth
  bool allow_no_auth = false;
  std::string model_name; // "" : the plan file's name without ".plan"
  std::string plan;       // the plan to serve when PLAN is not given; SIGHUP switches to it
  int max_queue = 256;    // requests admitted (waiting or running) at once
  double request_timeout_s = 600;
  double max_request_timeout_s = 3600;
  int64_t max_body_bytes = 4 << 20;
  int64_t max_prompt_bytes = 1 << 20; // one prompt's text (or rendered chat)
  int64_t max_header_bytes = 32 << 10; // request line and headers
  int max_headers = 100;
  double header_timeout_s = 30;     // first byte of a request to the end of its head
  double body_timeout_s = 60;       // end of the head to the end of the body
  double read_timeout_s = 10;       // longest silence inside a request
  double keep_alive_timeout_s = 5;  // idle connection between requests
  double write_timeout_s = 30;
  int http_threads = 128;           // requests answered at once
  int max_connections = 4096;
  int64_t max_buffered_bytes = int64_t{256} << 20; // request bytes held, all connections
  double drain_timeout_s = 60;
  double ready_interval_s = 5;
  bool access_log = true;
  int replicas = 1; // > 1: a front end over this many replica processes
  double replica_start_timeout_s = 600;
};

// One key of the settings file: its name, its value's type ("string", "int",
// "number", "bool") and its help text. The flag of key `a_b` is `--a-b`.
struct SettingKey {
  const char *name;
  const char *type;
  const char *help;
};
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
