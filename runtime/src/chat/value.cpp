#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace kiln::chat {

const Value *Dict::Find(const std::string &key) const {
  for (const auto &[k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::Set(const std::string &key, Value v) {
  for (auto &[k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

const Value *CallArgs::Kw(const std::string &name) const {
  for (const auto &[k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

Value Value::Str(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::MakeList(List items) {
  Value v;
  v.kind_ = Kind::kList;
  int deepest = 0;
  for (const Value &x : items) deepest = std::max(deepest, x.depth_);
  v.depth_ = deepest + 1;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::MakeDict(Dict d, int itemDepth) {
  Value v;
  v.kind_ = Kind::kDict;
  int deepest = itemDepth;
  for (const auto &kv : d.items) deepest = std::max(deepest, kv.second.depth_);
  v.depth_ = deepest + 1;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::MakeNamespace(Dict d) {
  Value v = MakeDict(std::move(d));
  v.kind_ = Kind::kNamespace;
  v.depth_ = 1;
  return v;
}

Value Value::Fn(std::string name, NativeFn fn, int holdsDepth) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.depth_ = holdsDepth + 1;
  v.fn_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

const std::string &Value::UndefinedHint() const {
  static const std::string kEmpty = "value";
  return s_ ? *s_ : kEmpty;
}

bool Value::Truthy() const {
  switch (kind_) {
  case Kind::kUndefined:
  case Kind::kNone: return false;
  case Kind::kBool:
  case Kind::kInt: return i_ != 0;
  case Kind::kFloat: return f_ != 0;
  case Kind::kString: return !s_->empty();
  case Kind::kList: return !list_->empty();
  case Kind::kDict: return !dict_->items.empty();
  case Kind::kNamespace:
  case Kind::kCallable: return true;
  }
  return false;
}

const char *Value::TypeName() const {
  switch (kind_) {
  case Kind::kUndefined: return "Undefined";
  case Kind::kNone: return "NoneType";
  case Kind::kBool: return "bool";
  case Kind::kInt: return "int";
  case Kind::kFloat: return "float";
  case Kind::kString: return "str";
  case Kind::kList: return "list";
  case Kind::kDict: return "dict";
  case Kind::kNamespace: return "Namespace";
  case Kind::kCallable: return "function";
  }
  return "?";
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed notation for
  // exponents in [-4, 16), else d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

// str.isprintable() for the non-ASCII code points templates meet: C1
// controls, the separators and the format characters.
bool IsPrintable(uint32_t c) {
  return !(c < 0xA1 || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) ||
           (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF ||
           (c >= 0xFFF9 && c <= 0xFFFB) || (c >= 0xD800 && c <= 0xDFFF));
}

std::string StrRepr(const std::string &s) {
  bool hasSingle = s.find('\'') != std::string::npos, hasDouble = s.find('"') != std::string::npos;
  char q = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Python's repr escapes code points that are not printable.
      int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      if (i + extra >= s.size()) extra = 0;
      uint32_t cp = extra ? (c & (0x3F >> extra)) : c;
      for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      if (extra && !IsPrintable(cp)) {
        char b[16];
        std::snprintf(b, sizeof b, cp < 0x100 ? "\\x%02x" : "\\u%04x", cp);
        out += b;
      } else {
        out.append(s, i, static_cast<size_t>(extra) + 1);
      }
      i += static_cast<size_t>(extra);
      continue;
    }
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Repr(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::kString: return StrRepr(v.AsString());
  case Value::Kind::kList: {
    std::string out = "[";
    bool first = true;
    for (const Value &x : v.AsList()) {
      if (!first) out += ", ";
      first = false;
      out += Repr(x);
    }
    return out + "]";
  }
  case Value::Kind::kDict: {
    std::string out = "{";
    bool first = true;
    for (const auto &[k, x] : v.AsDict().items) {
      if (!first) out += ", ";
      first = false;
      out += StrRepr(k) + ": " + Repr(x);
    }
    return out + "}";
  }
  default: return ToStr(v);
  }
}

std::string ToStr(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::kUndefined: return "";
  case Value::Kind::kNone: return "None";
  case Value::Kind::kBool: return v.AsBool() ? "True" : "False";
  case Value::Kind::kInt: return std::to_string(v.AsInt());
  case Value::Kind::kFloat: return FloatRepr(v.AsDouble());
  case Value::Kind::kString: return v.AsString();
  case Value::Kind::kList:
  case Value::Kind::kDict: return Repr(v);
  case Value::Kind::kNamespace: return "<Namespace>";
  case Value::Kind::kCallable: return "<function " + v.AsCallable().name + ">";
  }
  return "";
}

bool Equal(const Value &a, const Value &b) {
  if (a.IsNumber() && b.IsNumber()) {
    if (a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat)
      return a.AsDouble() == b.AsDouble();
    return a.AsInt() == b.AsInt();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
  case Value::Kind::kUndefined:
  case Value::Kind::kNone: return true;
  case Value::Kind::kString: return a.AsString() == b.AsString();
  case Value::Kind::kList: {
    const List &x = a.AsList(), &y = b.AsList();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!Equal(x[i], y[i])) return false;
    return true;
  }
  case Value::Kind::kDict: {
    const Dict &x = a.AsDict(), &y = b.AsDict();
    if (x.items.size() != y.items.size()) return false;
    for (const auto &[k, v] : x.items) {
      const Value *o = y.Find(k);
      if (!o || !Equal(v, *o)) return false;
    }
    return true;
  }
  case Value::Kind::kNamespace: return a.SharedDict() == b.SharedDict();  // identity, as in Python
  default: return &a.AsCallable() == &b.AsCallable();
  }
}

StatusOr<int> Compare(const Value &a, const Value &b) {
  if (a.IsNumber() && b.IsNumber()) {
    if (a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat) {
      double x = a.AsDouble(), y = b.AsDouble();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.AsInt() < b.AsInt() ? -1 : (a.AsInt() > b.AsInt() ? 1 : 0);
  }
  if (a.IsString() && b.IsString()) {
    // Byte order of UTF-8 is code point order, which is Python's.
    int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.IsList() && b.IsList()) {
    const List &x = a.AsList(), &y = b.AsList();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equal(x[i], y[i])) continue;
      return Compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return InvalidArgument(std::string("'<' not supported between instances of '") + a.TypeName() +
                         "' and '" + b.TypeName() + "'");
}

namespace {

void Escape16(uint32_t u, std::string &out) {
  char b[8];
  std::snprintf(b, sizeof b, "\\u%04x", u);
  out += b;
}

void JsonString(const std::string &s, bool ensureAscii, std::string &out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (ensureAscii && c >= 0x80) {
      // Decode one UTF-8 sequence; past the BMP, a surrogate pair.
      int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      uint32_t cp = extra ? (c & (0x3F >> extra)) : c;
      for (int k = 1; k <= extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        Escape16(0xD800 + (cp >> 10), out);
        Escape16(0xDC00 + (cp & 0x3FF), out);
      } else {
        Escape16(cp, out);
      }
      continue;
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        char b[8];
        std::snprintf(b, sizeof b, "\\u%04x", c);
        out += b;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
}

Status JsonValue(const Value &v, const JsonOptions &o, int level, std::string &out) {
  const int indent = o.indent;
  const bool sortKeys = o.sortKeys;
  if (level > 200) return InvalidArgument("tojson: value nested too deeply");
  auto newline = [&](int lv) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * lv, ' ');
  };
  // json.dumps' separators: ", " and ": " without indent, "," and ": " with.
  std::string itemSep = !o.itemSep.empty() ? o.itemSep : indent >= 0 ? "," : ", ";
  std::string keySep = !o.keySep.empty() ? o.keySep : ": ";
  switch (v.kind()) {
  case Value::Kind::kNone: out += "null"; return Status::Ok();
  case Value::Kind::kBool: out += v.AsBool() ? "true" : "false"; return Status::Ok();
  case Value::Kind::kInt: out += std::to_string(v.AsInt()); return Status::Ok();
  case Value::Kind::kFloat: {
    double d = v.AsDouble();
    out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : FloatRepr(d);
    return Status::Ok();
  }
  case Value::Kind::kString: JsonString(v.AsString(), o.ensureAscii, out); return Status::Ok();
  case Value::Kind::kList: {
    const List &l = v.AsList();
    if (l.empty()) {
      out += "[]";
      return Status::Ok();
    }
    out += '[';
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += itemSep;
      if (indent >= 0) newline(level + 1);
      KILN_RETURN_IF_ERROR(JsonValue(l[i], o, level + 1, out));
    }
    if (indent >= 0) newline(level);
    out += ']';
    return Status::Ok();
  }
  case Value::Kind::kDict:
  case Value::Kind::kNamespace: {
    if (v.kind() == Value::Kind::kNamespace)
      return InvalidArgument("Object of type Namespace is not JSON serializable");
    std::vector<const std::pair<std::string, Value> *> items;
    for (const auto &kv : v.AsDict().items) items.push_back(&kv);
    if (sortKeys)
      std::stable_sort(items.begin(), items.end(), [](auto *a, auto *b) { return a->first < b->first; });
    if (items.empty()) {
      out += "{}";
      return Status::Ok();
    }
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += itemSep;
      if (indent >= 0) newline(level + 1);
      JsonString(items[i]->first, o.ensureAscii, out);
      out += keySep;
      KILN_RETURN_IF_ERROR(JsonValue(items[i]->second, o, level + 1, out));
    }
    if (indent >= 0) newline(level);
    out += '}';
    return Status::Ok();
  }
  case Value::Kind::kUndefined:
    return InvalidArgument("Object of type Undefined is not JSON serializable ('" +
                           v.UndefinedHint() + "' is undefined)");
  case Value::Kind::kCallable:
    return InvalidArgument("Object of type function is not JSON serializable");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ToJson(const Value &v, const JsonOptions &options) {
  std::string out;
  KILN_RETURN_IF_ERROR(JsonValue(v, options, 0, out));
  return out;
}

}  // namespace kiln::chat
