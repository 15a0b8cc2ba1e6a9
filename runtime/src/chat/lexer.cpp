#include "chat/lexer.h"

#include <cctype>
#include <cstring>

namespace kiln::chat {

std::string Where(int line, int col) { return std::to_string(line) + ":" + std::to_string(col); }

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Appends the UTF-8 encoding of code point cp.
void AppendUtf8(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  StatusOr<std::vector<Token>> Run() {
    bool lstripNext = false;   // a "-" tag end strips the next text's leading whitespace
    bool lineStarting = true;  // the last tag ended a line (lstrip_blocks' condition)
    while (pos_ < src_.size()) {
      size_t tag = FindTag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      int textLine = line_, textCol = col_;
      Advance(tag);
      if (lstripNext) {
        size_t k = 0;
        while (k < text.size() && IsSpace(text[k])) ++k;
        text.erase(0, k);
        lstripNext = false;
      }
      if (tag < src_.size()) {
        char kind = src_[tag + 1];
        char sign = tag + 2 < src_.size() ? src_[tag + 2] : 0;
        if (sign == '-') {
          size_t k = text.size();
          while (k > 0 && IsSpace(text[k - 1])) --k;
          text.resize(k);
        } else if (sign != '+' && kind != '{') {
          size_t lpos = text.rfind('\n');
          lpos = lpos == std::string::npos ? 0 : lpos + 1;
          if (lpos > 0 || lineStarting) {
            bool blank = lpos < text.size();
            for (size_t k = lpos; k < text.size() && blank; ++k) blank = IsSpace(text[k]);
            if (blank) text.resize(lpos);
          }
        }
      }
      if (!text.empty()) tokens_.push_back({Tok::kText, text, textLine, textCol});
      if (tag >= src_.size()) break;
      auto r = LexTag(lstripNext, lineStarting);
      if (!r.ok()) return r;
    }
    tokens_.push_back({Tok::kEof, "", line_, col_});
    return std::move(tokens_);
  }

private:
  size_t FindTag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  void Advance(size_t to) {
    for (; pos_ < to; ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  Status Error(const std::string &m) const { return InvalidArgument(Where(line_, col_) + ": " + m); }

  // After a tag's end: "-" strips the following whitespace, trim_blocks drops
  // one newline after a block or comment, "+" keeps it.
  void AfterEnd(char sign, bool trim, bool &lstripNext, bool &lineStarting) {
    lineStarting = false;
    if (sign == '-') {
      lstripNext = true;
      // jinja2 consumes the whitespace with the tag, so lstrip_blocks sees
      // a line start when that whitespace ends with a newline.
      size_t k = pos_;
      while (k < src_.size() && IsSpace(src_[k])) ++k;
      lineStarting = k > pos_ && src_[k - 1] == '\n';
    } else if (sign != '+' && trim && pos_ < src_.size() && src_[pos_] == '\n') {
      Advance(pos_ + 1);
      lineStarting = true;
    }
  }

  Status LexTag(bool &lstripNext, bool &lineStarting) {
    char kind = src_[pos_ + 1];
    int tagLine = line_, tagCol = col_;
    Advance(pos_ + 2);
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) Advance(pos_ + 1);
    if (kind == '#') {
      size_t end = src_.find("#}", pos_);
      if (end == std::string::npos) return InvalidArgument(Where(tagLine, tagCol) + ": unclosed comment");
      char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
      Advance(end + 2);
      AfterEnd(sign, true, lstripNext, lineStarting);
      return Status::Ok();
    }
    bool block = kind == '%';
    tokens_.push_back({block ? Tok::kBlockBegin : Tok::kVarBegin, "", tagLine, tagCol});
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) Advance(pos_ + 1);
      if (pos_ >= src_.size())
        return InvalidArgument(Where(tagLine, tagCol) + ": unclosed '" + (block ? "{%" : "{{") + "'");
      const char *close = block ? "%}" : "}}";
      if (depth == 0) {
        char sign = 0;
        size_t at = pos_;
        if ((src_[at] == '-' || src_[at] == '+') && src_.compare(at + 1, 2, close) == 0) sign = src_[at++];
        if (src_.compare(at, 2, close) == 0) {
          tokens_.push_back({block ? Tok::kBlockEnd : Tok::kVarEnd, "", line_, col_});
          Advance(at + 2);
          AfterEnd(sign, block, lstripNext, lineStarting);
          return Status::Ok();
        }
      }
      KILN_RETURN_IF_ERROR(LexExprToken(depth));
    }
  }

  Status LexExprToken(int &depth) {
    int l = line_, c = col_;
    char ch = src_[pos_];
    if (IsNameStart(ch)) {
      size_t e = pos_;
      while (e < src_.size() && IsNameChar(src_[e])) ++e;
      tokens_.push_back({Tok::kName, src_.substr(pos_, e - pos_), l, c});
      Advance(e);
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      size_t e = pos_;
      bool isFloat = false;
      auto digits = [&] {
        while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      };
      digits();
      if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
        isFloat = true;
        ++e;
        digits();
      }
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t k = e + 1;
        if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
          isFloat = true;
          e = k;
          digits();
        }
      }
      std::string text;
      for (size_t k = pos_; k < e; ++k)
        if (src_[k] != '_') text += src_[k];
      tokens_.push_back({isFloat ? Tok::kFloat : Tok::kInt, text, l, c});
      Advance(e);
      return Status::Ok();
    }
    if (ch == '\'' || ch == '"') return LexString(ch, l, c);
    static const char *kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                 "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
    for (const char *op : kOps) {
      size_t n = std::strlen(op);
      if (src_.compare(pos_, n, op) == 0) {
        if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
        if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && n == 1) {
          if (depth == 0) return Error(std::string("unexpected '") + op + "'");
          --depth;
        }
        tokens_.push_back({Tok::kOp, op, l, c});
        Advance(pos_ + n);
        return Status::Ok();
      }
    }
    return Error(std::string("unexpected character '") + ch + "'");
  }

  // Python string escapes, as jinja2 decodes its string literals.
  Status LexString(char quote, int l, int c) {
    std::string out;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) return InvalidArgument(Where(l, c) + ": unterminated string");
      char ch = src_[i];
      if (ch == quote) break;
      if (ch != '\\') {
        out += ch;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) return InvalidArgument(Where(l, c) + ": unterminated string");
      char e = src_[i + 1];
      i += 2;
      switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + n > src_.size()) return InvalidArgument(Where(l, c) + ": truncated \\" + e + " escape");
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          char h = src_[i + k];
          if (!std::isxdigit(static_cast<unsigned char>(h)))
            return InvalidArgument(Where(l, c) + ": bad \\" + e + " escape");
          cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        if (cp > 0x10FFFF) return InvalidArgument(Where(l, c) + ": escape out of range");
        AppendUtf8(cp, out);
        i += n;
        break;
      }
      default:  // Python keeps unknown escapes as written
        out += '\\';
        out += e;
      }
    }
    tokens_.push_back({Tok::kString, out, l, c});
    Advance(i + 1);
    return Status::Ok();
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

StatusOr<std::vector<Token>> Lex(std::string_view source) {
  // jinja2 normalizes newlines and drops one trailing newline.
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src)).Run();
}

}  // namespace kiln::chat
