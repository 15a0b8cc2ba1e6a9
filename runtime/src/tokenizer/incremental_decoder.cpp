#include "kiln/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace kiln {

IncrementalDecoder::IncrementalDecoder(const Tokenizer &tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens),
      stream_(std::make_unique<tokenizer::DecodeStream>(tokenizer.impl_->decoder())) {}

IncrementalDecoder::~IncrementalDecoder() = default;

std::string IncrementalDecoder::Add(int32_t id) {
  tokenizer_->impl_->PushDecoded(stream_.get(), id, skip_special_tokens_, &pending_);
  // Decode what is certain; an unfinished character stays pending. Invalid bytes
  // become U+FFFD exactly as the whole-sequence Decode would replace them.
  std::string text;
  pending_.erase(0, tokenizer::DecodeUtf8Lossy(pending_, /*final=*/false, &text));
  return text;
}

std::string IncrementalDecoder::Flush() {
  stream_->Finish(&pending_);
  std::string text;
  tokenizer::DecodeUtf8Lossy(pending_, /*final=*/true, &text);
  pending_.clear();
  return text;
}

} // namespace kiln
