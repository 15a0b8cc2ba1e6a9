#include "tokenizer/pre_tokenizer.h"

#include <utility>

#include "tokenizer/bert_normalizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

// The pattern HF's ByteLevel pre-tokenizer splits with when use_regex is set (GPT-2's).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Span {
  size_t begin, end;
  bool flag; // a match before the behavior is applied; "remove" after
};

// Matches and the gaps between them, covering all of `text`, as HF's
// Pattern::find_matches reports them.
Status FindSpans(const Regex &regex, std::string_view text, bool invert, std::vector<Span> *out) {
  if (text.empty()) {
    out->push_back({0, 0, false});
    return Status::Ok();
  }
  std::vector<std::pair<size_t, size_t>> matches;
  KILN_RETURN_IF_ERROR(regex.FindAll(text, &matches));
  size_t prev = 0;
  for (const auto &[begin, end] : matches) {
    if (prev != begin)
      out->push_back({prev, begin, invert});
    out->push_back({begin, end, !invert});
    prev = end;
  }
  if (prev != text.size())
    out->push_back({prev, text.size(), invert});
  return Status::Ok();
}

// HF's SplitDelimiterBehavior, spelled out on the spans: the result's flag says
// whether the span is dropped.
std::vector<Span> ApplyBehavior(std::vector<Span> spans, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
  case SplitBehavior::kRemoved:
    return spans;
  case SplitBehavior::kIsolated:
    for (Span &s : spans)
      s.flag = false;
    return spans;
  case SplitBehavior::kContiguous:
    for (const Span &s : spans) {
      if (s.flag == previous_match && !out.empty()) {
        out.back().end = s.end;
      } else {
        out.push_back({s.begin, s.end, false});
      }
      previous_match = s.flag;
    }
    return out;
  case SplitBehavior::kMergedWithPrevious:
    for (const Span &s : spans) {
      if (s.flag && !previous_match && !out.empty()) {
        out.back().end = s.end;
      } else {
        out.push_back({s.begin, s.end, false});
      }
      previous_match = s.flag;
    }
    return out;
  case SplitBehavior::kMergedWithNext:
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      if (it->flag && !previous_match && !out.empty()) {
        out.back().begin = it->begin;
      } else {
        out.push_back({it->begin, it->end, false});
      }
      previous_match = it->flag;
    }
    return std::vector<Span>(out.rbegin(), out.rend());
  }
  return spans;
}

Status ParseBehavior(const std::string &name, const std::string &path, SplitBehavior *out) {
  static const std::pair<const char *, SplitBehavior> kNames[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  for (const auto &[n, b] : kNames) {
    if (name == n) {
      *out = b;
      return Status::Ok();
    }
  }
  return FieldError(path, "unknown split behavior '" + name + "'");
}

} // namespace

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::FromJson(const Json *config) {
  auto p = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  if (config != nullptr)
    KILN_RETURN_IF_ERROR(p->AddSteps(*config, "pre_tokenizer"));
  return p;
}

Status PreTokenizer::AddSteps(const Json &config, const std::string &path) {
  std::string type;
  KILN_RETURN_IF_ERROR(ReadType(config, path, &type));
  if (type == "Split")
    return AddSplit(config, path);
  if (type == "ByteLevel")
    return AddByteLevel(config, path);
  if (type == "BertPreTokenizer" || type == "WhitespaceSplit") {
    Step step;
    step.bert = type == "BertPreTokenizer";
    step.whitespace_split = !step.bert;
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Metaspace")
    return AddMetaspace(config, path);
  if (type == "Sequence") {
    const Json *list = FindField(config, "pretokenizers");
    if (list == nullptr || !list->is_array()) {
      return FieldError(path + ".pretokenizers", "expected an array");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      KILN_RETURN_IF_ERROR(
          AddSteps((*list)[i], path + ".pretokenizers[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unimplemented("tokenizer.json: " + path + ": pre_tokenizer type '" + type +
                       "' is not supported (supported: ByteLevel, Split, BertPreTokenizer, "
                       "Metaspace, WhitespaceSplit, Sequence)");
}

Status PreTokenizer::AddSplit(const Json &config, const std::string &path) {
  Step step;
  const Json *pattern = FindField(config, "pattern");
  const Json *regex = pattern ? FindField(*pattern, "Regex") : nullptr;
  const Json *literal = pattern ? FindField(*pattern, "String") : nullptr;
  const Json *source = regex ? regex : literal;
  if (source == nullptr || !source->is_string()) {
    return FieldError(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
  }
  auto compiled = Regex::Compile(source->get<std::string>(), /*literal=*/regex == nullptr);
  if (!compiled.ok())
    return compiled.status().WithContext("tokenizer.json: " + path);
  step.regex = std::move(compiled.value());
  std::string behavior;
  KILN_RETURN_IF_ERROR(ReadString(config, "behavior", path, &behavior));
  KILN_RETURN_IF_ERROR(ParseBehavior(behavior, path + ".behavior", &step.behavior));
  KILN_RETURN_IF_ERROR(ReadBool(config, "invert", path, false, &step.invert));
  steps_.push_back(std::move(step));
  return Status::Ok();
}

Status PreTokenizer::AddByteLevel(const Json &config, const std::string &path) {
  Step step;
  step.byte_level = true;
  bool use_regex;
  // HF's defaults when a field is missing.
  KILN_RETURN_IF_ERROR(ReadBool(config, "add_prefix_space", path, true, &step.add_prefix_space));
  KILN_RETURN_IF_ERROR(ReadBool(config, "use_regex", path, true, &use_regex));
  if (use_regex) {
    auto compiled = Regex::Compile(kGpt2Pattern);
    if (!compiled.ok())
      return compiled.status();
    step.regex = std::move(compiled.value());
  }
  steps_.push_back(std::move(step));
  return Status::Ok();
}

// Metaspace {"replacement": "▁", "prepend_scheme": "always"|"first"|"never",
// "split": true}; files from before prepend_scheme say "add_prefix_space".
Status PreTokenizer::AddMetaspace(const Json &config, const std::string &path) {
  Step step;
  step.metaspace = true;
  KILN_RETURN_IF_ERROR(ReadString(config, "replacement", path, &step.replacement));
  if (step.replacement.empty() || CodepointLength(step.replacement, 0) != step.replacement.size())
    return FieldError(path + ".replacement", "expected one character");
  if (FindField(config, "prepend_scheme") != nullptr) {
    std::string scheme;
    KILN_RETURN_IF_ERROR(ReadString(config, "prepend_scheme", path, &scheme));
    if (scheme == "always") {
      step.prepend = Prepend::kAlways;
    } else if (scheme == "first") {
      step.prepend = Prepend::kFirst;
    } else if (scheme == "never") {
      step.prepend = Prepend::kNever;
    } else {
      return FieldError(path + ".prepend_scheme",
                        "expected \"always\", \"first\" or \"never\", got '" + scheme + "'");
    }
  } else {
    bool add_prefix_space;
    KILN_RETURN_IF_ERROR(ReadBool(config, "add_prefix_space", path, true, &add_prefix_space));
    step.prepend = add_prefix_space ? Prepend::kAlways : Prepend::kNever;
  }
  bool split;
  KILN_RETURN_IF_ERROR(ReadBool(config, "split", path, true, &split));
  if (split) {
    // Each replacement character starts a word: HF splits on it, MergedWithNext.
    auto compiled = Regex::Compile(step.replacement, /*literal=*/true);
    if (!compiled.ok())
      return compiled.status().WithContext("tokenizer.json: " + path);
    step.regex = std::move(compiled.value());
    step.behavior = SplitBehavior::kMergedWithNext;
  }
  steps_.push_back(std::move(step));
  return Status::Ok();
}

// Whitespace ends a word and is dropped; each punctuation character is a word.
void PreTokenizer::BertSplit(const Piece &piece, std::vector<Piece> *out) {
  const std::string &text = piece.text;
  size_t word = 0, i = 0;
  while (i < text.size()) {
    const size_t begin = i;
    const char32_t cp = NextCodepoint(text, &i);
    const bool space = IsBertWhitespace(cp);
    if (!space && !IsBertPunctuation(cp))
      continue;
    if (word < begin)
      out->push_back({text.substr(word, begin - word), piece.at_start && word == 0});
    if (!space)
      out->push_back({text.substr(begin, i - begin), piece.at_start && begin == 0});
    word = i;
  }
  if (word < text.size())
    out->push_back({text.substr(word), piece.at_start && word == 0});
}

// Words are the runs between whitespace (Rust's char::is_whitespace).
void PreTokenizer::WhitespaceSplit(const Piece &piece, std::vector<Piece> *out) {
  const std::string &text = piece.text;
  size_t word = 0, i = 0;
  while (i < text.size()) {
    const size_t begin = i;
    if (!IsRustWhitespace(NextCodepoint(text, &i)))
      continue;
    if (word < begin)
      out->push_back({text.substr(word, begin - word), piece.at_start && word == 0});
    word = i;
  }
  if (word < text.size())
    out->push_back({text.substr(word), piece.at_start && word == 0});
}

Status PreTokenizer::RunStep(const Step &step, const Piece &piece, std::vector<Piece> *out) {
  if (step.bert) {
    BertSplit(piece, out);
    return Status::Ok();
  }
  if (step.whitespace_split) {
    WhitespaceSplit(piece, out);
    return Status::Ok();
  }
  std::string prefixed;
  std::string_view text = piece.text;
  // ByteLevel prefixes every piece it receives, not just the first of the text,
  // but never an empty one (HF's prepend needs a character to attach to).
  if (step.byte_level && step.add_prefix_space && !text.empty() && text[0] != ' ') {
    prefixed = " " + piece.text;
    text = prefixed;
  }
  if (step.metaspace) {
    // Spaces become the replacement, then the piece is prefixed with it as
    // prepend_scheme says (unless it already starts with one).
    prefixed = ReplaceMatches(piece.text, " ", nullptr, step.replacement);
    const bool prepend = step.prepend == Prepend::kAlways ||
                         (step.prepend == Prepend::kFirst && piece.at_start);
    if (prepend && !prefixed.empty() && prefixed.compare(0, step.replacement.size(),
                                                         step.replacement) != 0) {
      prefixed.insert(0, step.replacement);
    }
    text = prefixed;
  }
  std::vector<Span> spans;
  if (step.regex != nullptr) {
    KILN_RETURN_IF_ERROR(FindSpans(*step.regex, text, step.invert, &spans));
    spans = ApplyBehavior(std::move(spans), step.behavior);
  } else {
    spans.push_back({0, text.size(), false});
  }
  for (const Span &s : spans) {
    if (s.flag || s.begin == s.end)
      continue;
    const std::string_view part = text.substr(s.begin, s.end - s.begin);
    const bool at_start = piece.at_start && s.begin == 0;
    if (step.byte_level) {
      std::string mapped;
      ByteLevelEncode(part, &mapped);
      out->push_back({std::move(mapped), at_start});
    } else {
      out->push_back({std::string(part), at_start});
    }
  }
  return Status::Ok();
}

Status PreTokenizer::Split(std::string_view text, bool at_text_start,
                           std::vector<std::string> *words) const {
  std::vector<Piece> pieces{{std::string(text), at_text_start}};
  std::vector<Piece> next;
  for (const Step &step : steps_) {
    next.clear();
    for (const Piece &piece : pieces)
      KILN_RETURN_IF_ERROR(RunStep(step, piece, &next));
    pieces.swap(next);
  }
  for (Piece &p : pieces) {
    if (!p.text.empty())
      words->push_back(std::move(p.text));
  }
  return Status::Ok();
}

} // namespace kiln::tokenizer
