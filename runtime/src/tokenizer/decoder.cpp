#include "tokenizer/decoder.h"

#include <string_view>

namespace kiln::tokenizer {
namespace {

void ReplaceAll(std::string *s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s->find(from, pos)) != std::string::npos) {
    s->replace(pos, from.size(), to);
    pos += to.size();
  }
}

// HF's clean-up of tokenization spaces, replacement by replacement in its order.
void CleanUp(std::string *s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto &[from, to] : kRules)
    ReplaceAll(s, from, to);
}

} // namespace

Status Decoder::Parse(const Json *config) {
  if (config == nullptr)
    return Status::Ok();
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(*config, "decoder", &type));
  if (type == "ByteLevel") {
    kind_ = Kind::kByteLevel;
    return Status::Ok();
  }
  if (type == "WordPiece") {
    kind_ = Kind::kWordPiece;
    if (FindField(*config, "prefix") != nullptr)
      KILN_RETURN_IF_ERROR(ReadString(*config, "prefix", "decoder", &prefix_));
    return ReadBool(*config, "cleanup", "decoder", true, &cleanup_);
  }
  return Unimplemented("tokenizer.json: decoder type '" + type +
                       "' is not supported (supported: ByteLevel, WordPiece)");
}

void Decoder::Append(const std::string &token, bool first, std::string *out) const {
  switch (kind_) {
  case Kind::kByteLevel:
    out->append(token);
    return;
  case Kind::kJoinWithSpaces:
    if (!first)
      out->push_back(' ');
    out->append(token);
    return;
  case Kind::kWordPiece:
    break;
  }
  std::string piece;
  if (first) {
    piece = token; // HF leaves a leading "##" on the first token
  } else if (token.compare(0, prefix_.size(), prefix_) == 0) {
    piece = token.substr(prefix_.size());
  } else {
    piece = " " + token;
  }
  if (cleanup_)
    CleanUp(&piece);
  out->append(piece);
}

} // namespace kiln::tokenizer
