#include "serve/settings.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <cmath>
#include <cstdlib>
#include <functional>

namespace kiln::serve {
namespace {

using Setter = std::function<Status(const nlohmann::json &, ServeSettings *)>;

struct Entry {
  SettingKey key;
  Setter set;
};

Status WrongType(const std::string &key, const char *want, const nlohmann::json &v) {
  return InvalidArgument("setting '" + key + "' expects " + want + ", got " + v.dump());
}

Setter String(std::string ServeSettings::*field, const char *name) {
  return [field, name](const nlohmann::json &v, ServeSettings *s) -> Status {
    if (!v.is_string())
      return WrongType(name, "a string", v);
    s->*field = v.get<std::string>();
    return Status::Ok();
  };
}

template <typename T>
Setter Int(T ServeSettings::*field, const char *name, int64_t lo, int64_t hi) {
  return [=](const nlohmann::json &v, ServeSettings *s) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      return InvalidArgument("setting '" + std::string(name) + "' expects an integer in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
    s->*field = static_cast<T>(v.get<int64_t>());
    return Status::Ok();
  };
}

Setter Seconds(double ServeSettings::*field, const char *name) {
  return [=](const nlohmann::json &v, ServeSettings *s) -> Status {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      return InvalidArgument("setting '" + std::string(name) +
                             "' expects a positive number of seconds, got " + v.dump());
    s->*field = v.get<double>();
    return Status::Ok();
  };
}

Setter Bool(bool ServeSettings::*field, const char *name) {
  return [=](const nlohmann::json &v, ServeSettings *s) -> Status {
    if (!v.is_boolean())
      return WrongType(name, "true or false", v);
    s->*field = v.get<bool>();
    return Status::Ok();
  };
}

const std::vector<Entry> &Entries() {
  static const std::vector<Entry> kEntries = {
      {{"host", "string", "address to listen on (default 127.0.0.1; 0.0.0.0 for all)"},
       String(&ServeSettings::host, "host")},
      {{"port", "int", "TCP port (default 8000; 0 picks a free one and prints it)"},
       Int(&ServeSettings::port, "port", 0, 65535)},
      {{"api_keys", "string",
        "keys file (docs/serve.md; `kiln keys new NAME` makes a key); required unless "
        "allow_no_auth"},
       String(&ServeSettings::api_keys, "api_keys")},
      {{"allow_no_auth", "bool",
        "serve without keys: every route is open (for a trusted loopback only)"},
       Bool(&ServeSettings::allow_no_auth, "allow_no_auth")},
      {{"plan", "string",
        "the plan to serve when the PLAN argument is not given (the argument wins); on "
        "SIGHUP the settings file is read again and the server switches to its plan (docs/serve.md)"},
       String(&ServeSettings::plan, "plan")},
      {{"model_name", "string",
        "the model id of /v1/models and responses (default: the plan file's name)"},
       String(&ServeSettings::model_name, "model_name")},
      {{"max_queue", "int",
        "requests admitted at once, waiting or running (default 256); past it, 503 with "
        "Retry-After at once"},
       Int(&ServeSettings::max_queue, "max_queue", 1, 1 << 20)},
      {{"request_timeout_s", "number",
        "a request's deadline when it gives no `timeout` field (default 600)"},
       Seconds(&ServeSettings::request_timeout_s, "request_timeout_s")},
      {{"max_request_timeout_s", "number",
        "the largest `timeout` a request may ask for (default 3600)"},
       Seconds(&ServeSettings::max_request_timeout_s, "max_request_timeout_s")},
      {{"max_body_bytes", "int", "largest request body; bigger gets 413 (default 4194304)"},
       Int(&ServeSettings::max_body_bytes, "max_body_bytes", 1024, int64_t{1} << 32)},
      {{"max_prompt_bytes", "int",
        "largest prompt text (each prompt, or the rendered chat) in bytes; bigger gets 400 "
        "before any tokenizing (default 1048576). A prompt that does not fit the context is "
        "refused as soon as tokenizing passes it"},
       Int(&ServeSettings::max_prompt_bytes, "max_prompt_bytes", 1, int64_t{1} << 32)},
      {{"max_header_bytes", "int",
        "largest request head (request line and headers); bigger gets 431 as soon as it "
        "passes the limit (default 32768)"},
       Int(&ServeSettings::max_header_bytes, "max_header_bytes", 1024, int64_t{1} << 24)},
      {{"max_headers", "int", "most header fields a request may have; more gets 431 (default 100)"},
       Int(&ServeSettings::max_headers, "max_headers", 8, 100000)},
      {{"header_timeout_s", "number",
        "how long a client may take to send a request's head, from its first byte (default 30); "
        "past it, 408 and the connection is closed"},
       Seconds(&ServeSettings::header_timeout_s, "header_timeout_s")},
      {{"body_timeout_s", "number",
        "how long a client may take to send a request's body, from the end of its head "
        "(default 60); past it, 408"},
       Seconds(&ServeSettings::body_timeout_s, "body_timeout_s")},
      {{"read_timeout_s", "number",
        "the longest a client may send nothing in the middle of a request, or after connecting "
        "(default 10); past it, 408 (or, before any byte, the connection is closed)"},
       Seconds(&ServeSettings::read_timeout_s, "read_timeout_s")},
      {{"keep_alive_timeout_s", "number",
        "how long an idle connection is kept open between requests (default 5)"},
       Seconds(&ServeSettings::keep_alive_timeout_s, "keep_alive_timeout_s")},
      {{"write_timeout_s", "number",
        "how long a write to a client may make no progress before the response (and its "
        "request) is cut off (default 30)"},
       Seconds(&ServeSettings::write_timeout_s, "write_timeout_s")},
      {{"http_threads", "int",
        "requests answered at once, streams included (default 128); a connection holds one "
        "only once its whole request has arrived, so slow clients hold none"},
       Int(&ServeSettings::http_threads, "http_threads", 2, 1 << 14)},
      {{"max_connections", "int",
        "open client connections at most (default 4096); past it, 503 at once. The "
        "descriptor limit is raised to fit, when the system allows"},
       Int(&ServeSettings::max_connections, "max_connections", 16, 1 << 20)},
      {{"max_buffered_bytes", "int",
        "request bytes the server holds for all connections together, heads and bodies not yet "
        "answered (default 268435456); a request that would pass it gets 503. With "
        "max_connections it bounds the memory clients can make the server use (docs/serve.md)"},
       Int(&ServeSettings::max_buffered_bytes, "max_buffered_bytes", int64_t{1} << 20,
           int64_t{1} << 40)},
      {{"drain_timeout_s", "number",
        "on SIGTERM, how long accepted requests may run before they are cancelled "
        "(default 60)"},
       Seconds(&ServeSettings::drain_timeout_s, "drain_timeout_s")},
      {{"ready_interval_s", "number",
        "/ready runs a fresh 1-token probe when no engine step succeeded this recently "
        "(default 5)"},
       Seconds(&ServeSettings::ready_interval_s, "ready_interval_s")},
      {{"access_log", "bool",
        "one stderr line per request: key id, route, status, tokens "
        "(default true)"},
       Bool(&ServeSettings::access_log, "access_log")},
      {{"replicas", "int",
        "engine processes (default 1: this process serves). N > 1: this process becomes a "
        "front end (keys, quotas, admission, access log, metrics, drain) over N replica "
        "processes on loopback, each request to the least-loaded one; a replica that crashes "
        "is restarted (docs/serve.md#replicas). Not with --tp"},
       Int(&ServeSettings::replicas, "replicas", 1, 64)},
      {{"replica_start_timeout_s", "number",
        "with replicas > 1: how long a replica may take from its start to being ready "
        "(default 600); past it, it is killed and counts as a crash"},
       Seconds(&ServeSettings::replica_start_timeout_s, "replica_start_timeout_s")},
  };
  return kEntries;
}

const Entry *Find(const std::string &key) {
  for (const Entry &e : Entries())
    if (key == e.key.name)
      return &e;
  return nullptr;
}

} // namespace

const std::vector<SettingKey> &SettingKeys() {
  static const std::vector<SettingKey> kKeys = [] {
    std::vector<SettingKey> keys;
    for (const Entry &e : Entries())
      keys.push_back(e.key);
    return keys;
  }();
  return kKeys;
}

Status ApplySetting(const std::string &key, const nlohmann::json &value, ServeSettings *s) {
  const Entry *e = Find(key);
  if (e == nullptr)
    return InvalidArgument("unknown setting '" + key + "' (kiln serve --help lists them)");
  return e->set(value, s);
}

Status ApplySettingsJson(const nlohmann::json &object, ServeSettings *s) {
  if (!object.is_object())
    return InvalidArgument("the settings file must hold a JSON object");
  for (auto it = object.begin(); it != object.end(); ++it)
    KILN_RETURN_IF_ERROR(ApplySetting(it.key(), it.value(), s));
  return Status::Ok();
}

Status ApplySettingText(const std::string &key, const std::string &text, ServeSettings *s) {
  const Entry *e = Find(key);
  if (e == nullptr)
    return InvalidArgument("unknown setting '" + key + "'");
  const std::string type = e->key.type;
  nlohmann::json v = text;
  if (type == "int" || type == "number") {
    char *end = nullptr;
    errno = 0;
    if (type == "int") {
      long long n = std::strtoll(text.c_str(), &end, 10);
      v = static_cast<int64_t>(n);
    } else {
      v = std::strtod(text.c_str(), &end);
    }
    if (text.empty() || errno || *end)
      return InvalidArgument("--" + key + " expects a number, got '" + text + "'");
  } else if (type == "bool") {
    if (text != "true" && text != "false")
      return InvalidArgument("--" + key + " expects true or false, got '" + text + "'");
    v = text == "true";
  }
  return e->set(v, s);
}

Status CheckSettings(const ServeSettings &s) {
  if (s.request_timeout_s > s.max_request_timeout_s)
    return InvalidArgument("request_timeout_s (" + std::to_string(s.request_timeout_s) +
                           ") is larger than max_request_timeout_s (" +
                           std::to_string(s.max_request_timeout_s) + ")");
  if (s.max_buffered_bytes < s.max_body_bytes + s.max_header_bytes)
    return InvalidArgument("max_buffered_bytes (" + std::to_string(s.max_buffered_bytes) +
                           ") must hold one whole request: max_body_bytes + max_header_bytes (" +
                           std::to_string(s.max_body_bytes + s.max_header_bytes) + ")");
  if (s.api_keys.empty() && !s.allow_no_auth)
    return InvalidArgument("no --api-keys file: give one (kiln keys new NAME makes a key), or "
                           "--allow-no-auth true to serve without keys");
  return Status::Ok();
}

std::string SettingsUsage() {
  std::string out;
  for (const SettingKey &k : SettingKeys()) {
    std::string flag = std::string("  --") + k.name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    flag += std::string(" ") + (std::string(k.type) == "string" ? "VALUE" : k.type);
    if (flag.size() < 30)
      flag.resize(30, ' ');
    else
      flag += "\n" + std::string(30, ' ');
    out += flag + k.help + "\n";
  }
  return out;
}

} // namespace kiln::serve

namespace kiln {

const std::vector<ServeSettingKey> &ServeSettingKeys() { return serve::SettingKeys(); }

std::string ServeSettingsUsage() { return serve::SettingsUsage(); }

Status ApplyServeSettingsFile(const std::string &path, ServeSettings *s) {
  std::ifstream file(path);
  if (!file)
    return InvalidArgument("cannot open --config '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("--config " + path + ": not a JSON object");
  Status st = serve::ApplySettingsJson(j, s);
  if (!st.ok())
    return InvalidArgument("--config " + path + ": " + st.message());
  return Status::Ok();
}

Status ApplyServeSetting(const std::string &key, const std::string &text, ServeSettings *s) {
  return serve::ApplySettingText(key, text, s);
}

Status CheckServeSettings(const ServeSettings &s) { return serve::CheckSettings(s); }

} // namespace kiln
