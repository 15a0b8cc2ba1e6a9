// The values a chat template computes with: Python's types as Jinja sees
// them (None, bool, int, float, str, list, dict), plus Undefined, namespaces
// and callables. Lists and dicts are immutable once built (transformers
// renders in an immutable sandbox); a namespace is the one mutable object.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/status.h"

namespace kiln::chat {

class Value;
class Renderer;
using List = std::vector<Value>;
// Insertion-ordered, string-keyed: Python dicts keep insertion order and
// JSON keys are strings.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value *Find(const std::string &key) const;
  void Set(const std::string &key, Value v);
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value *Kw(const std::string &name) const;
};

using NativeFn = std::function<StatusOr<Value>(Renderer &, CallArgs &)>;
struct Callable {
  std::string name;
  NativeFn fn;
};

class Value {
public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  Value() = default;  // Undefined
  static Value None() { Value v; v.kind_ = Kind::kNone; return v; }
  static Value Bool(bool b) { Value v; v.kind_ = Kind::kBool; v.i_ = b; return v; }
  static Value Int(int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
  static Value Float(double f) { Value v; v.kind_ = Kind::kFloat; v.f_ = f; return v; }
  static Value Str(std::string s);
  static Value MakeList(List items);
  // itemDepth: the Depth() of values the dict will be given later (the loop
  // object, updated in place with the items it walks).
  static Value MakeDict(Dict d, int itemDepth = 0);
  static Value MakeNamespace(Dict d);
  // holdsDepth: the Depth() of the value fn holds (a bound method's object),
  // or -1 when it holds none.
  static Value Fn(std::string name, NativeFn fn, int holdsDepth = -1);
  // Undefined that remembers what was looked up, for error messages.
  static Value Undef(std::string hint) { Value v; v.s_ = std::make_shared<std::string>(std::move(hint)); return v; }

  Kind kind() const { return kind_; }
  // How deeply lists and dicts nest in this value: 0 for a scalar, 1 + the
  // deepest item for a container. Printing, comparing and freeing a value
  // recurse this deep, so the renderer refuses values past its depth limit.
  // A namespace counts 1 whatever it holds: its attributes change after it
  // is made, repr and tojson do not look inside, == compares identity, and
  // the renderer frees namespaces one at a time (render.h).
  int Depth() const { return depth_; }
  bool IsUndefined() const { return kind_ == Kind::kUndefined; }
  bool IsNone() const { return kind_ == Kind::kNone; }
  bool IsString() const { return kind_ == Kind::kString; }
  bool IsNumber() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool IsList() const { return kind_ == Kind::kList; }
  bool IsDict() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }
  bool IsCallable() const { return kind_ == Kind::kCallable; }

  bool AsBool() const { return i_ != 0; }
  int64_t AsInt() const { return i_; }
  double AsDouble() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string &AsString() const { return *s_; }
  const List &AsList() const { return *list_; }
  const Dict &AsDict() const { return *dict_; }
  Dict &MutableNamespace() const { return *dict_; }
  // The heap state of a dict or namespace, shared by every copy of the
  // value; the renderer keeps the namespaces it made by it (render.h).
  const std::shared_ptr<Dict> &SharedDict() const { return dict_; }
  const Callable &AsCallable() const { return *fn_; }
  const std::string &UndefinedHint() const;

  // Python truthiness.
  bool Truthy() const;
  // Python's type name, for error messages.
  const char *TypeName() const;

private:
  Kind kind_ = Kind::kUndefined;
  int depth_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> fn_;
};

// str(v) as Jinja prints it: Undefined is empty, None is "None", containers
// use repr() of their items.
std::string ToStr(const Value &v);
// Python repr(v).
std::string Repr(const Value &v);
// repr() of a float, Python's shortest round-trip form ("1.0", "1e-05").
std::string FloatRepr(double d);
// Python ==.
bool Equal(const Value &a, const Value &b);
// Python <: -1, 0, 1, or an error for types that do not order.
StatusOr<int> Compare(const Value &a, const Value &b);
// json.dumps(v, ensure_ascii=ensure_ascii, indent=indent,
// separators=separators, sort_keys=sort_keys); indent < 0 is None, and empty
// separators are json.dumps' defaults. Undefined and callables are errors,
// as in Python.
struct JsonOptions {
  int indent = -1;
  bool sortKeys = false;
  bool ensureAscii = false;
  std::string itemSep, keySep;
};
StatusOr<std::string> ToJson(const Value &v, const JsonOptions &options);

}  // namespace kiln::chat
