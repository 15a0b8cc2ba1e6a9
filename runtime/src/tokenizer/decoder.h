// The tokenizer.json "decoder": how the tokens of a sequence of ids are joined
// back into text, as HF's decode_chain runs its steps, but streaming: a
// DecodeStream takes the tokens one by one and gives out text as soon as no
// later token can change it, so streaming and whole-sequence decoding are one
// code path and agree byte for byte.
//
// Steps before the first fusing step (Fuse, or ByteLevel, which fuses as it
// maps characters back to bytes) work token by token: Replace, Strip,
// Metaspace and WordPiece (the last two treat the first token specially),
// ByteFallback (a run of <0xXX> tokens becomes its UTF-8 text, or one U+FFFD
// per byte when that is not valid UTF-8). After it, the text is one token
// that grows: Replace, Metaspace, Strip and ByteLevel then apply to the whole
// text (transformers writes ByteFallback, Fuse, Replace, ByteLevel for GGUF
// files). ByteLevel on the whole text keeps it as it is if any character is
// outside its alphabet, so it streams only when Finalize proves that no token
// can bring such a character; otherwise it waits for the end.
// Without a fusing step the tokens are joined with nothing; without a decoder
// at all, with spaces.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace kiln::tokenizer {

class Decoder {
public:
  // Accepts null (tokens joined by spaces), ByteLevel, WordPiece, Replace,
  // ByteFallback, Fuse, Strip, Metaspace, and Sequence of those.
  Status Parse(const Json *config);
  // What the tokenizer stores per id: the token with the chain's leading
  // ByteLevel step already applied (so that it runs once per id, not per
  // decode).
  std::string PrepareToken(const std::string &token) const;
  // Given every id's prepared token, decides whether a ByteLevel step after
  // Fuse can stream (see above).
  void Finalize(const std::vector<std::string> &tokens);

private:
  friend class DecodeStream;
  enum class Kind { kByteLevel, kWordPiece, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  struct Step {
    Kind kind;
    std::string literal, content;             // kReplace (content also kStrip's character)
    std::shared_ptr<const Regex> regex;       // kReplace with a Regex pattern
    size_t start = 0, stop = 0;               // kStrip
    std::string replacement;                  // kMetaspace
    bool prepend = true;                      // kMetaspace: prepend_scheme is not "never"
    std::string prefix = "##";                // kWordPiece
    bool cleanup = true;                      // kWordPiece
    bool streams = false;                     // kByteLevel after Fuse: see Finalize
  };
  Status AddSteps(const Json &config, const std::string &path);
  Status AddStep(const Json &config, const std::string &path, const std::string &type);

  bool present_ = false;           // a decoder was configured (else: join with spaces)
  bool leading_byte_level_ = false; // token_steps_[0] was ByteLevel, done by PrepareToken
  std::vector<Step> token_steps_;   // up to and including the first fusing step
  std::vector<Step> text_steps_;    // after it
};

// One sequence's decoding. Push each token (as PrepareToken left it), then
// Finish; the text appended across all calls is HF's decode of the tokens,
// before UTF-8 validation (ByteLevel tokens may leave partial characters).
class DecodeStream {
public:
  explicit DecodeStream(const Decoder &decoder);
  void Push(std::string_view token, std::string *out);
  void Finish(std::string *out);

private:
  struct TokenState {
    size_t received = 0;  // tokens this step has seen (Metaspace, WordPiece: is it the first)
    std::string bytes;    // kByteFallback: the run of byte tokens not yet resolved
  };
  struct TextState {
    std::string held;     // text a later chunk may still change
    size_t stripped = 0;  // kStrip: leading characters removed so far
    bool begun = false;   // kStrip: a character that is not stripped was seen
  };
  void RunToken(size_t step, std::string token, std::string *out);
  void FlushBytes(size_t step, std::string *out);
  void EmitJoined(std::string token, std::string *out);
  void RunText(size_t step, std::string text, std::string *out);
  void FinishText(size_t step, std::string *out);

  const Decoder &decoder_;
  size_t first_token_step_;
  std::vector<TokenState> token_state_;
  std::vector<TextState> text_state_;
  size_t joined_ = 0; // tokens that reached the join
};

} // namespace kiln::tokenizer
