// The auth boundary: API keys from a keys file that holds only their SHA-256
// hashes, compared in constant time, and per-key quotas (requests per
// minute, tokens per minute, concurrent requests).
//
// Keys file: JSON Lines, one key per line (blank lines and lines starting
// with '#' are skipped):
//   {"id": "alice", "sha256": "<64 hex digits>", "rpm": 60, "tpm": 100000, "max_concurrent": 4}
// A quota of 0 (or absent) is no limit. `kiln keys new NAME` prints a fresh
// key and such a line.
#pragma once

#include "kiln/status.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::serve {

using QuotaClock = std::chrono::steady_clock;

struct ApiKey {
  std::string id;
  unsigned char hash[32] = {};
  int64_t rpm = 0, tpm = 0, max_concurrent = 0;
  bool admin = false; // may call /admin/* (switching the served plan)
};

// A fresh key: "kiln-" and 43 characters of base64url from 32 random bytes
// (getrandom). Internal when the system has no randomness to give.
StatusOr<std::string> NewApiKey();
// SHA-256 of `key` as 64 lowercase hex digits.
std::string HashApiKey(const std::string &key);
// The keys-file line for `key` named `id`, with no quotas.
std::string KeyFileLine(const std::string &id, const std::string &key, bool admin = false);

class KeyStore {
public:
  // InvalidArgument naming the file and line for a malformed entry or a
  // duplicate id.
  static StatusOr<std::unique_ptr<KeyStore>> Load(const std::string &path);
  static std::unique_ptr<KeyStore> FromKeys(std::vector<ApiKey> keys);

  // The index of the key whose hash matches `presented`, or -1. Every
  // stored hash is compared, each in constant time, so the time taken says
  // nothing about which key or how many bytes matched.
  int Authenticate(const std::string &presented) const;
  const ApiKey &key(int index) const { return keys_[index].key; }

  // Admission under key `index`'s quotas. On refusal returns false, with
  // the quota's name ("rpm", "tpm", "concurrency") and the seconds until a
  // retry could pass. On success the request counts against rpm and
  // concurrency until Release.
  bool Admit(int index, QuotaClock::time_point now, std::string *which, double *retry_after_s);
  // Ends an admitted request that used `tokens` (prompt + completion).
  void Release(int index, int64_t tokens, QuotaClock::time_point now);
  // Undoes the admission made at `admitted_at` of a request then refused
  // before it ran (the server was full, the engine refused its prompt): it
  // counts against neither rpm nor concurrency.
  void Refund(int index, QuotaClock::time_point admitted_at);

private:
  struct State {
    ApiKey key;
    std::deque<QuotaClock::time_point> requests;                   // last minute's admissions
    std::deque<std::pair<QuotaClock::time_point, int64_t>> tokens; // last minute's usage
    int64_t token_sum = 0;
    int64_t concurrent = 0;
  };
  void Expire(State &s, QuotaClock::time_point now);

  std::mutex mu_;
  std::vector<State> keys_;
};

} // namespace kiln::serve
