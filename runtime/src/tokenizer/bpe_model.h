// The tokenizer.json "model" of type BPE: vocabulary, ranked merges, and the
// merge loop that turns one pre-tokenized word into ids.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/model.h"
#include "tokenizer/vocab.h"
#include "tokenizer/word_cache.h"

namespace kiln::tokenizer {

class BpeModel : public Model {
public:
  static StatusOr<std::unique_ptr<BpeModel>> FromJson(const Json &model);

  // Appends the ids of `word` (one pre-tokenized word) to *ids. Characters
  // missing from the vocabulary become their bytes' <0xXX> tokens when
  // byte_fallback is set and the vocabulary has all of them (SentencePiece
  // style), else unk_token, or are dropped without one, as in HF.
  Status Encode(const std::string &word, std::vector<int32_t> *ids) const override;

  int32_t TokenToId(std::string_view token) const override { return vocab_.TokenToId(token); }
  const std::string *IdToToken(int32_t id) const override { return vocab_.IdToToken(id); }
  int32_t max_id() const override { return vocab_.max_id(); }

private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  Status ParseMerges(const Json &merges);
  Status AddMerge(const std::string &a, const std::string &b, uint32_t rank,
                  const std::string &path);
  void MergeWord(const std::string &word, std::vector<int32_t> *ids) const;
  const Merge *FindMerge(int32_t a, int32_t b) const;

  Vocab vocab_;
  std::unordered_map<uint64_t, Merge> merges_; // key: left id << 32 | right id
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  int32_t byte_ids_[256]; // the id of "<0xXX>" per byte, -1 where absent (byte_fallback only)
  bool ignore_merges_ = false;

  WordCache cache_;
};

} // namespace kiln::tokenizer
