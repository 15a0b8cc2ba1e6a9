// kiln serve (docs/serve.md): an OpenAI-compatible HTTP server over one
// plan, or a front end over replica processes of it. The tool gathers the
// settings from a JSON file and flags and calls Serve; everything else (the
// engine loop, HTTP, keys and quotas, metrics, signals, plan switching,
// replicas, tensor-parallel ranks) is behind this header.
#pragma once

#include "kiln/pipeline.h"
#include "kiln/rank.h"
#include "kiln/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// The server's settings: defaults, then a JSON settings file, then flags.
// Every key is listed in ServeSettingKeys() with its help text.
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

struct ServeSettingKey {
  const char *name; // the JSON key; the flag is --name with '-' for '_'
  const char *type;
  const char *help;
};
const std::vector<ServeSettingKey> &ServeSettingKeys();
// The settings' --help text, one block per key.
std::string ServeSettingsUsage();
// A JSON object file of settings over `s`: InvalidArgument naming the file
// and the key for an unreadable file, an unknown key or a bad value.
Status ApplyServeSettingsFile(const std::string &path, ServeSettings *s);
// One setting from text (a flag's value), parsed as its type.
Status ApplyServeSetting(const std::string &key, const std::string &text, ServeSettings *s);
// Settings that contradict each other (no keys without allow_no_auth, ...).
Status CheckServeSettings(const ServeSettings &s);

// What the tool adds to the settings.
struct ServeOptions {
  std::string plan_path;   // PLAN, or ServeSettings::plan
  std::string config_path; // the settings file, read again on SIGHUP; may be empty
  PipelineOptions engine;  // engine.backend: the device (kiln/device.h)
  // false: a plan without the ragged interface runs on the cpu, whatever
  // engine.backend's default said (the engine drives dense plans only there).
  bool device_given = false;
  RankOptions ranks; // --tp: rank 0 serves, the other ranks follow its steps
  // ServeSettings::replicas > 1: the arguments after `kiln serve` that each
  // replica process is started with (the supervisor overrides what it must).
  std::vector<std::string> replica_args;
};

// Runs the server until SIGTERM or SIGINT drains it (accepted requests
// finish, up to drain_timeout_s); SIGHUP switches the plan
// (ServeSettings::plan in the settings file, else the plan file read
// again). Prints "kiln serve: NAME on http://HOST:PORT (...)" on stdout
// once it listens. An error before it listens (a bad plan, a port in use,
// a failed readiness step) is returned.
Status Serve(const ServeSettings &settings, const ServeOptions &options);

// A fresh API key, and the line of the keys file that admits it (its
// SHA-256, never the key; docs/serve.md).
StatusOr<std::string> NewApiKey();
std::string ApiKeyFileLine(const std::string &name, const std::string &key);

} // namespace kiln
