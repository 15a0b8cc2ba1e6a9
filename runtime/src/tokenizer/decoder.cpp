#include "tokenizer/decoder.h"

#include <algorithm>
#include <unordered_set>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

constexpr char kReplacementChar[] = "\xEF\xBF\xBD"; // U+FFFD

// HF's clean-up of tokenization spaces, replacement by replacement in its order.
std::string CleanUp(std::string s) {
  static const std::pair<const char *, const char *> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto &[from, to] : kRules)
    s = ReplaceMatches(s, from, nullptr, to);
  return s;
}

// The byte a "<0xXX>" token stands for, as HF's ByteFallback reads it (Rust's
// u8::from_str_radix on the two characters, which also takes "+X"); -1 if
// the token is not one.
int ByteOfToken(std::string_view token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return -1;
  std::string_view digits = token.substr(3, 2);
  if (digits[0] == '+')
    digits.remove_prefix(1);
  int value = 0;
  for (char c : digits) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0)
      return -1;
    value = value * 16 + d;
  }
  return value;
}

// Strip on one token: up to `start` leading and `stop` trailing copies of `c`.
std::string StripToken(std::string_view token, std::string_view c, size_t start, size_t stop) {
  size_t begin = 0, end = token.size();
  for (size_t k = 0; k < start && token.compare(begin, c.size(), c) == 0; ++k)
    begin += c.size();
  for (size_t k = 0; k < stop && end - begin >= c.size() &&
                     token.compare(end - c.size(), c.size(), c) == 0;
       ++k) {
    end -= c.size();
  }
  return std::string(token.substr(begin, end - begin));
}

// Strip's "start"/"stop": how many characters, 0 when absent.
Status ReadCount(const Json &config, const char *key, const std::string &path, size_t *out) {
  const Json *v = FindField(config, key);
  *out = 0;
  if (v == nullptr)
    return Status::Ok();
  if (!v->is_number_unsigned() || v->get<uint64_t>() > (uint64_t{1} << 20))
    return FieldError(path + "." + key, "expected a count of characters");
  *out = v->get<size_t>();
  return Status::Ok();
}

} // namespace

Status Decoder::Parse(const Json *config) {
  if (config == nullptr)
    return Status::Ok();
  present_ = true;
  KILN_RETURN_IF_ERROR(AddSteps(*config, "decoder"));
  leading_byte_level_ = !token_steps_.empty() && token_steps_[0].kind == Kind::kByteLevel;
  return Status::Ok();
}

Status Decoder::AddSteps(const Json &config, const std::string &path) {
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(config, path, &type));
  if (type != "Sequence")
    return AddStep(config, path, type);
  const Json *list = FindField(config, "decoders");
  if (list == nullptr || !list->is_array())
    return FieldError(path + ".decoders", "expected an array");
  for (size_t i = 0; i < list->size(); ++i)
    KILN_RETURN_IF_ERROR(AddSteps((*list)[i], path + ".decoders[" + std::to_string(i) + "]"));
  return Status::Ok();
}

Status Decoder::AddStep(const Json &config, const std::string &path, const std::string &type) {
  Step step{};
  if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
  } else if (type == "WordPiece") {
    step.kind = Kind::kWordPiece;
    if (FindField(config, "prefix") != nullptr)
      KILN_RETURN_IF_ERROR(ReadString(config, "prefix", path, &step.prefix));
    KILN_RETURN_IF_ERROR(ReadBool(config, "cleanup", path, true, &step.cleanup));
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    KILN_RETURN_IF_ERROR(ReadReplacePattern(config, path, &step.literal, &step.regex));
    KILN_RETURN_IF_ERROR(ReadString(config, "content", path, &step.content));
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    KILN_RETURN_IF_ERROR(ReadString(config, "content", path, &step.content));
    if (step.content.empty() || CodepointLength(step.content, 0) != step.content.size())
      return FieldError(path + ".content", "expected one character");
    KILN_RETURN_IF_ERROR(ReadCount(config, "start", path, &step.start));
    KILN_RETURN_IF_ERROR(ReadCount(config, "stop", path, &step.stop));
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    KILN_RETURN_IF_ERROR(ReadString(config, "replacement", path, &step.replacement));
    if (step.replacement.empty())
      return FieldError(path + ".replacement", "expected one character");
    if (FindField(config, "prepend_scheme") != nullptr) {
      std::string scheme;
      KILN_RETURN_IF_ERROR(ReadString(config, "prepend_scheme", path, &scheme));
      step.prepend = scheme != "never";
    } else {
      KILN_RETURN_IF_ERROR(ReadBool(config, "add_prefix_space", path, true, &step.prepend));
    }
  } else {
    return Unimplemented("tokenizer.json: " + path + ": decoder type '" + type +
                         "' is not supported (supported: ByteLevel, WordPiece, Replace, "
                         "ByteFallback, Fuse, Strip, Metaspace, Sequence)");
  }
  const bool fused = !token_steps_.empty() && (token_steps_.back().kind == Kind::kFuse ||
                                               token_steps_.back().kind == Kind::kByteLevel);
  if (!fused) {
    token_steps_.push_back(std::move(step));
    return Status::Ok();
  }
  // After the text is fused, only steps that make sense on the whole text.
  if (step.kind == Kind::kFuse)
    return Status::Ok(); // one token fused again is itself
  if (step.kind == Kind::kReplace || step.kind == Kind::kStrip ||
      step.kind == Kind::kByteLevel) {
    text_steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (step.kind == Kind::kMetaspace) {
    // The fused text is the first (only) token: every replacement character
    // goes when a prefix was added, else becomes a space.
    step.kind = Kind::kReplace;
    step.literal = step.replacement;
    step.content = step.prepend ? "" : " ";
    text_steps_.push_back(std::move(step));
    return Status::Ok();
  }
  return Unimplemented("tokenizer.json: " + path + ": decoder step '" + type +
                       "' after Fuse or ByteLevel is not supported");
}

std::string Decoder::PrepareToken(const std::string &token) const {
  return leading_byte_level_ ? ByteLevelDecodeToken(token) : token;
}

namespace {

// The characters a decode may hold at some step: the tokens' own, then what
// each step can add. `any` when a step can produce arbitrary text.
struct CharSet {
  bool any = false;
  std::unordered_set<char32_t> chars;
  void Add(std::string_view s) {
    for (size_t i = 0; i < s.size();)
      chars.insert(NextCodepoint(s, &i));
  }
  bool MayHold(std::string_view s) const {
    if (any)
      return true;
    for (size_t i = 0; i < s.size();) {
      if (!chars.count(NextCodepoint(s, &i)))
        return false;
    }
    return true;
  }
};

} // namespace

void Decoder::Finalize(const std::vector<std::string> &tokens) {
  CharSet possible;
  // After a leading ByteLevel the tokens are bytes, not characters.
  possible.any = leading_byte_level_;
  bool byte_tokens = false;
  for (const std::string &t : tokens) {
    if (!possible.any)
      possible.Add(t);
    byte_tokens = byte_tokens || ByteOfToken(t) >= 0;
  }
  auto apply = [&](const Step &step) {
    switch (step.kind) {
    case Kind::kByteFallback:
      if (byte_tokens) {
        possible.any = true; // a byte run can spell anything, or U+FFFDs
        possible.chars.insert(0xFFFD);
      }
      break;
    case Kind::kReplace:
      // A literal pattern made of characters the text cannot hold never fires.
      if (step.regex != nullptr || possible.MayHold(step.literal))
        possible.Add(step.content);
      break;
    case Kind::kMetaspace:
      if (possible.MayHold(step.replacement))
        possible.chars.insert(' ');
      break;
    case Kind::kWordPiece:
      possible.chars.insert(' ');
      break;
    case Kind::kByteLevel:
      possible.any = true; // bytes from here on, not characters
      break;
    default:
      break;
    }
  };
  for (size_t i = leading_byte_level_ ? 1 : 0; i < token_steps_.size(); ++i)
    apply(token_steps_[i]);
  for (Step &step : text_steps_) {
    if (step.kind == Kind::kByteLevel) {
      step.streams = !possible.any;
      for (char32_t c : possible.chars)
        step.streams = step.streams && ByteLevelByte(c) >= 0;
    }
    apply(step);
  }
}

DecodeStream::DecodeStream(const Decoder &decoder)
    : decoder_(decoder), first_token_step_(decoder.leading_byte_level_ ? 1 : 0),
      token_state_(decoder.token_steps_.size()), text_state_(decoder.text_steps_.size()) {}

void DecodeStream::Push(std::string_view token, std::string *out) {
  RunToken(first_token_step_, std::string(token), out);
}

void DecodeStream::Finish(std::string *out) {
  for (size_t i = first_token_step_; i < decoder_.token_steps_.size(); ++i) {
    if (decoder_.token_steps_[i].kind == Decoder::Kind::kByteFallback)
      FlushBytes(i, out);
  }
  for (size_t i = 0; i < decoder_.text_steps_.size(); ++i)
    FinishText(i, out);
}

void DecodeStream::RunToken(size_t i, std::string token, std::string *out) {
  const auto &steps = decoder_.token_steps_;
  if (i == steps.size()) {
    EmitJoined(std::move(token), out); // no fusing step: HF joins with nothing
    return;
  }
  const Decoder::Step &step = steps[i];
  TokenState &state = token_state_[i];
  const size_t index = state.received++;
  switch (step.kind) {
  case Decoder::Kind::kByteLevel:
    EmitJoined(ByteLevelDecodeToken(token), out);
    return;
  case Decoder::Kind::kFuse:
    EmitJoined(std::move(token), out);
    return;
  case Decoder::Kind::kReplace:
    token = ReplaceMatches(token, step.literal, step.regex.get(), step.content);
    break;
  case Decoder::Kind::kStrip:
    token = StripToken(token, step.content, step.start, step.stop);
    break;
  case Decoder::Kind::kMetaspace:
    token = ReplaceMatches(token, step.replacement, nullptr,
                           index == 0 && step.prepend ? "" : " ");
    break;
  case Decoder::Kind::kWordPiece:
    if (index != 0) {
      token = token.compare(0, step.prefix.size(), step.prefix) == 0
                  ? token.substr(step.prefix.size())
                  : " " + token;
    }
    if (step.cleanup)
      token = CleanUp(std::move(token));
    break;
  case Decoder::Kind::kByteFallback: {
    const int byte = ByteOfToken(token);
    if (byte >= 0) {
      state.bytes.push_back(static_cast<char>(byte));
      return;
    }
    FlushBytes(i, out);
    break;
  }
  }
  RunToken(i + 1, std::move(token), out);
}

// A run of byte tokens becomes its text when that is valid UTF-8, else one
// U+FFFD per byte, each a token of its own.
void DecodeStream::FlushBytes(size_t i, std::string *out) {
  std::string bytes;
  bytes.swap(token_state_[i].bytes);
  if (bytes.empty())
    return;
  if (IsValidUtf8(bytes)) {
    RunToken(i + 1, std::move(bytes), out);
    return;
  }
  for (size_t k = 0; k < bytes.size(); ++k)
    RunToken(i + 1, kReplacementChar, out);
}

void DecodeStream::EmitJoined(std::string token, std::string *out) {
  if (!decoder_.present_ && joined_ > 0)
    token.insert(0, " "); // no decoder: HF joins the tokens with spaces
  ++joined_;
  RunText(0, std::move(token), out);
}

void DecodeStream::RunText(size_t i, std::string text, std::string *out) {
  const auto &steps = decoder_.text_steps_;
  if (i == steps.size()) {
    out->append(text);
    return;
  }
  const Decoder::Step &step = steps[i];
  TextState &state = text_state_[i];
  std::string emit;
  if (step.kind == Decoder::Kind::kByteLevel) {
    state.held += text;
    if (!step.streams)
      return; // a later character outside the alphabet would keep all the text as it is
    // Map the whole characters; an unfinished one waits for its other bytes.
    size_t i = 0;
    while (i < state.held.size()) {
      const size_t len = std::max<size_t>(1, CodepointLength(state.held, i));
      if (i + len > state.held.size())
        break;
      size_t k = i;
      const int b = ByteLevelByte(NextCodepoint(state.held, &k));
      if (b >= 0)
        emit.push_back(static_cast<char>(b));
      else
        emit.append(state.held, i, len); // cannot happen when Finalize proved the alphabet
      i += len;
    }
    state.held.erase(0, i);
  } else if (step.kind == Decoder::Kind::kReplace) {
    state.held += text;
    if (step.regex != nullptr)
      return; // a regex match may reach any later text: replaced at the end
    // Replace what is whole; keep the tail that could begin a match.
    const std::string &pat = step.literal;
    size_t pos = 0, hit;
    while ((hit = state.held.find(pat, pos)) != std::string::npos) {
      emit.append(state.held, pos, hit - pos).append(step.content);
      pos = hit + pat.size();
    }
    const size_t keep = std::min(state.held.size() - pos, pat.size() - 1);
    emit.append(state.held, pos, state.held.size() - pos - keep);
    state.held.erase(0, state.held.size() - keep);
  } else { // kStrip on the whole text
    const std::string &c = step.content;
    size_t begin = 0;
    while (!state.begun && begin < text.size()) {
      if (state.stripped < step.start && text.compare(begin, c.size(), c) == 0) {
        begin += c.size();
        ++state.stripped;
      } else {
        state.begun = true;
      }
    }
    state.held.append(text, begin, std::string::npos);
    // Hold back a trailing run of up to `stop` copies of the character.
    size_t end = state.held.size();
    for (size_t k = 0; k < step.stop && end >= c.size() &&
                       state.held.compare(end - c.size(), c.size(), c) == 0;
         ++k) {
      end -= c.size();
    }
    emit = state.held.substr(0, end);
    state.held.erase(0, end);
  }
  if (!emit.empty())
    RunText(i + 1, std::move(emit), out);
}

void DecodeStream::FinishText(size_t i, std::string *out) {
  const Decoder::Step &step = decoder_.text_steps_[i];
  std::string held;
  held.swap(text_state_[i].held);
  if (step.kind == Decoder::Kind::kReplace)
    held = ReplaceMatches(held, step.literal, step.regex.get(), step.content);
  else if (step.kind == Decoder::Kind::kByteLevel)
    held = ByteLevelDecodeToken(held); // the whole text as one token, as HF maps it
  else
    held.clear(); // Strip: what is held is the trailing run it removes
  if (!held.empty())
    RunText(i + 1, std::move(held), out);
}

} // namespace kiln::tokenizer
