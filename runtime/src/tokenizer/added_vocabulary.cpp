#include "tokenizer/added_vocabulary.h"

#include <algorithm>

#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// Rust's char::is_alphanumeric or '_': what single_word treats as a word character.
bool IsWordChar(char32_t c) {
  static const auto *regex = [] {
    auto r = Regex::Compile(R"(^[\p{Alphabetic}\p{N}_]$)");
    if (!r.ok())
      r = Regex::Compile(R"(^[\p{L}\p{N}_]$)"); // PCRE2 before 10.40
    return r.ok() ? r.value().release() : nullptr;
  }();
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  }
  std::string s;
  AppendUtf8(c, &s);
  std::vector<std::pair<size_t, size_t>> m;
  return regex != nullptr && regex->FindAll(s, &m).ok() && !m.empty();
}

char32_t LastCodepoint(std::string_view text, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80)
    --i;
  return NextCodepoint(text, &i);
}

} // namespace

void AddedVocabulary::Trie::Insert(const std::string &pattern, int token_index) {
  int node = 0;
  for (unsigned char c : pattern) {
    auto it = next[node].find(c);
    if (it == next[node].end()) {
      it = next[node].emplace(c, static_cast<int>(next.size())).first;
      next.emplace_back();
      token.push_back(-1);
    }
    node = it->second;
  }
  // Two tokens with the same text: the first one listed wins the match.
  if (token[node] < 0)
    token[node] = token_index;
  if (!pattern.empty())
    first_byte[static_cast<unsigned char>(pattern[0])] = true;
}

bool AddedVocabulary::Trie::LongestAt(std::string_view text, size_t pos, int *token_index,
                                      size_t *len) const {
  if (!first_byte[static_cast<unsigned char>(text[pos])])
    return false;
  int node = 0;
  bool found = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto it = next[node].find(static_cast<unsigned char>(text[i]));
    if (it == next[node].end())
      break;
    node = it->second;
    if (token[node] >= 0) {
      *token_index = token[node];
      *len = i + 1 - pos;
      found = true;
    }
  }
  return found;
}

Status AddedVocabulary::Parse(const Json *added_tokens, const Normalizer &normalizer) {
  if (added_tokens == nullptr)
    return Status::Ok();
  if (!added_tokens->is_array())
    return FieldError("added_tokens", "expected an array");
  for (size_t i = 0; i < added_tokens->size(); ++i) {
    const Json &j = (*added_tokens)[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    const Json *id = FindField(j, "id");
    if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        id->get<int64_t>() >= (int64_t{1} << 24)) {
      return FieldError(path + ".id", "expected an id in [0, 2^24)");
    }
    t.id = static_cast<int32_t>(id->get<int64_t>());
    KILN_RETURN_IF_ERROR(ReadString(j, "content", path, &t.content));
    if (t.content.empty())
      return FieldError(path + ".content", "must not be empty");
    KILN_RETURN_IF_ERROR(ReadBool(j, "special", path, false, &t.special));
    KILN_RETURN_IF_ERROR(ReadBool(j, "single_word", path, false, &t.single_word));
    KILN_RETURN_IF_ERROR(ReadBool(j, "lstrip", path, false, &t.lstrip));
    KILN_RETURN_IF_ERROR(ReadBool(j, "rstrip", path, false, &t.rstrip));
    // HF's default: special tokens match the raw text, others the normalized.
    KILN_RETURN_IF_ERROR(ReadBool(j, "normalized", path, !t.special, &t.normalized));
    by_id_[t.id] = tokens_.size();
    by_content_.emplace(t.content, t.id);
    tokens_.push_back(std::move(t));
  }
  for (size_t i = 0; i < tokens_.size(); ++i) {
    AddedToken &t = tokens_[i];
    // Normalized tokens are looked for in normalized text, so normalize them too.
    if (t.normalized) {
      // A token that normalizes to nothing (e.g. only control characters under
      // BertNormalizer) can never match.
      t.token = normalizer.Normalize(t.content);
      if (!t.token.empty())
        normalized_.Insert(t.token, static_cast<int>(i));
    } else {
      t.token = t.content;
      raw_.Insert(t.content, static_cast<int>(i));
    }
  }
  return Status::Ok();
}

const AddedToken *AddedVocabulary::FindById(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

int32_t AddedVocabulary::FindByContent(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : it->second;
}

// Applies the token's flags to a match at [*begin, *end); false if single_word
// rejects it. `covered` is where the previous match ended: lstrip never reaches
// back past it.
bool AddedVocabulary::Accept(const AddedToken &t, std::string_view text, size_t *begin, size_t *end,
                             size_t covered) const {
  if (t.single_word) {
    const bool left_ok = *begin == 0 || !IsWordChar(LastCodepoint(text, *begin));
    size_t k = *end;
    const bool right_ok = *end == text.size() || !IsWordChar(NextCodepoint(text, &k));
    if (!left_ok || !right_ok)
      return false;
  }
  if (t.lstrip) {
    size_t b = *begin;
    while (b > 0) {
      size_t prev = b - 1;
      while (prev > 0 && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80)
        --prev;
      size_t k = prev;
      if (!IsRustWhitespace(NextCodepoint(text, &k)))
        break;
      b = prev;
    }
    *begin = std::max(b, covered);
  }
  if (t.rstrip) {
    size_t e = *end;
    while (e < text.size()) {
      size_t k = e;
      if (!IsRustWhitespace(NextCodepoint(text, &k)))
        break;
      e = k;
    }
    *end = e;
  }
  return true;
}

void AddedVocabulary::Split(std::string_view text, bool normalized,
                            std::vector<Segment> *out) const {
  if (text.empty()) { // HF still hands one (empty) piece of text on
    out->push_back({-1, 0, 0});
    return;
  }
  const Trie &trie = normalized ? normalized_ : raw_;
  // Leftmost-longest, non-overlapping matches, as HF's Aho-Corasick finds them.
  size_t covered = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int index;
    size_t len;
    if (!trie.LongestAt(text, pos, &index, &len)) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + len;
    pos = end; // the next search starts after the match itself, whatever the flags do
    if (!Accept(tokens_[index], text, &begin, &end, covered))
      continue;
    if (covered < begin)
      out->push_back({-1, covered, begin});
    out->push_back({tokens_[index].id, begin, end});
    covered = end;
  }
  if (covered != text.size())
    out->push_back({-1, covered, text.size()});
}

} // namespace kiln::tokenizer
