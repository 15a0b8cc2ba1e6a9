// jinja2's filters and tests, as chat templates use them. tojson is
// transformers' override (json.dumps, no HTML escaping).
#include <algorithm>
#include <cmath>
#include <set>

#include "chat/builtins.h"
#include "chat/pystr.h"
#include "chat/render.h"

namespace kiln::chat {
namespace {

const std::set<std::string> kFilters = {
    "trim", "tojson", "length", "count", "upper", "lower", "title", "capitalize", "replace", "join",
    "first", "last", "default", "d", "string", "int", "float", "list", "items", "selectattr",
    "rejectattr", "select", "reject", "map", "safe", "escape", "e", "abs", "round", "reverse",
    "sort", "dictsort", "sum", "unique"};

const std::set<std::string> kTests = {
    "defined", "undefined", "none", "boolean", "false", "true", "integer", "float", "number",
    "string", "mapping", "iterable", "sequence", "callable", "odd", "even", "divisibleby", "eq",
    "equalto", "==", "ne", "!=", "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "in", "lower",
    "upper", "sameas"};

// Positional argument i, else keyword `name`, else null.
const Value *Arg(const CallArgs &a, size_t i, const char *name) {
  if (i < a.positional.size()) return &a.positional[i];
  return a.Kw(name);
}

StatusOr<int64_t> IntArg(const Value *v, int64_t dflt, const char *what) {
  if (!v || v->IsNone()) return dflt;
  if (v->kind() != Value::Kind::kInt && v->kind() != Value::Kind::kBool)
    return InvalidArgument(std::string(what) + " must be an int, not " + v->TypeName());
  return v->AsInt();
}

// Follows "a.b.0" the way jinja2's make_attrgetter does.
StatusOr<Value> Attribute(const Value &v, const std::string &path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    KILN_ASSIGN_OR_RETURN(cur, digits ? GetItem(cur, Value::Int(std::stoll(part))) : GetItem(cur, Value::Str(part)));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::string HtmlEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&#34;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

// select/reject/selectattr/rejectattr.
StatusOr<Value> Select(Renderer &r, const Value &seq, CallArgs &a, bool byAttr, bool keep) {
  KILN_ASSIGN_OR_RETURN(List items, Iterate(seq));
  size_t next = 0;
  std::string attr;
  if (byAttr) {
    if (a.positional.empty() || !a.positional[0].IsString()) return InvalidArgument("selectattr needs an attribute name");
    attr = a.positional[next++].AsString();
  }
  std::string test;
  if (next < a.positional.size()) {
    if (!a.positional[next].IsString()) return InvalidArgument("the test name must be a string");
    test = a.positional[next++].AsString();
    if (!IsKnownTest(test)) return InvalidArgument("unsupported test '" + test + "'");
  }
  CallArgs testArgs;
  testArgs.positional.assign(a.positional.begin() + static_cast<long>(next), a.positional.end());
  List out;
  for (const Value &item : items) {
    KILN_RETURN_IF_ERROR(r.CountIteration());
    Value v = item;
    if (byAttr) {
      KILN_ASSIGN_OR_RETURN(v, Attribute(item, attr));
    }
    bool pass;
    if (test.empty()) {
      pass = v.Truthy();
    } else {
      CallArgs copy = testArgs;
      KILN_ASSIGN_OR_RETURN(pass, ApplyTest(r, test, v, copy));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> Map(Renderer &r, const Value &seq, CallArgs &a) {
  KILN_ASSIGN_OR_RETURN(List items, Iterate(seq));
  List out;
  if (const Value *attr = a.Kw("attribute")) {
    if (!attr->IsString()) return InvalidArgument("map(attribute=) needs a string");
    const Value *dflt = a.Kw("default");
    for (const Value &item : items) {
      KILN_RETURN_IF_ERROR(r.CountIteration());
      KILN_ASSIGN_OR_RETURN(Value v, Attribute(item, attr->AsString()));
      out.push_back(v.IsUndefined() && dflt ? *dflt : v);
    }
    return Value::MakeList(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].IsString()) return InvalidArgument("map needs a filter name or attribute=");
  std::string filter = a.positional[0].AsString();
  if (!IsKnownFilter(filter)) return InvalidArgument("unsupported filter '" + filter + "'");
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value &item : items) {
    KILN_RETURN_IF_ERROR(r.CountIteration());
    CallArgs copy = rest;
    KILN_ASSIGN_OR_RETURN(Value v, ApplyFilter(r, filter, item, copy));
    out.push_back(std::move(v));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> ToJsonFilter(const Value &v, CallArgs &a) {
  JsonOptions o;
  KILN_ASSIGN_OR_RETURN(int64_t indent, IntArg(Arg(a, 0, "indent"), -1, "indent"));
  o.indent = static_cast<int>(std::min<int64_t>(indent, 64));
  if (const Value *e = a.Kw("ensure_ascii")) o.ensureAscii = e->Truthy();
  if (const Value *s = a.Kw("sort_keys")) o.sortKeys = s->Truthy();
  if (const Value *sep = a.Kw("separators"); sep && !sep->IsNone()) {
    if (!sep->IsList() || sep->AsList().size() != 2 || !sep->AsList()[0].IsString() || !sep->AsList()[1].IsString())
      return InvalidArgument("tojson separators must be a pair of strings");
    o.itemSep = sep->AsList()[0].AsString();
    o.keySep = sep->AsList()[1].AsString();
  }
  KILN_ASSIGN_OR_RETURN(std::string s, ToJson(v, o));
  return Value::Str(std::move(s));
}

// jinja2's sort key: strings compare case-insensitively unless asked.
StatusOr<int> SortCompare(const Value &a, const Value &b, bool caseSensitive) {
  if (!caseSensitive && a.IsString() && b.IsString()) return Compare(Value::Str(PyLower(a.AsString())), Value::Str(PyLower(b.AsString())));
  return Compare(a, b);
}

StatusOr<Value> Sort(Renderer &, const Value &seq, CallArgs &a) {
  KILN_ASSIGN_OR_RETURN(List items, Iterate(seq));
  bool reverse = Arg(a, 0, "reverse") && Arg(a, 0, "reverse")->Truthy();
  bool cs = Arg(a, 1, "case_sensitive") && Arg(a, 1, "case_sensitive")->Truthy();
  const Value *attr = Arg(a, 2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value &item : items) {
    Value key = item;
    if (attr && attr->IsString()) {
      KILN_ASSIGN_OR_RETURN(key, Attribute(item, attr->AsString()));
    }
    keyed.emplace_back(key, item);
  }
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto &x, const auto &y) {
    auto c = reverse ? SortCompare(y.first, x.first, cs) : SortCompare(x.first, y.first, cs);
    if (!c.ok()) err = c.status();
    return c.ok() && *c < 0;
  });
  KILN_RETURN_IF_ERROR(err);
  List out;
  for (auto &kv : keyed) out.push_back(kv.second);
  return Value::MakeList(std::move(out));
}

StatusOr<Value> ToInt(const Value &v, CallArgs &a) {
  const Value *dflt = Arg(a, 0, "default");
  Value fallback = dflt ? *dflt : Value::Int(0);
  switch (v.kind()) {
  case Value::Kind::kInt:
  case Value::Kind::kBool: return Value::Int(v.AsInt());
  case Value::Kind::kFloat: return std::isfinite(v.AsDouble()) ? Value::Int(static_cast<int64_t>(v.AsDouble())) : fallback;
  case Value::Kind::kString: {
    std::string s = PyStrip(v.AsString(), nullptr, true, true);
    try {
      size_t used = 0;
      long long i = std::stoll(s, &used, 10);
      if (used == s.size()) return Value::Int(i);
      double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return Value::Int(static_cast<int64_t>(d));
    } catch (...) {
    }
    return fallback;
  }
  default: return fallback;
  }
}

StatusOr<Value> ToFloat(const Value &v, CallArgs &a) {
  const Value *dflt = Arg(a, 0, "default");
  Value fallback = dflt ? *dflt : Value::Float(0);
  if (v.IsNumber()) return Value::Float(v.AsDouble());
  if (v.IsString()) {
    std::string s = PyStrip(v.AsString(), nullptr, true, true);
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return Value::Float(d);
    } catch (...) {
    }
  }
  return fallback;
}

}  // namespace

bool IsKnownFilter(const std::string &name) { return kFilters.count(name) > 0; }
bool IsKnownTest(const std::string &name) { return kTests.count(name) > 0; }

StatusOr<Value> ApplyFilter(Renderer &r, const std::string &name, const Value &v, CallArgs &a) {
  if (name == "default" || name == "d") {
    const Value *dflt = Arg(a, 0, "default_value");
    const Value *boolean = Arg(a, 1, "boolean");
    bool useDefault = v.IsUndefined() || (boolean && boolean->Truthy() && !v.Truthy());
    return useDefault ? (dflt ? *dflt : Value::Str("")) : v;
  }
  if (name == "safe") return v;
  if (name == "tojson") return ToJsonFilter(v, a);
  if (name == "length" || name == "count") {
    if (v.IsString()) return Value::Int(static_cast<int64_t>(Utf8Length(v.AsString())));
    if (v.IsList()) return Value::Int(static_cast<int64_t>(v.AsList().size()));
    if (v.IsDict()) return Value::Int(static_cast<int64_t>(v.AsDict().items.size()));
    if (v.IsUndefined()) return Value::Int(0);
    return InvalidArgument(std::string("object of type '") + v.TypeName() + "' has no len()");
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return Select(r, v, a, name.size() > 6, name[0] == 's');
  if (name == "map") return Map(r, v, a);
  if (name == "sort") return Sort(r, v, a);
  if (name == "int") return ToInt(v, a);
  if (name == "float") return ToFloat(v, a);
  if (name == "list" || name == "reverse" || name == "unique") {
    KILN_ASSIGN_OR_RETURN(List items, Iterate(v));
    if (name == "reverse") {
      std::reverse(items.begin(), items.end());
      if (v.IsString()) {
        std::string s;
        for (const Value &c : items) s += c.AsString();
        return Value::Str(std::move(s));
      }
    }
    if (name == "unique") {
      List out;
      for (const Value &x : items) {
        bool seen = false;
        for (const Value &y : out) {
          bool same = x.IsString() && y.IsString() ? PyLower(x.AsString()) == PyLower(y.AsString()) : Equal(x, y);
          seen = seen || same;
        }
        if (!seen) out.push_back(x);
      }
      items = std::move(out);
    }
    return Value::MakeList(std::move(items));
  }
  if (name == "items" || name == "dictsort") {
    if (v.IsUndefined()) return Value::MakeList({});
    if (!v.IsDict()) return InvalidArgument(std::string("can only get items of a dict, not ") + v.TypeName());
    List out;
    for (const auto &[k, x] : v.AsDict().items) out.push_back(Value::MakeList({Value::Str(k), x}));
    if (name == "dictsort") {
      std::stable_sort(out.begin(), out.end(), [](const Value &x, const Value &y) {
        return PyLower(x.AsList()[0].AsString()) < PyLower(y.AsList()[0].AsString());
      });
    }
    return Value::MakeList(std::move(out));
  }
  if (name == "first" || name == "last") {
    KILN_ASSIGN_OR_RETURN(List items, Iterate(v));
    if (items.empty()) return Value::Undef("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    KILN_ASSIGN_OR_RETURN(List items, Iterate(v));
    const Value *sep = Arg(a, 0, "d");
    const Value *attr = Arg(a, 1, "attribute");
    std::string out, s = sep ? ToStr(*sep) : "";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += s;
      Value x = items[i];
      if (attr && attr->IsString()) {
        KILN_ASSIGN_OR_RETURN(x, Attribute(x, attr->AsString()));
      }
      out += ToStr(x);
      KILN_RETURN_IF_ERROR(r.CheckSize(out.size()));
    }
    return Value::Str(std::move(out));
  }
  if (name == "sum") {
    KILN_ASSIGN_OR_RETURN(List items, Iterate(v));
    Value total = Arg(a, 1, "start") ? *Arg(a, 1, "start") : Value::Int(0);
    const Value *attr = Arg(a, 0, "attribute");
    for (const Value &item : items) {
      Value x = item;
      if (attr && attr->IsString()) {
        KILN_ASSIGN_OR_RETURN(x, Attribute(item, attr->AsString()));
      }
      if (!x.IsNumber() || !total.IsNumber()) return InvalidArgument("sum() of non-numbers");
      total = total.kind() == Value::Kind::kFloat || x.kind() == Value::Kind::kFloat
                  ? Value::Float(total.AsDouble() + x.AsDouble())
                  : Value::Int(total.AsInt() + x.AsInt());
    }
    return total;
  }
  if (name == "abs") {
    if (!v.IsNumber()) return InvalidArgument(std::string("bad operand type for abs(): '") + v.TypeName() + "'");
    return v.kind() == Value::Kind::kFloat ? Value::Float(std::fabs(v.AsDouble())) : Value::Int(std::llabs(v.AsInt()));
  }
  if (name == "round") {
    if (!v.IsNumber()) return InvalidArgument("round needs a number");
    KILN_ASSIGN_OR_RETURN(int64_t prec, IntArg(Arg(a, 0, "precision"), 0, "precision"));
    std::string method = Arg(a, 1, "method") ? ToStr(*Arg(a, 1, "method")) : "common";
    double scale = std::pow(10.0, static_cast<double>(prec)), x = v.AsDouble() * scale;
    double rounded = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::nearbyint(x);
    return Value::Float(rounded / scale);
  }
  // The rest work on str(value).
  std::string s = ToStr(v);
  if (name == "trim") {
    const Value *chars = Arg(a, 0, "chars");
    std::string cs = chars && !chars->IsNone() ? ToStr(*chars) : "";
    return Value::Str(PyStrip(s, chars && !chars->IsNone() ? &cs : nullptr, true, true));
  }
  if (name == "upper") return Value::Str(PyUpper(s));
  if (name == "lower") return Value::Str(PyLower(s));
  if (name == "capitalize") return Value::Str(PyCapitalize(s));
  if (name == "title") return Value::Str(JinjaTitle(s));
  if (name == "string") return Value::Str(s);
  if (name == "escape" || name == "e") return Value::Str(HtmlEscape(s));
  if (name == "replace") {
    const Value *from = Arg(a, 0, "old"), *to = Arg(a, 1, "new");
    if (!from || !to) return InvalidArgument("replace needs old and new");
    KILN_ASSIGN_OR_RETURN(int64_t count, IntArg(Arg(a, 2, "count"), -1, "count"));
    std::string out = PyReplace(s, ToStr(*from), ToStr(*to), static_cast<long>(count));
    KILN_RETURN_IF_ERROR(r.CheckSize(out.size()));
    return Value::Str(std::move(out));
  }
  return InvalidArgument("unsupported filter '" + name + "'");
}

StatusOr<bool> ApplyTest(Renderer &, const std::string &name, const Value &v, CallArgs &a) {
  using VK = Value::Kind;
  const Value *arg = a.positional.empty() ? nullptr : &a.positional[0];
  auto need = [&]() -> Status {
    return arg ? Status::Ok() : InvalidArgument("test '" + name + "' needs an argument");
  };
  if (name == "defined") return !v.IsUndefined();
  if (name == "undefined") return v.IsUndefined();
  if (name == "none") return v.IsNone();
  if (name == "boolean") return v.kind() == VK::kBool;
  if (name == "true") return v.kind() == VK::kBool && v.AsBool();
  if (name == "false") return v.kind() == VK::kBool && !v.AsBool();
  if (name == "integer") return v.kind() == VK::kInt;
  if (name == "float") return v.kind() == VK::kFloat;
  if (name == "number") return v.IsNumber();
  if (name == "string") return v.IsString();
  if (name == "mapping") return v.kind() == VK::kDict;
  if (name == "iterable") return v.IsString() || v.IsList() || v.kind() == VK::kDict || v.IsUndefined();
  if (name == "sequence") return v.IsString() || v.IsList() || v.kind() == VK::kDict || v.IsUndefined();
  if (name == "callable") return v.IsCallable();
  if (name == "lower") return v.IsString() && PyLower(v.AsString()) == v.AsString();
  if (name == "upper") return v.IsString() && PyUpper(v.AsString()) == v.AsString();
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.kind() != VK::kInt && v.kind() != VK::kBool) return InvalidArgument("test '" + name + "' needs an integer");
    int64_t d = 2;
    if (name == "divisibleby") {
      KILN_RETURN_IF_ERROR(need());
      KILN_ASSIGN_OR_RETURN(d, IntArg(arg, 0, "divisibleby's argument"));
      if (d == 0) return InvalidArgument("integer modulo by zero");
    }
    int64_t m = ((v.AsInt() % d) + d) % d;
    return name == "odd" ? m == 1 : m == 0;
  }
  KILN_RETURN_IF_ERROR(need());
  if (name == "eq" || name == "equalto" || name == "==") return Equal(v, *arg);
  if (name == "ne" || name == "!=") return !Equal(v, *arg);
  if (name == "sameas") return Equal(v, *arg) && v.kind() == arg->kind() && !v.IsString() && !v.IsList() && !v.IsDict();
  if (name == "in") {
    if (arg->IsString()) return v.IsString() && arg->AsString().find(v.AsString()) != std::string::npos;
    if (arg->IsDict()) return v.IsString() && arg->AsDict().Find(v.AsString()) != nullptr;
    KILN_ASSIGN_OR_RETURN(List items, Iterate(*arg));
    for (const Value &x : items)
      if (Equal(v, x)) return true;
    return false;
  }
  KILN_ASSIGN_OR_RETURN(int c, Compare(v, *arg));
  if (name == "lt" || name == "<") return c < 0;
  if (name == "le" || name == "<=") return c <= 0;
  if (name == "gt" || name == ">") return c > 0;
  return c >= 0;
}

}  // namespace kiln::chat
