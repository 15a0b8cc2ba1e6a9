// Ids of recently encoded words: words recur constantly in text, so the BPE
// and Unigram models keep their results (bounded, thread-safe).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::tokenizer {

class WordCache {
public:
  // Appends the cached ids of `word` to *ids; false when not cached.
  bool Lookup(const std::string &word, std::vector<int32_t> *ids) const {
    if (word.size() > kMaxWordBytes)
      return false;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = map_.find(word);
    if (it == map_.end())
      return false;
    ids->insert(ids->end(), it->second.begin(), it->second.end());
    return true;
  }
  // Keeps `ids` for `word`; a full cache starts over. Long words (rare) are
  // not kept, so they cannot fill it.
  void Insert(const std::string &word, std::vector<int32_t> ids) const {
    if (word.size() > kMaxWordBytes)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= kCapacity)
      map_.clear();
    map_.emplace(word, std::move(ids));
  }

private:
  static constexpr size_t kCapacity = 1 << 16;
  static constexpr size_t kMaxWordBytes = 256;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> map_;
};

} // namespace kiln::tokenizer
