#include "tokenizer/unigram_model.h"

#include <algorithm>
#include <limits>

#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

constexpr double kUnknownPenalty = 10.0; // below the lowest piece score, as HF and SentencePiece
constexpr size_t kMaxPieces = size_t{1} << 24; // keeps per-id tables small, as Vocab does

} // namespace

StatusOr<std::unique_ptr<UnigramModel>> UnigramModel::FromJson(const Json &model) {
  auto m = std::unique_ptr<UnigramModel>(new UnigramModel());
  const Json *vocab = FindField(model, "vocab");
  if (vocab == nullptr || !vocab->is_array() || vocab->empty())
    return FieldError("model.vocab", "expected a non-empty array of [piece, score]");
  if (vocab->size() > kMaxPieces)
    return FieldError("model.vocab", "more than 2^24 pieces");
  m->pieces_.reserve(vocab->size());
  m->scores_.reserve(vocab->size());
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab->size(); ++i) {
    const Json &e = (*vocab)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
      return FieldError("model.vocab[" + std::to_string(i) + "]", "expected [piece, score]");
    }
    m->pieces_.push_back(e[0].get<std::string>());
    m->scores_.push_back(e[1].get<double>());
    min_score = std::min(min_score, m->scores_.back());
  }
  m->unk_score_ = min_score - kUnknownPenalty;
  std::fill(std::begin(m->root_children_), std::end(m->root_children_), -1);
  for (size_t i = 0; i < m->pieces_.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    m->by_piece_[m->pieces_[i]] = id; // a repeated piece keeps its last id, as in HF
    m->Insert(m->pieces_[i], id);
  }
  if (const Json *unk = FindField(model, "unk_id")) {
    if (!unk->is_number_integer() || unk->get<int64_t>() < 0 ||
        unk->get<int64_t>() >= static_cast<int64_t>(m->pieces_.size())) {
      return FieldError("model.unk_id", "expected the index of a vocab entry");
    }
    m->unk_id_ = unk->get<int32_t>();
  }
  KILN_RETURN_IF_ERROR(ReadBool(model, "byte_fallback", "model", false, &m->byte_fallback_));
  for (int b = 0; b < 256; ++b)
    m->byte_ids_[b] = m->byte_fallback_ ? m->TokenToId(ByteFallbackToken(b)) : -1;
  return m;
}

void UnigramModel::Insert(const std::string &piece, int32_t id) {
  if (piece.empty())
    return; // HF's trie never reports the empty prefix
  int32_t node = 0;
  for (unsigned char b : piece) {
    int32_t child = Child(node, b);
    if (child < 0) {
      child = static_cast<int32_t>(nodes_.size());
      Node n;
      n.byte = b;
      if (node == 0) {
        root_children_[b] = child;
      } else {
        n.next_sibling = nodes_[node].first_child;
        nodes_[node].first_child = child;
      }
      nodes_.push_back(n);
    }
    node = child;
  }
  nodes_[node].piece = id;
}

int32_t UnigramModel::Child(int32_t node, unsigned char byte) const {
  if (node == 0)
    return root_children_[byte];
  for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling) {
    if (nodes_[c].byte == byte)
      return c;
  }
  return -1;
}

int32_t UnigramModel::TokenToId(std::string_view token) const {
  const auto it = by_piece_.find(token);
  return it == by_piece_.end() ? -1 : it->second;
}

const std::string *UnigramModel::IdToToken(int32_t id) const {
  return id >= 0 && id < static_cast<int32_t>(pieces_.size()) ? &pieces_[id] : nullptr;
}

Status UnigramModel::Encode(const std::string &word, std::vector<int32_t> *ids) const {
  if (word.empty() || cache_.Lookup(word, ids))
    return Status::Ok();
  std::vector<int32_t> result;
  bool missing_unk = false;
  EncodeWord(word, &result, &missing_unk);
  if (missing_unk) {
    return InvalidArgument("tokenizer: the text has a character that no Unigram piece covers, "
                           "and the model has no unk_id");
  }
  ids->insert(ids->end(), result.begin(), result.end());
  cache_.Insert(word, std::move(result));
  return Status::Ok();
}

void UnigramModel::EncodeWord(const std::string &word, std::vector<int32_t> *ids,
                              bool *missing_unk) const {
  // best[e]: the best path over word[0, e): its score, where its last piece
  // starts, its id, and whether it is unknown (unk_id_, or a character that
  // no piece covers).
  struct Best {
    double score = 0;
    size_t start = 0;
    int32_t id = -1;
    bool reached = false;
    bool unknown = false;
  };
  const size_t n = word.size();
  std::vector<Best> best(n + 1);
  best[0].reached = true;
  auto offer = [&](size_t end, size_t start, int32_t id, double score, bool unknown) {
    Best &b = best[end];
    // Strictly greater: on a tie the path found first stays, as in HF.
    if (!b.reached || score > b.score)
      b = Best{score, start, id, true, unknown};
  };
  for (size_t start = 0; start < n;) {
    const double base = best[start].score;
    const size_t char_len = CodepointLength(word, start);
    bool covers_char = false;
    // Every piece that is a prefix of word[start, n), shortest first.
    int32_t node = 0;
    for (size_t k = start; k < n; ++k) {
      node = Child(node, static_cast<unsigned char>(word[k]));
      if (node < 0)
        break;
      const int32_t id = nodes_[node].piece;
      if (id < 0)
        continue;
      const size_t end = k + 1;
      // The piece's score is the score of the id HF maps its text to.
      const int32_t mapped = TokenToId(pieces_[id]);
      // HF fuses by id: the unk piece itself, spelled out in the text, joins
      // a run of unknown characters too.
      offer(end, start, mapped, base + scores_[mapped], mapped == unk_id_);
      covers_char = covers_char || end - start == char_len;
    }
    if (!covers_char) {
      // HF needs unk_id as soon as a character has no piece of its own, even
      // when a longer piece covers it.
      *missing_unk = *missing_unk || unk_id_ < 0;
      offer(start + char_len, start, unk_id_, base + unk_score_, true);
    }
    start += char_len;
  }
  // Back from the end: runs of unknown pieces fuse into one.
  std::vector<std::pair<size_t, size_t>> spans; // [start, end), last first
  std::vector<bool> unknown;
  for (size_t end = n; end > 0;) {
    const Best &b = best[end];
    if (b.unknown && !unknown.empty() && unknown.back()) {
      spans.back().first = b.start;
    } else {
      spans.push_back({b.start, end});
      unknown.push_back(b.unknown);
    }
    end = b.start;
  }
  for (size_t i = spans.size(); i-- > 0;) {
    AppendPiece(std::string_view(word).substr(spans[i].first, spans[i].second - spans[i].first),
                ids, missing_unk);
  }
}

void UnigramModel::AppendPiece(std::string_view piece, std::vector<int32_t> *ids,
                               bool *missing_unk) const {
  const int32_t id = TokenToId(piece);
  if (id >= 0) {
    ids->push_back(id);
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (unsigned char c : piece)
      all = all && byte_ids_[c] >= 0;
    if (all) {
      for (unsigned char c : piece)
        ids->push_back(byte_ids_[c]);
      return;
    }
  }
  if (unk_id_ < 0) {
    *missing_unk = true;
    return;
  }
  ids->push_back(unk_id_);
}

} // namespace kiln::tokenizer
