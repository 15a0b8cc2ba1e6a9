#include "serve/auth.h"

#include "sha256.h"

#include <nlohmann/json.hpp>

#include <sys/random.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace kiln::serve {
namespace {

constexpr std::chrono::seconds kWindow{60};

bool ParseHex(const std::string &hex, unsigned char out[32]) {
  if (hex.size() != 64)
    return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  for (int i = 0; i < 32; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

double Seconds(QuotaClock::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

StatusOr<std::string> NewApiKey() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status(StatusCode::kInternal, "getrandom failed: no randomness for a key");
    got += static_cast<size_t>(n);
  }
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string key = "kiln-";
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    acc = acc << 8 | b;
    bits += 8;
    while (bits >= 6) {
      key += kAlphabet[(acc >> (bits - 6)) & 63];
      bits -= 6;
    }
  }
  if (bits > 0)
    key += kAlphabet[(acc << (6 - bits)) & 63];
  return key;
}

std::string HashApiKey(const std::string &key) {
  Sha256 h;
  h.Update(key.data(), key.size());
  return h.HexDigest();
}

std::string KeyFileLine(const std::string &id, const std::string &key, bool admin) {
  nlohmann::ordered_json j = {
      {"id", id}, {"sha256", HashApiKey(key)}, {"rpm", 0}, {"tpm", 0}, {"max_concurrent", 0}};
  if (admin)
    j["admin"] = true;
  return j.dump();
}

StatusOr<std::unique_ptr<KeyStore>> KeyStore::Load(const std::string &path) {
  // As ssh does with authorized_keys: a file that others may write could be
  // given an admin key by any of them.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return InvalidArgument("cannot open the keys file '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return InvalidArgument("the keys file '" + path + "' is not a regular file");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return InvalidArgument("the keys file '" + path +
                           "' may be written by its group or by anyone, who could add a key: "
                           "chmod go-w it (e.g. chmod 600)");
  std::ifstream in(path);
  if (!in)
    return InvalidArgument("cannot open the keys file '" + path + "'");
  std::vector<ApiKey> keys;
  std::set<std::string> ids;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#')
      continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return InvalidArgument(where + "not a JSON object");
    ApiKey k;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string &name = it.key();
      if (name == "id" && it->is_string()) {
        k.id = it->get<std::string>();
      } else if (name == "sha256" && it->is_string()) {
        if (!ParseHex(it->get<std::string>(), k.hash))
          return InvalidArgument(where + "sha256 must be 64 hex digits (the key's hash; never "
                                         "the key itself)");
      } else if ((name == "rpm" || name == "tpm" || name == "max_concurrent") &&
                 it->is_number_integer() && it->get<int64_t>() >= 0) {
        (name == "rpm" ? k.rpm : name == "tpm" ? k.tpm : k.max_concurrent) = it->get<int64_t>();
      } else if (name == "admin" && it->is_boolean()) {
        k.admin = it->get<bool>();
      } else if (name == "id" || name == "sha256" || name == "rpm" || name == "tpm" ||
                 name == "max_concurrent" || name == "admin") {
        return InvalidArgument(where + "'" + name + "' has the wrong type");
      } else {
        return InvalidArgument(where + "unknown key '" + name +
                               "' (id, sha256, rpm, tpm, max_concurrent, admin)");
      }
    }
    if (k.id.empty() || !j.contains("sha256"))
      return InvalidArgument(where + "needs \"id\" and \"sha256\"");
    if (!ids.insert(k.id).second)
      return InvalidArgument(where + "key id '" + k.id + "' appears twice");
    keys.push_back(k);
  }
  if (keys.empty())
    return InvalidArgument("the keys file '" + path + "' holds no key");
  return FromKeys(std::move(keys));
}

std::unique_ptr<KeyStore> KeyStore::FromKeys(std::vector<ApiKey> keys) {
  auto store = std::unique_ptr<KeyStore>(new KeyStore());
  for (ApiKey &k : keys) {
    State s;
    s.key = std::move(k);
    store->keys_.push_back(std::move(s));
  }
  return store;
}

int KeyStore::Authenticate(const std::string &presented) const {
  Sha256 h;
  h.Update(presented.data(), presented.size());
  unsigned char digest[32];
  h.Digest(digest);
  int found = -1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    // volatile keeps the compiler from turning the loop into an early exit.
    volatile unsigned char diff = 0;
    for (int b = 0; b < 32; ++b)
      diff = diff | (digest[b] ^ keys_[i].key.hash[b]);
    if (diff == 0)
      found = static_cast<int>(i);
  }
  return found;
}

void KeyStore::Expire(State &s, QuotaClock::time_point now) {
  while (!s.requests.empty() && now - s.requests.front() >= kWindow)
    s.requests.pop_front();
  while (!s.tokens.empty() && now - s.tokens.front().first >= kWindow) {
    s.token_sum -= s.tokens.front().second;
    s.tokens.pop_front();
  }
}

bool KeyStore::Admit(int index, QuotaClock::time_point now, std::string *which,
                     double *retry_after_s) {
  std::lock_guard<std::mutex> l(mu_);
  State &s = keys_[index];
  Expire(s, now);
  if (s.key.max_concurrent > 0 && s.concurrent >= s.key.max_concurrent) {
    *which = "concurrency";
    *retry_after_s = 1;
    return false;
  }
  if (s.key.rpm > 0 && static_cast<int64_t>(s.requests.size()) >= s.key.rpm) {
    *which = "rpm";
    *retry_after_s = Seconds(s.requests.front() + kWindow - now);
    return false;
  }
  // Tokens are known only when a request ends, so a key is refused once its
  // last minute's usage reached the quota, until enough of it ages out.
  if (s.key.tpm > 0 && s.token_sum >= s.key.tpm) {
    *which = "tpm";
    int64_t over = s.token_sum - s.key.tpm;
    double wait = 1;
    for (const auto &[t, n] : s.tokens) {
      wait = Seconds(t + kWindow - now);
      if ((over -= n) < 0)
        break;
    }
    *retry_after_s = wait;
    return false;
  }
  s.requests.push_back(now);
  ++s.concurrent;
  return true;
}

void KeyStore::Release(int index, int64_t tokens, QuotaClock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  State &s = keys_[index];
  --s.concurrent;
  if (tokens > 0) {
    s.tokens.emplace_back(now, tokens);
    s.token_sum += tokens;
  }
}

void KeyStore::Refund(int index, QuotaClock::time_point admitted_at) {
  std::lock_guard<std::mutex> l(mu_);
  State &s = keys_[index];
  --s.concurrent;
  // The newest admission at that time (Admit appends in time order).
  for (auto it = s.requests.rbegin(); it != s.requests.rend(); ++it)
    if (*it == admitted_at) {
      s.requests.erase(std::next(it).base());
      break;
    }
}

} // namespace kiln::serve
