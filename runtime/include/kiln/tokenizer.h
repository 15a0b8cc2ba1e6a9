// The runtime's tokenizer: reads a Hugging Face tokenizer.json with a byte-level
// BPE model (GPT-2, Llama-3, Qwen2), a SentencePiece-style BPE with byte
// fallback (Llama 2, Mistral, Gemma, Phi-3, GGUF conversions), a Unigram model
// (T5, XLM-R, ALBERT) or a WordPiece model (BERT and its family), and agrees
// with the HF `tokenizers` library id for id, so a plan needs no Python to
// serve text. docs/tokenizers.md lists what is supported.
//
// Supported components (anything else is rejected with kUnimplemented):
//   normalizer      null, NFC, NFD, Lowercase, BertNormalizer (every option),
//                   Prepend, Replace (String or Regex), Strip, Sequence of those
//   pre_tokenizer   ByteLevel, Split (Regex or String, every behavior, invert),
//                   BertPreTokenizer, Metaspace (every prepend_scheme, split),
//                   WhitespaceSplit, Sequence of those
//   model           BPE (byte_fallback, ignore_merges, unk_token, fuse_unk; no
//                   subword prefix/suffix, no dropout); Unigram (unk_id,
//                   byte_fallback); WordPiece (every option)
//   post_processor  null, ByteLevel, TemplateProcessing, BertProcessing,
//                   RobertaProcessing, Sequence of those (single sequences)
//   decoder         null, ByteLevel, WordPiece, Replace, ByteFallback, Fuse,
//                   Strip, Metaspace, Sequence of those
//   added_tokens    special or not, lstrip, rstrip, single_word, normalized
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/status.h"

namespace kiln {

namespace tokenizer {
class TokenizerImpl;
class DecodeStream;
} // namespace tokenizer

// Immutable after FromJson; Encode and Decode may be called from many threads.
class Tokenizer {
public:
  // Parses a tokenizer.json document. Malformed JSON or fields give
  // kInvalidArgument, unsupported component types kUnimplemented.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json);
  ~Tokenizer();

  // UTF-8 text to ids. Added tokens in the text are always recognised;
  // add_special_tokens applies the post-processor (e.g. Llama-3's BOS).
  // Invalid UTF-8 gives kInvalidArgument.
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool add_special_tokens) const;
  // The same, but stops with kResourceExhausted as soon as the ids pass
  // `max_tokens` (special tokens included): a prompt that provably does
  // not fit a context is refused for about the cost of what fits.
  StatusOr<std::vector<int32_t>> EncodeAtMost(std::string_view text, bool add_special_tokens,
                                              size_t max_tokens) const;
  // Ids to text as HF decodes them: unknown ids are dropped and bytes that are
  // not valid UTF-8 become U+FFFD.
  std::string Decode(const std::vector<int32_t> &ids, bool skip_special_tokens) const;

  int32_t TokenToId(std::string_view token) const; // -1 if absent
  std::string IdToToken(int32_t id) const;         // "" if absent
  int64_t vocab_size() const;                      // 1 + the largest id
  bool IsSpecial(int32_t id) const;

private:
  friend class IncrementalDecoder;
  explicit Tokenizer(std::unique_ptr<tokenizer::TokenizerImpl> impl);
  std::unique_ptr<tokenizer::TokenizerImpl> impl_;
};

// Decodes a stream of ids, one at a time, into text that never ends inside a
// UTF-8 character: bytes of an unfinished character wait for the next id, as
// does text a later id can still change (a run of <0xXX> byte tokens, which
// becomes U+FFFDs if it ends as invalid UTF-8).
// The concatenation of every Add() and the final Flush() equals Decode(ids).
// The tokenizer must outlive the decoder.
class IncrementalDecoder {
public:
  IncrementalDecoder(const Tokenizer &tokenizer, bool skip_special_tokens);
  ~IncrementalDecoder();
  IncrementalDecoder(const IncrementalDecoder &) = delete;
  IncrementalDecoder &operator=(const IncrementalDecoder &) = delete;
  // Returns the text that `id` completes (often empty, for a partial character).
  std::string Add(int32_t id);
  // Ends the stream: a dangling partial character becomes U+FFFD.
  std::string Flush();

private:
  const Tokenizer *tokenizer_;
  bool skip_special_tokens_;
  std::unique_ptr<tokenizer::DecodeStream> stream_; // the decoder's steps, mid-sequence
  std::string pending_; // bytes of a character still incomplete
};

} // namespace kiln
