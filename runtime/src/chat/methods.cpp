// Attribute and item access, the methods of str and dict, and the globals.
#include <chrono>
#include <ctime>

#include "chat/builtins.h"
#include "chat/pystr.h"
#include "chat/render.h"

namespace kiln::chat {
namespace {

const char *kStrMethods[] = {"strip", "lstrip", "rstrip", "startswith", "endswith", "split", "upper",
                             "lower", "replace", "title", "capitalize", "join", "find", "count"};
const char *kDictMethods[] = {"items", "keys", "values", "get"};

Status WantArgs(const std::string &fn, const CallArgs &a, size_t lo, size_t hi) {
  if (a.positional.size() < lo || a.positional.size() > hi || !a.keyword.empty())
    return InvalidArgument(fn + "() takes " + std::to_string(lo) + (hi > lo ? " to " + std::to_string(hi) : "") +
                           " positional argument(s)");
  return Status::Ok();
}

StatusOr<std::string> StrArg(const std::string &fn, const Value &v) {
  if (!v.IsString())
    return InvalidArgument(fn + "() argument must be str, not " + v.TypeName());
  return v.AsString();
}

StatusOr<Value> StrMethod(const std::string &s, const std::string &name, CallArgs &a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 0, 1));
    std::string chars;
    bool given = !a.positional.empty() && !a.positional[0].IsNone();
    if (given) {
      KILN_ASSIGN_OR_RETURN(chars, StrArg(name, a.positional[0]));
    }
    return Value::Str(PyStrip(s, given ? &chars : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 1, 1));
    List options = a.positional[0].IsList() ? a.positional[0].AsList() : List{a.positional[0]};
    for (const Value &o : options) {
      KILN_ASSIGN_OR_RETURN(std::string x, StrArg(name, o));
      bool hit = x.size() <= s.size() &&
                 (name == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
      if (hit) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "split") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 0, 2));
    std::string sep;
    bool given = !a.positional.empty() && !a.positional[0].IsNone();
    if (given) {
      KILN_ASSIGN_OR_RETURN(sep, StrArg(name, a.positional[0]));
      if (sep.empty()) return InvalidArgument("empty separator");
    }
    long maxsplit = a.positional.size() > 1 ? static_cast<long>(a.positional[1].AsInt()) : -1;
    List out;
    for (auto &p : PySplit(s, given ? &sep : nullptr, maxsplit)) out.push_back(Value::Str(std::move(p)));
    return Value::MakeList(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 0, 0));
    return Value::Str(name == "upper"   ? PyUpper(s)
                      : name == "lower" ? PyLower(s)
                      : name == "title" ? PyTitle(s)
                                        : PyCapitalize(s));
  }
  if (name == "replace") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 2, 3));
    KILN_ASSIGN_OR_RETURN(std::string from, StrArg(name, a.positional[0]));
    KILN_ASSIGN_OR_RETURN(std::string to, StrArg(name, a.positional[1]));
    long count = a.positional.size() > 2 ? static_cast<long>(a.positional[2].AsInt()) : -1;
    return Value::Str(PyReplace(s, from, to, count));
  }
  if (name == "join") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 1, 1));
    KILN_ASSIGN_OR_RETURN(List items, Iterate(a.positional[0]));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += s;
      KILN_ASSIGN_OR_RETURN(std::string x, StrArg("join", items[i]));
      out += x;
    }
    return Value::Str(std::move(out));
  }
  if (name == "find" || name == "count") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 1, 1));
    KILN_ASSIGN_OR_RETURN(std::string x, StrArg(name, a.positional[0]));
    if (name == "find") {
      size_t at = s.find(x);
      return Value::Int(at == std::string::npos ? -1 : static_cast<int64_t>(Utf8Length(s.substr(0, at))));
    }
    if (x.empty()) return Value::Int(static_cast<int64_t>(Utf8Length(s) + 1));
    int64_t n = 0;
    for (size_t at = s.find(x); at != std::string::npos; at = s.find(x, at + x.size())) ++n;
    return Value::Int(n);
  }
  return InvalidArgument("'str' object has no method '" + name + "'");
}

StatusOr<Value> DictMethod(const Dict &d, const std::string &name, CallArgs &a) {
  if (name == "get") {
    KILN_RETURN_IF_ERROR(WantArgs(name, a, 1, 2));
    const Value *v = a.positional[0].IsString() ? d.Find(a.positional[0].AsString()) : nullptr;
    if (v) return *v;
    return a.positional.size() > 1 ? a.positional[1] : Value::None();
  }
  KILN_RETURN_IF_ERROR(WantArgs(name, a, 0, 0));
  List out;
  for (const auto &[k, v] : d.items) {
    if (name == "items") out.push_back(Value::MakeList({Value::Str(k), v}));
    else if (name == "keys") out.push_back(Value::Str(k));
    else out.push_back(v);
  }
  return Value::MakeList(std::move(out));
}

template <size_t N> bool In(const char *(&names)[N], const std::string &n) {
  for (const char *x : names)
    if (n == x) return true;
  return false;
}

}  // namespace

bool IsKnownMethod(const std::string &name) {
  return In(kStrMethods, name) || In(kDictMethods, name) || name == "cycle";
}

StatusOr<Value> GetAttr(const Value &obj, const std::string &name) {
  if (obj.IsUndefined()) return InvalidArgument(obj.UndefinedHint());
  if (obj.IsString() && In(kStrMethods, name)) {
    std::string s = obj.AsString();
    return Value::Fn("str." + name, [s, name](Renderer &, CallArgs &a) { return StrMethod(s, name, a); });
  }
  if (obj.kind() == Value::Kind::kDict && In(kDictMethods, name)) {
    Value self = obj;
    return Value::Fn(
        "dict." + name, [self, name](Renderer &, CallArgs &a) { return DictMethod(self.AsDict(), name, a); },
        self.Depth());
  }
  if (obj.IsDict()) {
    if (const Value *v = obj.AsDict().Find(name)) return *v;
    return Value::Undef("'" + std::string(obj.kind() == Value::Kind::kDict ? "dict object" : "Namespace") +
                        "' has no attribute '" + name + "'");
  }
  return Value::Undef(std::string("'") + obj.TypeName() + " object' has no attribute '" + name + "'");
}

StatusOr<Value> GetItem(const Value &obj, const Value &key) {
  if (obj.IsUndefined()) return InvalidArgument(obj.UndefinedHint());
  if (obj.IsDict()) {
    if (key.IsString()) {
      if (const Value *v = obj.AsDict().Find(key.AsString())) return *v;
      return GetAttr(obj, key.AsString());
    }
    return Value::Undef("'dict object' has no attribute '" + ToStr(key) + "'");
  }
  if ((obj.IsList() || obj.IsString()) && (key.kind() == Value::Kind::kInt || key.kind() == Value::Kind::kBool)) {
    int64_t i = key.AsInt();
    if (obj.IsList()) {
      int64_t n = static_cast<int64_t>(obj.AsList().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::Undef("list object has no element " + std::to_string(key.AsInt()));
      return obj.AsList()[static_cast<size_t>(i)];
    }
    auto chars = Utf8Chars(obj.AsString());
    int64_t n = static_cast<int64_t>(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::Undef("string index out of range");
    return Value::Str(chars[static_cast<size_t>(i)]);
  }
  if (key.IsString()) return GetAttr(obj, key.AsString());
  return Value::Undef(std::string("'") + obj.TypeName() + " object' has no item " + Repr(key));
}

Dict Globals() {
  Dict g;
  g.Set("raise_exception", Value::Fn("raise_exception", [](Renderer &, CallArgs &a) -> StatusOr<Value> {
          std::string m = a.positional.empty() ? "raise_exception() called" : ToStr(a.positional[0]);
          return InvalidArgument("raise_exception: " + m);
        }));
  g.Set("range", Value::Fn("range", [](Renderer &, CallArgs &a) -> StatusOr<Value> {
          int64_t b[3] = {0, 0, 1};
          size_t n = a.positional.size();
          if (n < 1 || n > 3) return InvalidArgument("range expected 1 to 3 arguments");
          for (size_t i = 0; i < n; ++i) {
            if (a.positional[i].kind() != Value::Kind::kInt)
              return InvalidArgument(std::string("range() argument must be int, not ") + a.positional[i].TypeName());
          }
          if (n == 1) b[1] = a.positional[0].AsInt();
          for (size_t i = 0; n > 1 && i < n; ++i) b[i] = a.positional[i].AsInt();
          if (b[2] == 0) return InvalidArgument("range() arg 3 must not be zero");
          List out;
          for (int64_t i = b[0]; b[2] > 0 ? i < b[1] : i > b[1]; i += b[2]) {
            // The sandbox's limit (jinja2.sandbox.MAX_RANGE).
            if (out.size() >= 100000) return InvalidArgument("range too big (more than 100000 items)");
            out.push_back(Value::Int(i));
          }
          return Value::MakeList(std::move(out));
        }));
  g.Set("namespace", Value::Fn("namespace", [](Renderer &r, CallArgs &a) -> StatusOr<Value> {
          Dict d;
          for (const Value &p : a.positional) {
            if (!p.IsDict()) return InvalidArgument("namespace() takes keyword arguments or a dict");
            for (const auto &[k, v] : p.AsDict().items) d.Set(k, v);
          }
          for (const auto &[k, v] : a.keyword) d.Set(k, v);
          return r.NewNamespace(std::move(d));
        }));
  g.Set("dict", Value::Fn("dict", [](Renderer &, CallArgs &a) -> StatusOr<Value> {
          Dict d;
          for (const Value &p : a.positional) {
            if (!p.IsDict()) return InvalidArgument("dict() takes keyword arguments or a dict");
            for (const auto &[k, v] : p.AsDict().items) d.Set(k, v);
          }
          for (const auto &[k, v] : a.keyword) d.Set(k, v);
          return Value::MakeDict(std::move(d));
        }));
  // transformers: datetime.now().strftime(format), local time.
  g.Set("strftime_now", Value::Fn("strftime_now", [](Renderer &, CallArgs &a) -> StatusOr<Value> {
          if (a.positional.size() != 1 || !a.positional[0].IsString())
            return InvalidArgument("strftime_now() takes one format string");
          std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[512];
          size_t n = std::strftime(buf, sizeof buf, a.positional[0].AsString().c_str(), &tm);
          if (n == 0 && !a.positional[0].AsString().empty()) return InvalidArgument("strftime_now: format too long");
          return Value::Str(std::string(buf, n));
        }));
  return g;
}

}  // namespace kiln::chat
