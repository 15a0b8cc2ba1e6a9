#include "kiln/tokenizer.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace kiln {
namespace tokenizer {
StatusOr<std::unique_ptr<TokenizerImpl>> TokenizerImpl::FromJson(std::string_view json) {
  auto impl = std::unique_ptr<TokenizerImpl>(new TokenizerImpl());
  // nlohmann reports bad JSON (including invalid UTF-8) by exception; none may
  // escape, and any that a lookup still throws means a malformed file.
  try {
    const Json root = Json::parse(json.begin(), json.end());
    if (!root.is_object())
      return FieldError("(root)", "expected an object");
    KILN_RETURN_IF_ERROR(impl->Build(root));
  } catch (const Json::exception &e) {
    return InvalidArgument(std::string("tokenizer.json: ") + e.what());
  }
  return impl;
}

Status TokenizerImpl::Build(const Json &root) {
  const Json *model = FindField(root, "model");
  if (model == nullptr)
    return FieldError("model", "missing");
  KILN_ASSIGN_OR_RETURN(model_, Model::FromJson(*model));
  KILN_ASSIGN_OR_RETURN(normalizer_, Normalizer::FromJson(FindField(root, "normalizer")));
  KILN_ASSIGN_OR_RETURN(pre_tokenizer_, PreTokenizer::FromJson(FindField(root, "pre_tokenizer")));
  KILN_RETURN_IF_ERROR(post_processor_.Parse(FindField(root, "post_processor")));
  KILN_RETURN_IF_ERROR(decoder_.Parse(FindField(root, "decoder")));
  KILN_RETURN_IF_ERROR(added_.Parse(FindField(root, "added_tokens"), *normalizer_));

  int64_t size = int64_t{model_->max_id()} + 1;
  for (const AddedToken &t : added_.tokens())
    size = std::max<int64_t>(size, int64_t{t.id} + 1);
  decoded_.resize(static_cast<size_t>(size));
  kind_.assign(decoded_.size(), Kind::kUnknown);
  // HF skips a token when its string is a special token's content, whatever
  // its id (so a special token whose normalized form differs is not skipped).
  std::unordered_set<std::string_view> special;
  for (const AddedToken &t : added_.tokens()) {
    if (t.special)
      special.insert(t.content);
  }
  for (int32_t id = 0; id < size; ++id) {
    // Added tokens shadow vocabulary entries with the same id, as in HF.
    const AddedToken *added = added_.FindById(id);
    const std::string *token = added ? &added->token : model_->IdToToken(id);
    if (token == nullptr)
      continue;
    decoded_[id] = decoder_.PrepareToken(*token);
    kind_[id] = special.count(*token) ? Kind::kSpecial : Kind::kNormal;
  }
  decoder_.Finalize(decoded_);
  return post_processor_.CheckIds([this](int32_t id) {
    return id >= 0 && id < static_cast<int64_t>(kind_.size()) && kind_[id] != Kind::kUnknown;
  });
}

namespace {
Status ResourceExhaustedTokens(size_t max_tokens) {
  return Status(StatusCode::kResourceExhausted,
                "the text is more than " + std::to_string(max_tokens) +
                    " tokens (tokenizing stopped there)");
}
} // namespace

Status TokenizerImpl::EncodeText(std::string_view text, std::vector<int32_t> *ids,
                                 size_t max_tokens) const {
  auto over = [&] { return ResourceExhaustedTokens(max_tokens); };
  std::vector<Segment> raw, normalized_segments;
  std::vector<std::string> words;
  added_.Split(text, /*normalized=*/false, &raw);
  for (const Segment &seg : raw) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
      if (ids->size() > max_tokens)
        return over();
      continue;
    }
    const std::string normalized =
        normalizer_->Normalize(text.substr(seg.begin, seg.end - seg.begin));
    normalized_segments.clear();
    added_.Split(normalized, /*normalized=*/true, &normalized_segments);
    for (const Segment &s : normalized_segments) {
      if (s.id >= 0) {
        ids->push_back(s.id);
        if (ids->size() > max_tokens)
          return over();
        continue;
      }
      words.clear();
      // HF's "original offset 0": nothing of the input came before this piece.
      const bool at_start = seg.begin == 0 && s.begin == 0;
      KILN_RETURN_IF_ERROR(pre_tokenizer_->Split(
          std::string_view(normalized).substr(s.begin, s.end - s.begin), at_start, &words));
      for (const std::string &w : words) {
        KILN_RETURN_IF_ERROR(model_->Encode(w, ids));
        if (ids->size() > max_tokens)
          return over();
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> TokenizerImpl::Encode(std::string_view text,
                                                     bool add_special_tokens,
                                                     size_t max_tokens) const {
  if (!IsValidUtf8(text))
    return InvalidArgument("tokenizer: input text is not valid UTF-8");
  std::vector<int32_t> ids;
  KILN_RETURN_IF_ERROR(EncodeText(text, &ids, max_tokens));
  if (add_special_tokens)
    ids = post_processor_.Apply(std::move(ids));
  if (ids.size() > max_tokens)
    return ResourceExhaustedTokens(max_tokens);
  return ids;
}

void TokenizerImpl::PushDecoded(DecodeStream *stream, int32_t id, bool skip_special_tokens,
                                std::string *out) const {
  if (id < 0 || id >= vocab_size() || kind_[id] == Kind::kUnknown)
    return;
  if (skip_special_tokens && kind_[id] == Kind::kSpecial)
    return;
  stream->Push(decoded_[id], out);
}

std::string TokenizerImpl::Decode(const std::vector<int32_t> &ids, bool skip_special_tokens) const {
  DecodeStream stream(decoder_);
  std::string bytes;
  for (int32_t id : ids)
    PushDecoded(&stream, id, skip_special_tokens, &bytes);
  stream.Finish(&bytes);
  std::string text;
  DecodeUtf8Lossy(bytes, /*final=*/true, &text);
  return text;
}

int32_t TokenizerImpl::TokenToId(std::string_view token) const {
  const int32_t id = added_.FindByContent(token);
  return id >= 0 ? id : model_->TokenToId(token);
}

std::string TokenizerImpl::IdToToken(int32_t id) const {
  if (const AddedToken *t = added_.FindById(id))
    return t->token;
  const std::string *token = model_->IdToToken(id);
  return token ? *token : std::string();
}

bool TokenizerImpl::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && kind_[id] == Kind::kSpecial;
}

} // namespace tokenizer

Tokenizer::Tokenizer(std::unique_ptr<tokenizer::TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json) {
  KILN_ASSIGN_OR_RETURN(auto impl, tokenizer::TokenizerImpl::FromJson(json));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                 bool add_special_tokens) const {
  return impl_->Encode(text, add_special_tokens, std::numeric_limits<size_t>::max());
}

StatusOr<std::vector<int32_t>> Tokenizer::EncodeAtMost(std::string_view text,
                                                       bool add_special_tokens,
                                                       size_t max_tokens) const {
  return impl_->Encode(text, add_special_tokens, max_tokens);
}

std::string Tokenizer::Decode(const std::vector<int32_t> &ids, bool skip_special_tokens) const {
  return impl_->Decode(ids, skip_special_tokens);
}

int32_t Tokenizer::TokenToId(std::string_view token) const { return impl_->TokenToId(token); }
std::string Tokenizer::IdToToken(int32_t id) const { return impl_->IdToToken(id); }
int64_t Tokenizer::vocab_size() const { return impl_->vocab_size(); }
bool Tokenizer::IsSpecial(int32_t id) const { return impl_->IsSpecial(id); }

} // namespace kiln
