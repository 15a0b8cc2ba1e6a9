// The pipeline behind kiln::Tokenizer, in HF's order: added tokens are cut out,
// the rest is normalized, added tokens are cut out again, then pre-tokenized,
// encoded by the model (BPE or WordPiece), and wrapped by the post-processor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/status.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/decoder.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace kiln::tokenizer {

class TokenizerImpl {
public:
  static StatusOr<std::unique_ptr<TokenizerImpl>> FromJson(std::string_view json);

  // ResourceExhausted once the ids pass max_tokens (checked word by word, so
  // a text far past it costs little more than max_tokens' worth).
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool add_special_tokens,
                                        size_t max_tokens) const;
  // Feeds `id`'s token to a decode stream of this tokenizer's decoder, which
  // appends what text it can to *out. Unknown ids, and special tokens when
  // skipped, are left out (as HF does before its decoder runs).
  void PushDecoded(DecodeStream *stream, int32_t id, bool skip_special_tokens,
                   std::string *out) const;
  const Decoder &decoder() const { return decoder_; }
  std::string Decode(const std::vector<int32_t> &ids, bool skip_special_tokens) const;

  int32_t TokenToId(std::string_view token) const;
  std::string IdToToken(int32_t id) const;
  int64_t vocab_size() const { return static_cast<int64_t>(decoded_.size()); }
  bool IsSpecial(int32_t id) const;

private:
  TokenizerImpl() = default;
  Status Build(const Json &root);
  Status EncodeText(std::string_view text, std::vector<int32_t> *ids, size_t max_tokens) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  AddedVocabulary added_;
  PostProcessor post_processor_;
  Decoder decoder_;

  // Per id, the token as the decoder takes it (Decoder::PrepareToken).
  enum class Kind : uint8_t { kUnknown, kNormal, kSpecial };
  std::vector<std::string> decoded_;
  std::vector<Kind> kind_;
};

} // namespace kiln::tokenizer
