// One HTTP request's bookkeeping, shared by the route handlers: who called
// (the key id, never the key), its quota admission, and what the access log
// and metrics record when it ends. Internal to the serve library.
#pragma once

#include "serve/auth.h"
#include "serve/metrics.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::serve {

struct CallLog {
  KeyStore *quotas = nullptr;
  Metrics *metrics = nullptr;
  bool access_log = true;
  int key = -1;             // index in the key store; -1: none
  std::string key_id = "-"; // for the log
  bool quota_held = false;  // Admit succeeded; Release at the end
  std::chrono::steady_clock::time_point admitted_at{}; // when Admit succeeded
  std::string method, path;
  int status = 200;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string note; // e.g. "cancelled: disconnect"
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  CallLog() = default;
  CallLog(const CallLog &) = delete;
  CallLog &operator=(const CallLog &) = delete;
  // Releases the quota, counts the status and writes the access-log line.
  ~CallLog();
};

} // namespace kiln::serve
