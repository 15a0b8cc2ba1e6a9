#include "tokenizer/bpe_model.h"

#include <queue>

#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// Fields that change results and that this BPE does not implement must be
// absent, null, or at their neutral value.
Status CheckUnsupported(const Json &model) {
  const Json *dropout = FindField(model, "dropout");
  if (dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return Unimplemented("tokenizer.json: model.dropout is not supported (it makes BPE random)");
  }
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json *v = FindField(model, key);
    if (v != nullptr && !(v->is_string() && v->get<std::string>().empty())) {
      return Unimplemented(std::string("tokenizer.json: model.") + key +
                           " is not supported (byte-level BPE does not use it)");
    }
  }
  return Status::Ok();
}

} // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::FromJson(const Json &model) {
  KILN_RETURN_IF_ERROR(CheckUnsupported(model));
  auto bpe = std::unique_ptr<BpeModel>(new BpeModel());
  const Json *vocab = FindField(model, "vocab");
  if (vocab == nullptr)
    return FieldError("model.vocab", "expected an object");
  KILN_RETURN_IF_ERROR(bpe->vocab_.Parse(*vocab, "model.vocab"));
  const Json *merges = FindField(model, "merges");
  if (merges == nullptr || !merges->is_array()) {
    return FieldError("model.merges", "expected an array");
  }
  KILN_RETURN_IF_ERROR(bpe->ParseMerges(*merges));
  KILN_RETURN_IF_ERROR(ReadBool(model, "ignore_merges", "model", false, &bpe->ignore_merges_));
  KILN_RETURN_IF_ERROR(ReadBool(model, "fuse_unk", "model", false, &bpe->fuse_unk_));
  KILN_RETURN_IF_ERROR(
      ReadBool(model, "byte_fallback", "model", false, &bpe->byte_fallback_));
  for (int b = 0; b < 256; ++b)
    bpe->byte_ids_[b] = bpe->byte_fallback_ ? bpe->TokenToId(ByteFallbackToken(b)) : -1;
  if (const Json *unk = FindField(model, "unk_token")) {
    if (!unk->is_string())
      return FieldError("model.unk_token", "expected a string");
    bpe->unk_id_ = bpe->TokenToId(unk->get<std::string>());
    if (bpe->unk_id_ < 0) {
      return FieldError("model.unk_token", "'" + unk->get<std::string>() + "' is not in the vocab");
    }
  }
  return bpe;
}

Status BpeModel::ParseMerges(const Json &merges) {
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Json &m = merges[rank];
    const std::string path = "model.merges[" + std::to_string(rank) + "]";
    // Two spellings: "a b" (older files) and ["a", "b"] (tokenizers >= 0.20).
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return FieldError(path, "expected \"left right\" with exactly one space");
      }
      KILN_RETURN_IF_ERROR(AddMerge(s.substr(0, space), s.substr(space + 1), rank, path));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      KILN_RETURN_IF_ERROR(AddMerge(m[0].get<std::string>(), m[1].get<std::string>(), rank, path));
    } else {
      return FieldError(path, "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  return Status::Ok();
}

Status BpeModel::AddMerge(const std::string &a, const std::string &b, uint32_t rank,
                          const std::string &path) {
  const int32_t a_id = TokenToId(a), b_id = TokenToId(b), new_id = TokenToId(a + b);
  if (a_id < 0 || b_id < 0 || new_id < 0) {
    const std::string &missing = a_id < 0 ? a : b_id < 0 ? b : a + b;
    return FieldError(path, "token '" + missing + "' is not in the vocab");
  }
  // HF collects merges into a map in file order, so a repeated pair ends up
  // with its last rank.
  merges_[PairKey(a_id, b_id)] = Merge{rank, new_id};
  return Status::Ok();
}

const BpeModel::Merge *BpeModel::FindMerge(int32_t a, int32_t b) const {
  const auto it = merges_.find(PairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

Status BpeModel::Encode(const std::string &word, std::vector<int32_t> *ids) const {
  if (ignore_merges_) { // Llama-3: a word that is itself a token is not merged
    const int32_t id = TokenToId(word);
    if (id >= 0) {
      ids->push_back(id);
      return Status::Ok();
    }
  }
  if (cache_.Lookup(word, ids))
    return Status::Ok();
  std::vector<int32_t> result;
  MergeWord(word, &result);
  ids->insert(ids->end(), result.begin(), result.end());
  cache_.Insert(word, std::move(result));
  return Status::Ok();
}

void BpeModel::MergeWord(const std::string &word, std::vector<int32_t> *ids) const {
  // One symbol per character, linked so that merged-away symbols drop out.
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  bool pending_unk = false;
  auto push = [&](int32_t id) {
    const int n = static_cast<int>(symbols.size());
    symbols.push_back({id, n - 1, n + 1, true});
  };
  size_t i = 0;
  while (i < word.size()) {
    const size_t len = CodepointLength(word, i);
    const int32_t id = TokenToId(std::string_view(word).substr(i, len));
    const size_t begin = i;
    i += len;
    if (id >= 0) {
      if (pending_unk)
        push(unk_id_);
      pending_unk = false;
      push(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (size_t k = begin; k < i; ++k)
        all = all && byte_ids_[static_cast<unsigned char>(word[k])] >= 0;
      if (all) {
        // HF pushes the byte tokens without first emitting a pending unk, so
        // an unk before them lands after them; kept for bit-exactness.
        for (size_t k = begin; k < i; ++k)
          push(byte_ids_[static_cast<unsigned char>(word[k])]);
        continue;
      }
    }
    if (unk_id_ >= 0) { // without unk_token HF drops the character
      if (pending_unk && !fuse_unk_)
        push(unk_id_);
      pending_unk = true;
    }
  }
  if (pending_unk)
    push(unk_id_);
  if (symbols.empty())
    return;
  symbols.back().next = -1;

  // HF's order: the lowest rank first, the leftmost on ties; queue entries made
  // stale by an earlier merge are recognised and skipped.
  struct Candidate {
    uint32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int left) {
    const int right = symbols[left].next;
    if (right < 0)
      return;
    if (const Merge *m = FindMerge(symbols[left].id, symbols[right].id)) {
      queue.push({m->rank, left, m->new_id});
    }
  };
  for (int s = 0; s + 1 < static_cast<int>(symbols.size()); ++s)
    consider(s);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (!left.alive || left.next < 0)
      continue;
    const Merge *m = FindMerge(left.id, symbols[left.next].id);
    if (m == nullptr || m->new_id != top.new_id)
      continue;
    Symbol &right = symbols[left.next];
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = top.pos;
    if (left.prev >= 0)
      consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol &s : symbols) {
    if (s.alive)
      ids->push_back(s.id);
  }
}

} // namespace kiln::tokenizer
