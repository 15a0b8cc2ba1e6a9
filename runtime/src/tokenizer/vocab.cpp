#include "tokenizer/vocab.h"

#include <algorithm>

namespace kiln::tokenizer {
namespace {

constexpr int64_t kMaxId = 1 << 24;

} // namespace

Status Vocab::Parse(const Json &vocab, const std::string &path) {
  if (!vocab.is_object())
    return FieldError(path, "expected an object");
  int64_t max_id = -1;
  for (const auto &[token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxId) {
      return FieldError(path + "[\"" + token + "\"]",
                        "expected an id in [0, " + std::to_string(kMaxId) + ")");
    }
    token_to_id_[token] = static_cast<int32_t>(id.get<int64_t>());
    max_token_bytes_ = std::max(max_token_bytes_, token.size());
    max_id = std::max(max_id, id.get<int64_t>());
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_id_.resize(id_to_token_.size());
  for (const auto &[token, id] : token_to_id_) {
    id_to_token_[id] = token;
    has_id_[id] = true;
  }
  return Status::Ok();
}

int32_t Vocab::TokenToId(std::string_view token) const {
  const auto it = token_to_id_.find(std::string(token));
  return it == token_to_id_.end() ? -1 : it->second;
}

const std::string *Vocab::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id])
    return nullptr;
  return &id_to_token_[id];
}

} // namespace kiln::tokenizer
