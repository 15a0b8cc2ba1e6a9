#include "chat/render.h"

#include <algorithm>
#include <cmath>

#include "chat/builtins.h"
#include "chat/lexer.h"
#include "kiln/chat_template.h"

namespace kiln::chat {

using K = Node::Kind;

size_t Utf8Length(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> Utf8Chars(const std::string &s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

StatusOr<List> Iterate(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::kUndefined: return List{};
  case Value::Kind::kList: return v.AsList();
  case Value::Kind::kDict: {
    List keys;
    for (const auto &kv : v.AsDict().items) keys.push_back(Value::Str(kv.first));
    return keys;
  }
  case Value::Kind::kString: {
    List chars;
    for (auto &c : Utf8Chars(v.AsString())) chars.push_back(Value::Str(std::move(c)));
    return chars;
  }
  default: return InvalidArgument(std::string("'") + v.TypeName() + "' object is not iterable");
  }
}

Renderer::Renderer(const Body &body, Dict vars) : body_(body) {
  auto globals = std::make_shared<Frame>();
  for (auto &[k, v] : Globals().items) (*globals)[k] = v;
  for (auto &[k, v] : vars.items) (*globals)[k] = v;
  chain_.push_back(globals);
  chain_.push_back(std::make_shared<Frame>());
}

Renderer::~Renderer() {
  // The attributes are moved out before they are destroyed: destroying one
  // may release another namespace, which namespaces_ still keeps alive, so
  // nothing is freed while its owner is being cleared.
  for (const auto &ns : namespaces_) {
    std::vector<std::pair<std::string, Value>> attrs;
    attrs.swap(ns->items);
  }
}

Value Renderer::NewNamespace(Dict attrs) {
  if (namespaces_.size() >= compactAt_) {
    // Only this list holds these: nothing can reach them, so no cycle can.
    namespaces_.erase(std::remove_if(namespaces_.begin(), namespaces_.end(),
                                     [](const std::shared_ptr<Dict> &ns) { return ns.use_count() == 1; }),
                      namespaces_.end());
    compactAt_ = std::max<size_t>(64, 2 * namespaces_.size());
  }
  Value ns = Value::MakeNamespace(std::move(attrs));
  namespaces_.push_back(ns.SharedDict());
  return ns;
}

StatusOr<std::string> Renderer::Run() {
  std::string out;
  KILN_RETURN_IF_ERROR(Exec(body_, out));
  return out;
}

Status Renderer::CheckSize(size_t bytes) const {
  if (bytes > ChatTemplate::kMaxOutputBytes)
    return InvalidArgument("output passes the limit of " + std::to_string(ChatTemplate::kMaxOutputBytes) +
                           " bytes");
  return Status::Ok();
}

Status Renderer::CountIteration() {
  if (++iterations_ > ChatTemplate::kMaxLoopIterations)
    return InvalidArgument("loops pass the limit of " + std::to_string(ChatTemplate::kMaxLoopIterations) +
                           " iterations");
  return Status::Ok();
}

Status Renderer::CheckDepth() const {
  if (depth_ > ChatTemplate::kMaxDepth)
    return InvalidArgument("calls nested too deeply (more than " + std::to_string(ChatTemplate::kMaxDepth) +
                           " levels)");
  return Status::Ok();
}

Status Renderer::Exec(const Body &body, std::string &out) {
  for (const NodePtr &n : body) {
    Status st = ExecOne(*n, out);
    if (!st.ok()) {
      if (located_) return st;
      located_ = true;
      return InvalidArgument(Where(n->line, n->col) + ": " + st.message());
    }
    if (flow_ != Flow::kNormal) return Status::Ok();
  }
  return Status::Ok();
}

Status Renderer::ExecOne(const Node &n, std::string &out) {
  switch (n.kind) {
  case K::kText:
    KILN_RETURN_IF_ERROR(CheckSize(out.size() + n.name.size()));
    out += n.name;
    return Status::Ok();
  case K::kOutput: {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[0]));
    std::string s = ToStr(v);
    KILN_RETURN_IF_ERROR(CheckSize(out.size() + s.size()));
    out += s;
    return Status::Ok();
  }
  case K::kIf:
    for (size_t i = 0; i < n.bodies.size(); ++i) {
      if (i < n.kids.size()) {
        KILN_ASSIGN_OR_RETURN(Value c, Eval(*n.kids[i]));
        if (!c.Truthy()) continue;
      }
      return Exec(n.bodies[i], out);
    }
    return Status::Ok();
  case K::kFor: return ExecFor(n, out);
  case K::kSet: return ExecSet(n);
  case K::kSetBlock: {
    std::string text;
    KILN_RETURN_IF_ERROR(Exec(n.bodies[0], text));
    return Assign({n.name}, Value::Str(std::move(text)));
  }
  case K::kMacro: return Assign({n.name}, DefineMacro(n));
  case K::kBreak: flow_ = Flow::kBreak; return Status::Ok();
  case K::kContinue: flow_ = Flow::kContinue; return Status::Ok();
  case K::kBlock: return Exec(n.bodies[0], out);
  default: return Internal("expression node in statement position");
  }
}

Status Renderer::ExecFor(const Node &n, std::string &out) {
  KILN_ASSIGN_OR_RETURN(Value seq, Eval(*n.kids[0]));
  KILN_ASSIGN_OR_RETURN(List items, Iterate(seq));
  chain_.push_back(std::make_shared<Frame>());
  struct Pop {
    Chain &c;
    ~Pop() { c.pop_back(); }
  } pop{chain_};
  if (n.kids[1]) {  // for x in xs if cond: the loop sees only the items that pass
    List kept;
    for (const Value &item : items) {
      KILN_RETURN_IF_ERROR(CountIteration());
      KILN_RETURN_IF_ERROR(Assign(n.names, item));
      KILN_ASSIGN_OR_RETURN(Value keep, Eval(*n.kids[1]));
      if (keep.Truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const int64_t len = static_cast<int64_t>(items.size());
  // One loop object per loop, updated in place: building it per iteration
  // dominated the cost of long loops.
  auto index = std::make_shared<int64_t>(0);
  Dict init;
  for (const char *k : {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0",
                        "previtem", "nextitem"})
    init.Set(k, Value());
  init.Set("cycle", Value::Fn("loop.cycle", [index](Renderer &, CallArgs &a) -> StatusOr<Value> {
             if (a.positional.empty()) return InvalidArgument("no items for cycling given");
             return a.positional[static_cast<size_t>(*index) % a.positional.size()];
           }));
  Value loopValue = Value::MakeDict(std::move(init), seq.Depth());
  auto &slot = loopValue.MutableNamespace().items;
  (*chain_.back())["loop"] = loopValue;
  for (int64_t i = 0; i < len; ++i) {
    KILN_RETURN_IF_ERROR(CountIteration());
    KILN_RETURN_IF_ERROR(Assign(n.names, items[i]));
    *index = i;
    slot[0].second = Value::Int(i + 1);
    slot[1].second = Value::Int(i);
    slot[2].second = Value::Int(len - i);
    slot[3].second = Value::Int(len - i - 1);
    slot[4].second = Value::Bool(i == 0);
    slot[5].second = Value::Bool(i == len - 1);
    slot[6].second = Value::Int(len);
    slot[7].second = Value::Int(1);
    slot[8].second = Value::Int(0);
    slot[9].second = i > 0 ? items[i - 1] : Value::Undef("'loop.previtem' is undefined");
    slot[10].second = i + 1 < len ? items[i + 1] : Value::Undef("'loop.nextitem' is undefined");
    (*chain_.back())["loop"] = loopValue;
    KILN_RETURN_IF_ERROR(Exec(n.bodies[0], out));
    Flow f = flow_;
    flow_ = Flow::kNormal;
    if (f == Flow::kBreak) break;
  }
  if (len == 0 && n.bodies.size() > 1) {
    chain_.pop_back();  // the else block runs in the enclosing scope
    Status st = Exec(n.bodies[1], out);
    chain_.push_back(std::make_shared<Frame>());
    return st;
  }
  return Status::Ok();
}

Status Renderer::Assign(const std::vector<std::string> &names, const Value &v) {
  Frame &f = *chain_.back();
  if (names.size() == 1) {
    f[names[0]] = v;
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(List items, Iterate(v));
  if (items.size() != names.size())
    return InvalidArgument("cannot unpack " + std::to_string(items.size()) + " values into " +
                           std::to_string(names.size()) + " names");
  for (size_t i = 0; i < names.size(); ++i) f[names[i]] = items[i];
  return Status::Ok();
}

Status Renderer::ExecSet(const Node &n) {
  KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[0]));
  if (n.attr.empty()) return Assign(n.names, v);
  Value ns = Lookup(n.names[0]);
  if (ns.kind() != Value::Kind::kNamespace)
    return InvalidArgument("can only assign attributes of a namespace(), and '" + n.names[0] + "' is a " +
                           ns.TypeName());
  ns.MutableNamespace().Set(n.attr, std::move(v));
  return Status::Ok();
}

Value Renderer::DefineMacro(const Node &n) {
  const Node *macro = &n;
  // Weak, because the macro is stored in one of these frames: a strong
  // reference would be a cycle that outlives the render.
  std::vector<std::weak_ptr<Frame>> closure(chain_.begin(), chain_.end());
  return Value::Fn(n.name, [macro, closure](Renderer &r, CallArgs &args) -> StatusOr<Value> {
    Chain scope;
    for (const auto &w : closure) {
      auto f = w.lock();
      if (!f) return InvalidArgument("macro '" + macro->name + "' called after the loop that defined it ended");
      scope.push_back(std::move(f));
    }
    const auto &params = macro->names;
    if (args.positional.size() > params.size())
      return InvalidArgument("macro '" + macro->name + "' takes not more than " + std::to_string(params.size()) +
                             " argument(s)");
    auto frame = std::make_shared<Frame>();
    for (size_t i = 0; i < params.size(); ++i) {
      if (i < args.positional.size()) {
        (*frame)[params[i]] = args.positional[i];
      } else if (const Value *kw = args.Kw(params[i])) {
        (*frame)[params[i]] = *kw;
      } else if (macro->kids[i]) {
        KILN_ASSIGN_OR_RETURN(Value d, r.Eval(*macro->kids[i]));
        (*frame)[params[i]] = d;
      } else {
        (*frame)[params[i]] = Value::Undef("'" + params[i] + "' is undefined");
      }
    }
    for (const auto &kw : args.keyword) {
      bool known = false;
      for (const auto &p : params) known |= p == kw.first;
      if (!known) return InvalidArgument("macro '" + macro->name + "' takes no keyword argument '" + kw.first + "'");
    }
    Chain saved = std::move(r.chain_);
    r.chain_ = std::move(scope);
    r.chain_.push_back(frame);
    std::string text;
    Status st = r.Exec(macro->bodies[0], text);
    r.chain_ = std::move(saved);
    KILN_RETURN_IF_ERROR(st);
    return Value::Str(std::move(text));
  });
}

Value Renderer::Lookup(const std::string &name) const {
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    auto f = (*it)->find(name);
    if (f != (*it)->end()) return f->second;
  }
  return Value::Undef("'" + name + "' is undefined");
}

StatusOr<Value> Renderer::Call(const Value &fn, CallArgs &args) {
  if (fn.IsUndefined()) return InvalidArgument(fn.UndefinedHint());
  if (!fn.IsCallable()) return InvalidArgument(std::string("'") + fn.TypeName() + "' object is not callable");
  Depth d(*this);
  KILN_RETURN_IF_ERROR(CheckDepth());
  return fn.AsCallable().fn(*this, args);
}

Status Renderer::EvalArgs(const Node &n, CallArgs &args) {
  for (size_t i = 1; i < n.kids.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[i]));
    args.positional.push_back(std::move(v));
  }
  for (const auto &[k, e] : n.kwargs) {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*e));
    args.keyword.emplace_back(k, std::move(v));
  }
  return Status::Ok();
}

StatusOr<Value> Renderer::EvalCall(const Node &n) {
  KILN_ASSIGN_OR_RETURN(Value fn, Eval(*n.kids[0]));
  CallArgs args;
  KILN_RETURN_IF_ERROR(EvalArgs(n, args));
  return Call(fn, args);
}

StatusOr<Value> Renderer::Eval(const Node &n) {
  Depth d(*this);
  KILN_RETURN_IF_ERROR(CheckDepth());
  // Every value a template stores or nests passes here, so one check keeps
  // them all within a bounded depth: past it, printing, comparing or freeing
  // a value ({% set ns.l = [ns.l] %} in a long loop) would overflow the stack.
  StatusOr<Value> v = EvalNode(n);
  if (v.ok() && v->Depth() > ChatTemplate::kMaxDepth)
    return InvalidArgument("value nested too deeply (more than " + std::to_string(ChatTemplate::kMaxDepth) +
                           " levels of lists and dicts)");
  return v;
}

StatusOr<Value> Renderer::EvalNode(const Node &n) {
  switch (n.kind) {
  case K::kLiteral: return n.literal;
  case K::kName: return Lookup(n.name);
  case K::kList: {
    List items;
    for (const auto &k : n.kids) {
      KILN_ASSIGN_OR_RETURN(Value v, Eval(*k));
      items.push_back(std::move(v));
    }
    return Value::MakeList(std::move(items));
  }
  case K::kDict: {
    Dict dict;
    for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
      KILN_ASSIGN_OR_RETURN(Value k, Eval(*n.kids[i]));
      if (!k.IsString()) return InvalidArgument(std::string("dict keys must be strings, not ") + k.TypeName());
      KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[i + 1]));
      dict.Set(k.AsString(), std::move(v));
    }
    return Value::MakeDict(std::move(dict));
  }
  case K::kAttr: {
    KILN_ASSIGN_OR_RETURN(Value obj, Eval(*n.kids[0]));
    return GetAttr(obj, n.name);
  }
  case K::kItem: {
    KILN_ASSIGN_OR_RETURN(Value obj, Eval(*n.kids[0]));
    KILN_ASSIGN_OR_RETURN(Value key, Eval(*n.kids[1]));
    return GetItem(obj, key);
  }
  case K::kSlice: return EvalSlice(n);
  case K::kCall: return EvalCall(n);
  case K::kFilter: {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[0]));
    CallArgs args;
    KILN_RETURN_IF_ERROR(EvalArgs(n, args));
    return ApplyFilter(*this, n.name, v, args);
  }
  case K::kTest: {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[0]));
    CallArgs args;
    KILN_RETURN_IF_ERROR(EvalArgs(n, args));
    KILN_ASSIGN_OR_RETURN(bool b, ApplyTest(*this, n.name, v, args));
    return Value::Bool(b != n.negated);
  }
  case K::kUnary: {
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[0]));
    if (n.name == "not") return Value::Bool(!v.Truthy());
    if (v.IsUndefined()) return InvalidArgument(v.UndefinedHint());
    if (!v.IsNumber()) return InvalidArgument(std::string("bad operand type for unary ") + n.name + ": '" + v.TypeName() + "'");
    if (n.name == "+") return v.kind() == Value::Kind::kBool ? Value::Int(v.AsInt()) : v;
    if (v.kind() == Value::Kind::kFloat) return Value::Float(-v.AsDouble());
    return Value::Int(-v.AsInt());
  }
  case K::kBinary: return EvalBinary(n);
  case K::kCompare: return EvalCompare(n);
  case K::kCond: {
    KILN_ASSIGN_OR_RETURN(Value c, Eval(*n.kids[1]));
    if (c.Truthy()) return Eval(*n.kids[0]);
    if (n.kids[2]) return Eval(*n.kids[2]);
    return Value::Undef("the conditional expression's value (no else branch)");
  }
  default: return Internal("statement node in expression position");
  }
}

StatusOr<Value> Renderer::EvalCompare(const Node &n) {
  KILN_ASSIGN_OR_RETURN(Value left, Eval(*n.kids[0]));
  for (size_t i = 0; i < n.names.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value right, Eval(*n.kids[i + 1]));
    const std::string &op = n.names[i];
    bool r;
    if (op == "==") {
      r = Equal(left, right);
    } else if (op == "!=") {
      r = !Equal(left, right);
    } else if (op == "in" || op == "not in") {
      if (right.IsString()) {
        if (!left.IsString())
          return InvalidArgument(std::string("'in <string>' requires string as left operand, not ") + left.TypeName());
        r = right.AsString().find(left.AsString()) != std::string::npos;
      } else if (right.IsDict()) {
        r = left.IsString() && right.AsDict().Find(left.AsString()) != nullptr;
      } else if (right.IsList()) {
        r = false;
        for (const Value &x : right.AsList()) r = r || Equal(left, x);
      } else if (right.IsUndefined()) {
        r = false;
      } else {
        return InvalidArgument(std::string("argument of type '") + right.TypeName() + "' is not iterable");
      }
      if (op == "not in") r = !r;
    } else {
      if (left.IsUndefined()) return InvalidArgument(left.UndefinedHint());
      if (right.IsUndefined()) return InvalidArgument(right.UndefinedHint());
      KILN_ASSIGN_OR_RETURN(int c, Compare(left, right));
      r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!r) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

namespace {

// Python's floor division and modulo on integers.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

StatusOr<Value> Arith(const std::string &op, const Value &a, const Value &b) {
  bool isFloat = a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat;
  if (op == "/") {
    if (b.AsDouble() == 0) return InvalidArgument("division by zero");
    return Value::Float(a.AsDouble() / b.AsDouble());
  }
  if (op == "//" || op == "%") {
    if (b.AsDouble() == 0) return InvalidArgument(op == "%" ? "modulo by zero" : "division by zero");
    if (isFloat) {
      double q = std::floor(a.AsDouble() / b.AsDouble());
      return op == "//" ? Value::Float(q) : Value::Float(a.AsDouble() - q * b.AsDouble());
    }
    int64_t q = FloorDiv(a.AsInt(), b.AsInt());
    return op == "//" ? Value::Int(q) : Value::Int(a.AsInt() - q * b.AsInt());
  }
  if (op == "**") {
    if (!isFloat && b.AsInt() >= 0) {
      double r = std::pow(a.AsDouble(), b.AsDouble());
      if (std::fabs(r) > 9.2e18) return InvalidArgument("integer power too large");
      int64_t acc = 1;
      for (int64_t i = 0; i < b.AsInt(); ++i) acc *= a.AsInt();
      return Value::Int(acc);
    }
    return Value::Float(std::pow(a.AsDouble(), b.AsDouble()));
  }
  if (isFloat) {
    double x = a.AsDouble(), y = b.AsDouble();
    return Value::Float(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }
  int64_t r;
  bool overflow = op == "+"   ? __builtin_add_overflow(a.AsInt(), b.AsInt(), &r)
                  : op == "-" ? __builtin_sub_overflow(a.AsInt(), b.AsInt(), &r)
                              : __builtin_mul_overflow(a.AsInt(), b.AsInt(), &r);
  if (overflow) return InvalidArgument("integer overflow in '" + op + "'");
  return Value::Int(r);
}

}  // namespace

StatusOr<Value> Renderer::EvalBinary(const Node &n) {
  const std::string &op = n.name;
  KILN_ASSIGN_OR_RETURN(Value a, Eval(*n.kids[0]));
  if (op == "and") return a.Truthy() ? Eval(*n.kids[1]) : a;
  if (op == "or") return a.Truthy() ? a : Eval(*n.kids[1]);
  KILN_ASSIGN_OR_RETURN(Value b, Eval(*n.kids[1]));
  if (op == "~") {
    std::string s = ToStr(a);
    std::string t = ToStr(b);
    KILN_RETURN_IF_ERROR(CheckSize(s.size() + t.size()));
    return Value::Str(s + t);
  }
  if (a.IsUndefined()) return InvalidArgument(a.UndefinedHint());
  if (b.IsUndefined()) return InvalidArgument(b.UndefinedHint());
  if (a.IsNumber() && b.IsNumber()) return Arith(op, a, b);
  if (op == "+" && a.IsString() && b.IsString()) {
    KILN_RETURN_IF_ERROR(CheckSize(a.AsString().size() + b.AsString().size()));
    return Value::Str(a.AsString() + b.AsString());
  }
  if (op == "+" && a.IsList() && b.IsList()) {
    KILN_RETURN_IF_ERROR(CheckSize(a.AsList().size() + b.AsList().size()));
    List l = a.AsList();
    l.insert(l.end(), b.AsList().begin(), b.AsList().end());
    return Value::MakeList(std::move(l));
  }
  if (op == "*" && (a.IsString() || a.IsList() || b.IsString() || b.IsList())) {
    const Value &seq = a.IsNumber() ? b : a;
    const Value &count = a.IsNumber() ? a : b;
    if (count.kind() != Value::Kind::kInt && count.kind() != Value::Kind::kBool)
      return InvalidArgument(std::string("can't multiply sequence by non-int of type '") + count.TypeName() + "'");
    int64_t times = std::max<int64_t>(0, count.AsInt());
    size_t unit = seq.IsString() ? seq.AsString().size() : seq.AsList().size();
    if (unit > 0 && static_cast<uint64_t>(times) > ChatTemplate::kMaxOutputBytes / unit)
      return CheckSize(ChatTemplate::kMaxOutputBytes + 1);
    if (seq.IsString()) {
      std::string s;
      for (int64_t i = 0; i < times; ++i) s += seq.AsString();
      return Value::Str(std::move(s));
    }
    List l;
    for (int64_t i = 0; i < times; ++i) l.insert(l.end(), seq.AsList().begin(), seq.AsList().end());
    return Value::MakeList(std::move(l));
  }
  return InvalidArgument("unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() +
                         "'");
}

StatusOr<Value> Renderer::EvalSlice(const Node &n) {
  KILN_ASSIGN_OR_RETURN(Value obj, Eval(*n.kids[0]));
  int64_t bound[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    if (!n.kids[i + 1]) continue;
    KILN_ASSIGN_OR_RETURN(Value v, Eval(*n.kids[i + 1]));
    if (v.IsNone()) continue;
    if (v.kind() != Value::Kind::kInt && v.kind() != Value::Kind::kBool)
      return InvalidArgument("slice indices must be integers or None");
    bound[i] = v.AsInt();
    given[i] = true;
  }
  if (obj.IsUndefined()) return InvalidArgument(obj.UndefinedHint());
  if (bound[2] == 0) return InvalidArgument("slice step cannot be zero");
  List items;
  bool isString = obj.IsString();
  std::vector<std::string> chars;
  if (isString) {
    chars = Utf8Chars(obj.AsString());
    for (auto &c : chars) items.push_back(Value::Str(c));
  } else if (obj.IsList()) {
    items = obj.AsList();
  } else {
    return InvalidArgument(std::string("'") + obj.TypeName() + "' object is not subscriptable");
  }
  // Python's slice.indices().
  const int64_t len = static_cast<int64_t>(items.size()), step = bound[2];
  auto clamp = [&](int64_t v, bool isGiven, int64_t dflt) {
    if (!isGiven) return dflt;
    if (v < 0) v += len;
    if (step > 0) return std::min(std::max<int64_t>(v, 0), len);
    return std::min(std::max<int64_t>(v, -1), len - 1);
  };
  int64_t start = clamp(bound[0], given[0], step > 0 ? 0 : len - 1);
  int64_t stop = clamp(bound[1], given[1], step > 0 ? len : -1);
  List out;
  std::string s;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (isString) s += chars[static_cast<size_t>(i)];
    else out.push_back(items[static_cast<size_t>(i)]);
  }
  return isString ? Value::Str(std::move(s)) : Value::MakeList(std::move(out));
}

}  // namespace kiln::chat
