#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>

#include "tokenizer/regex_tables.h"
#include "tokenizer/utf8.h"

namespace kiln::tokenizer {
namespace {

void AppendRanges(const CodepointRange *ranges, size_t count, std::string *out) {
  char buf[40];
  for (size_t i = 0; i < count; ++i) {
    const auto first = static_cast<unsigned>(ranges[i].first);
    const auto last = static_cast<unsigned>(ranges[i].last);
    if (first == last) {
      std::snprintf(buf, sizeof buf, "\\x{%X}", first);
    } else {
      std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", first, last);
    }
    out->append(buf);
  }
}

// Class items (without brackets) for a translated escape, or "" if the escape
// is left to PCRE2.
std::string ClassItems(char kind, std::string_view property) {
  std::string items;
  if (kind == 's') {
    AppendRanges(kWhitespace, kWhitespaceCount, &items);
  } else if (property == "L") {
    items = "\\p{L}";
    AppendRanges(kExtraLetters, kExtraLetterCount, &items);
  } else if (property == "N") {
    items = "\\p{N}";
    AppendRanges(kExtraNumbers, kExtraNumberCount, &items);
  }
  return items;
}

std::string EscapeLiteral(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool alnum = (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z');
    if (u < 0x80 && !alnum)
      out.push_back('\\'); // PCRE2: backslash + ASCII non-alnum is literal
    out.push_back(c);
  }
  return out;
}

std::string PcreError(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char *>(buf);
}

} // namespace

std::string TranslateOnigurumaPattern(std::string_view p) {
  std::string out;
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      size_t end = i + 2;
      std::string_view property;
      if ((e == 'p' || e == 'P') && end < p.size()) {
        if (p[end] == '{') {
          const size_t close = p.find('}', end);
          if (close != std::string_view::npos) {
            property = p.substr(end + 1, close - end - 1);
            end = close + 1;
          }
        } else {
          property = p.substr(end, 1);
          end += 1;
        }
      }
      const bool negated = e == 'S' || e == 'P';
      const char kind = (e == 's' || e == 'S') ? 's' : 'p';
      const std::string items =
          (e == 's' || e == 'S' || e == 'p' || e == 'P') ? ClassItems(kind, property) : "";
      // A negated escape inside a class cannot be expanded (classes do not nest).
      if (!items.empty() && !(negated && in_class)) {
        out += in_class ? items : (negated ? "[^" : "[") + items + "]";
      } else {
        out.append(p.substr(i, end - i));
      }
      i = end;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      if (i < p.size() && p[i] == '^')
        out.push_back(p[i++]);
      if (i < p.size() && p[i] == ']')
        out.push_back(p[i++]); // a leading ']' is literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const size_t close = p.find(":]", i + 2); // POSIX class such as [:alpha:]
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 2;
        continue;
      }
    }
    if (in_class && c == ']')
      in_class = false;
    out.push_back(c);
    ++i;
  }
  return out;
}

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern, bool literal) {
  const std::string translated =
      literal ? EscapeLiteral(pattern) : TranslateOnigurumaPattern(pattern);
  pcre2_compile_context *ctx = pcre2_compile_context_create(nullptr);
  if (ctx == nullptr)
    return Internal("regex: out of memory");
  // Oniguruma's Ruby syntax: ^ and $ are line anchors, lines end at LF.
  pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, ctx);
  pcre2_compile_context_free(ctx);
  if (code == nullptr) {
    return InvalidArgument("regex '" + std::string(pattern) + "' does not compile: " +
                           PcreError(error) + " (at offset " + std::to_string(offset) + ")");
  }
  // JIT is only an accelerator: when unavailable the interpreter gives the same matches.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code *>(code_)); }

Status Regex::FindAll(std::string_view text,
                      std::vector<std::pair<size_t, size_t>> *matches) const {
  auto *code = static_cast<pcre2_code *>(code_);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (md == nullptr)
    return Internal("regex: out of memory");
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // Oniguruma's find_iter: search from the end of the last match; an empty match
  // right where the last match ended is skipped by stepping one character.
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  Status status;
  while (last_end <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), last_end, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) { // deep backtracking: the interpreter has more room
      rc = pcre2_match(code, subject, text.size(), last_end, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0) {
      status = Status(StatusCode::kResourceExhausted, "regex match failed: " + PcreError(rc));
      break;
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    const size_t start = ov[0], end = ov[1];
    if (start == end && have_last && last_match_end == end) {
      last_end += last_end < text.size() ? CodepointLength(text, last_end) : 1;
      continue;
    }
    last_end = end;
    last_match_end = end;
    have_last = true;
    matches->emplace_back(start, end);
  }
  pcre2_match_data_free(md);
  return status;
}

} // namespace kiln::tokenizer
