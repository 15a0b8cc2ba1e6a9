// Recursive descent over the lexer's tokens, following jinja2's grammar and
// operator precedence.
#include <charconv>
#include <set>

#include "chat/ast.h"
#include "chat/builtins.h"
#include "chat/lexer.h"
#include "kiln/chat_template.h"

namespace kiln::chat {
namespace {

using K = Node::Kind;

// Tags jinja2 has that the subset leaves out; they are named in the error.
const std::set<std::string> kUnsupportedTags = {
    "raw", "filter", "call", "include", "import", "from", "extends", "block", "with",
    "autoescape", "do", "trans", "pluralize", "endraw", "endfilter", "endcall", "endblock",
    "endwith", "endautoescape", "endtrans", "print"};

// Globals jinja2 has that the subset leaves out. A call to one fails when the
// template is compiled, not at the first request that reaches it, unless the
// template defines the name itself.
const std::set<std::string> kUnsupportedGlobals = {"cycler", "joiner", "lipsum"};

class Parser {
public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}

  StatusOr<Body> Template() {
    std::string end;
    KILN_ASSIGN_OR_RETURN(Body body, ParseBody({}, &end, t_[0]));
    for (const Token &call : globalCalls_)
      if (!defined_.count(call.value))
        return Err(call, "unsupported global '" + call.value + "()' (outside kiln's chat template subset)");
    return body;
  }

private:
  const Token &Peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  const Token &Next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  bool IsOp(const char *op, size_t k = 0) const { return Peek(k).type == Tok::kOp && Peek(k).value == op; }
  bool IsName(const char *n, size_t k = 0) const { return Peek(k).type == Tok::kName && Peek(k).value == n; }
  bool SkipOp(const char *op) { return IsOp(op) ? (Next(), true) : false; }
  bool SkipName(const char *n) { return IsName(n) ? (Next(), true) : false; }

  static std::string Describe(const Token &t) {
    switch (t.type) {
    case Tok::kText: return "template text";
    case Tok::kVarBegin: return "'{{'";
    case Tok::kVarEnd: return "'}}'";
    case Tok::kBlockBegin: return "'{%'";
    case Tok::kBlockEnd: return "'%}'";
    case Tok::kEof: return "end of template";
    case Tok::kString: return "string";
    default: return "'" + t.value + "'";
    }
  }
  Status Err(const Token &t, const std::string &m) const { return InvalidArgument(Where(t.line, t.col) + ": " + m); }
  Status Expect(Tok type, const char *what) {
    if (Peek().type != type) return Err(Peek(), std::string("expected ") + what + ", got " + Describe(Peek()));
    Next();
    return Status::Ok();
  }
  Status ExpectOp(const char *op) {
    if (!IsOp(op)) return Err(Peek(), std::string("expected '") + op + "', got " + Describe(Peek()));
    Next();
    return Status::Ok();
  }
  StatusOr<std::string> ExpectName() {
    if (Peek().type != Tok::kName) return Err(Peek(), "expected a name, got " + Describe(Peek()));
    return Next().value;
  }
  NodePtr Make(K k, const Token &at) { return std::make_unique<Node>(k, at.line, at.col); }

  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &parser) : p(parser) { ++p.depth_; }
    ~DepthGuard() { --p.depth_; }
  };
  Status CheckDepth(const Token &at) {
    if (depth_ > ChatTemplate::kMaxDepth)
      return Err(at, "template nested too deeply (more than " + std::to_string(ChatTemplate::kMaxDepth) + " levels)");
    return Status::Ok();
  }

  // Statements up to one of the tags in ends, whose name is consumed.
  StatusOr<Body> ParseBody(const std::set<std::string> &ends, std::string *endName, const Token &opener) {
    DepthGuard g(*this);
    KILN_RETURN_IF_ERROR(CheckDepth(opener));
    Body body;
    while (true) {
      const Token &t = Peek();
      if (t.type == Tok::kEof) {
        if (ends.empty()) return body;
        return Err(opener, "'{% " + opener.value + " %}' is never closed (expected '{% " + *ends.rbegin() + " %}')");
      }
      if (t.type == Tok::kText) {
        auto n = Make(K::kText, t);
        n->name = Next().value;
        body.push_back(std::move(n));
        continue;
      }
      if (t.type == Tok::kVarBegin) {
        Next();
        auto n = Make(K::kOutput, t);
        KILN_ASSIGN_OR_RETURN(NodePtr e, Expression());
        n->kids.push_back(std::move(e));
        KILN_RETURN_IF_ERROR(Expect(Tok::kVarEnd, "'}}'"));
        body.push_back(std::move(n));
        continue;
      }
      if (t.type != Tok::kBlockBegin) return Err(t, "unexpected " + Describe(t));
      const Token &tag = Peek(1);
      if (tag.type == Tok::kName && ends.count(tag.value)) {
        Next();
        *endName = Next().value;
        return body;
      }
      Next();
      KILN_ASSIGN_OR_RETURN(NodePtr s, Statement());
      body.push_back(std::move(s));
    }
  }

  StatusOr<NodePtr> Statement() {
    const Token &tag = Peek();
    if (tag.type != Tok::kName) return Err(tag, "expected a tag name, got " + Describe(tag));
    const std::string &n = tag.value;
    if (n == "if") return If();
    if (n == "for") return For();
    if (n == "set") return Set();
    if (n == "macro") return Macro();
    if (n == "break" || n == "continue") {
      if (loops_ == 0) return Err(tag, "'{% " + n + " %}' outside a for loop");
      auto node = Make(n == "break" ? K::kBreak : K::kContinue, tag);
      Next();
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      return node;
    }
    if (n == "generation") {  // transformers' AssistantTracker: renders its body
      Token opener = Next();
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      auto node = Make(K::kBlock, opener);
      std::string end;
      KILN_ASSIGN_OR_RETURN(Body b, ParseBody({"endgeneration"}, &end, opener));
      node->bodies.push_back(std::move(b));
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      return node;
    }
    if (kUnsupportedTags.count(n))
      return Err(tag, "unsupported tag '{% " + n + " %}' (outside kiln's chat template subset)");
    if (n == "elif" || n == "else" || n.rfind("end", 0) == 0)
      return Err(tag, "unexpected '{% " + n + " %}' (no open block it closes)");
    return Err(tag, "unknown tag '{% " + n + " %}'");
  }

  StatusOr<NodePtr> If() {
    Token opener = Next();
    auto node = Make(K::kIf, opener);
    std::string end = "elif";
    while (end == "elif") {
      KILN_ASSIGN_OR_RETURN(NodePtr cond, Expression());
      node->kids.push_back(std::move(cond));
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      KILN_ASSIGN_OR_RETURN(Body b, ParseBody({"elif", "else", "endif"}, &end, opener));
      node->bodies.push_back(std::move(b));
    }
    if (end == "else") {
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      KILN_ASSIGN_OR_RETURN(Body b, ParseBody({"endif"}, &end, opener));
      node->bodies.push_back(std::move(b));
    }
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    return node;
  }

  StatusOr<NodePtr> For() {
    Token opener = Next();
    auto node = Make(K::kFor, opener);
    bool paren = SkipOp("(");
    do {
      KILN_ASSIGN_OR_RETURN(std::string name, ExpectName());
      defined_.insert(name);
      node->names.push_back(name);
    } while (SkipOp(","));
    if (paren) KILN_RETURN_IF_ERROR(ExpectOp(")"));
    if (!SkipName("in")) return Err(Peek(), "expected 'in' in for loop, got " + Describe(Peek()));
    KILN_ASSIGN_OR_RETURN(NodePtr iter, Expression(false));
    node->kids.push_back(std::move(iter));
    NodePtr filter;
    if (SkipName("if")) {
      KILN_ASSIGN_OR_RETURN(filter, Expression());
    }
    node->kids.push_back(std::move(filter));
    if (IsName("recursive")) return Err(Peek(), "unsupported 'recursive' loop (outside kiln's chat template subset)");
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    std::string end;
    ++loops_;
    auto body = ParseBody({"else", "endfor"}, &end, opener);
    --loops_;
    if (!body.ok()) return body.status();
    node->bodies.push_back(std::move(body.value()));
    if (end == "else") {
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      KILN_ASSIGN_OR_RETURN(Body b, ParseBody({"endfor"}, &end, opener));
      node->bodies.push_back(std::move(b));
    }
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    return node;
  }

  StatusOr<NodePtr> Set() {
    Token opener = Next();
    KILN_ASSIGN_OR_RETURN(std::string name, ExpectName());
    defined_.insert(name);
    if (Peek().type == Tok::kBlockEnd) {  // {% set x %}...{% endset %}
      Next();
      auto node = Make(K::kSetBlock, opener);
      node->name = name;
      std::string end;
      KILN_ASSIGN_OR_RETURN(Body b, ParseBody({"endset"}, &end, opener));
      node->bodies.push_back(std::move(b));
      KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
      return node;
    }
    if (IsOp("|")) return Err(Peek(), "unsupported filtered block set (outside kiln's chat template subset)");
    auto node = Make(K::kSet, opener);
    node->names.push_back(name);
    if (SkipOp(".")) {
      KILN_ASSIGN_OR_RETURN(node->attr, ExpectName());
    } else {
      while (SkipOp(",")) {
        KILN_ASSIGN_OR_RETURN(std::string more, ExpectName());
        defined_.insert(more);
        node->names.push_back(more);
      }
    }
    KILN_RETURN_IF_ERROR(ExpectOp("="));
    KILN_ASSIGN_OR_RETURN(NodePtr value, TupleOrExpression());
    node->kids.push_back(std::move(value));
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    return node;
  }

  StatusOr<NodePtr> Macro() {
    Token opener = Next();
    auto node = Make(K::kMacro, opener);
    KILN_ASSIGN_OR_RETURN(node->name, ExpectName());
    defined_.insert(node->name);
    KILN_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      KILN_ASSIGN_OR_RETURN(std::string param, ExpectName());
      defined_.insert(param);
      node->names.push_back(param);
      NodePtr def;
      if (SkipOp("=")) {
        KILN_ASSIGN_OR_RETURN(def, Expression());
      }
      node->kids.push_back(std::move(def));
      if (!SkipOp(",")) break;
    }
    KILN_RETURN_IF_ERROR(ExpectOp(")"));
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    std::string end;
    int loops = loops_;
    loops_ = 0;  // a break in a macro body does not reach the caller's loop
    auto body = ParseBody({"endmacro"}, &end, opener);
    loops_ = loops;
    if (!body.ok()) return body.status();
    node->bodies.push_back(std::move(body.value()));
    KILN_RETURN_IF_ERROR(Expect(Tok::kBlockEnd, "'%}'"));
    return node;
  }

  // a, b = ... builds a tuple.
  StatusOr<NodePtr> TupleOrExpression() {
    const Token &at = Peek();
    KILN_ASSIGN_OR_RETURN(NodePtr first, Expression());
    if (!IsOp(",")) return first;
    auto list = Make(K::kList, at);
    list->kids.push_back(std::move(first));
    while (SkipOp(",")) {
      if (Peek().type == Tok::kBlockEnd) break;
      KILN_ASSIGN_OR_RETURN(NodePtr e, Expression());
      list->kids.push_back(std::move(e));
    }
    return list;
  }

  StatusOr<NodePtr> Expression(bool withCond = true) {
    DepthGuard g(*this);
    KILN_RETURN_IF_ERROR(CheckDepth(Peek()));
    KILN_ASSIGN_OR_RETURN(NodePtr e, Or());
    while (withCond && IsName("if")) {
      const Token &at = Next();
      auto cond = Make(K::kCond, at);
      KILN_ASSIGN_OR_RETURN(NodePtr test, Or());
      NodePtr other;
      if (SkipName("else")) {
        KILN_ASSIGN_OR_RETURN(other, Expression());
      }
      cond->kids.push_back(std::move(e));
      cond->kids.push_back(std::move(test));
      cond->kids.push_back(std::move(other));
      e = std::move(cond);
    }
    return e;
  }

  NodePtr Binary(const Token &at, const std::string &op, NodePtr a, NodePtr b) {
    auto n = Make(K::kBinary, at);
    n->name = op;
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }

  StatusOr<NodePtr> Or() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, And());
    while (IsName("or")) {
      const Token &at = Next();
      KILN_ASSIGN_OR_RETURN(NodePtr r, And());
      e = Binary(at, "or", std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> And() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, Not());
    while (IsName("and")) {
      const Token &at = Next();
      KILN_ASSIGN_OR_RETURN(NodePtr r, Not());
      e = Binary(at, "and", std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> Not() {
    if (IsName("not")) {
      const Token &at = Next();
      DepthGuard g(*this);
      KILN_RETURN_IF_ERROR(CheckDepth(at));
      auto n = Make(K::kUnary, at);
      n->name = "not";
      KILN_ASSIGN_OR_RETURN(NodePtr x, Not());
      n->kids.push_back(std::move(x));
      return n;
    }
    return Compare();
  }

  StatusOr<NodePtr> Compare() {
    const Token &at = Peek();
    KILN_ASSIGN_OR_RETURN(NodePtr first, Math1());
    NodePtr cmp;
    while (true) {
      std::string op;
      const Token &t = Peek();
      if (t.type == Tok::kOp && (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" ||
                                 t.value == ">" || t.value == ">=")) {
        op = Next().value;
      } else if (IsName("in")) {
        Next();
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = Make(K::kCompare, at);
        cmp->kids.push_back(std::move(first));
      }
      KILN_ASSIGN_OR_RETURN(NodePtr r, Math1());
      cmp->names.push_back(op);
      cmp->kids.push_back(std::move(r));
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  StatusOr<NodePtr> Math1() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, Concat());
    while (IsOp("+") || IsOp("-")) {
      const Token &at = Next();
      KILN_ASSIGN_OR_RETURN(NodePtr r, Concat());
      e = Binary(at, at.value, std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> Concat() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, Math2());
    while (IsOp("~")) {
      const Token &at = Next();
      KILN_ASSIGN_OR_RETURN(NodePtr r, Math2());
      e = Binary(at, "~", std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> Math2() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, Pow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token &at = Next();
      // Python's printf-style formatting, which the renderer lacks; with a
      // variable on the left it is found only when rendered.
      if (at.value == "%" && e->kind == K::kLiteral && e->literal.IsString())
        return Err(at, "unsupported string formatting 'str % values' (outside kiln's chat template subset; "
                       "use '~' to join strings)");
      KILN_ASSIGN_OR_RETURN(NodePtr r, Pow());
      e = Binary(at, at.value, std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> Pow() {
    KILN_ASSIGN_OR_RETURN(NodePtr e, Unary(true));
    while (IsOp("**")) {
      const Token &at = Next();
      KILN_ASSIGN_OR_RETURN(NodePtr r, Unary(true));
      e = Binary(at, "**", std::move(e), std::move(r));
    }
    return e;
  }

  StatusOr<NodePtr> Unary(bool withFilter) {
    DepthGuard g(*this);
    KILN_RETURN_IF_ERROR(CheckDepth(Peek()));
    NodePtr node;
    if (IsOp("-") || IsOp("+")) {
      const Token &at = Next();
      node = Make(K::kUnary, at);
      node->name = at.value;
      KILN_ASSIGN_OR_RETURN(NodePtr x, Unary(false));
      node->kids.push_back(std::move(x));
    } else {
      KILN_ASSIGN_OR_RETURN(node, Primary());
    }
    KILN_ASSIGN_OR_RETURN(node, Postfix(std::move(node)));
    if (withFilter) return FilterExpr(std::move(node));
    return node;
  }

  StatusOr<NodePtr> Primary() {
    const Token &t = Peek();
    switch (t.type) {
    case Tok::kName: {
      Next();
      auto n = Make(K::kLiteral, t);
      if (t.value == "true" || t.value == "True") n->literal = Value::Bool(true);
      else if (t.value == "false" || t.value == "False") n->literal = Value::Bool(false);
      else if (t.value == "none" || t.value == "None") n->literal = Value::None();
      else {
        n->kind = K::kName;
        n->name = t.value;
      }
      return n;
    }
    case Tok::kString: {
      std::string s;
      while (Peek().type == Tok::kString) s += Next().value;  // adjacent literals concatenate
      auto n = Make(K::kLiteral, t);
      n->literal = Value::Str(std::move(s));
      return n;
    }
    case Tok::kInt:
    case Tok::kFloat: {
      Next();
      auto n = Make(K::kLiteral, t);
      try {
        n->literal = t.type == Tok::kInt ? Value::Int(std::stoll(t.value)) : Value::Float(std::stod(t.value));
      } catch (...) {
        return Err(t, "number out of range: " + t.value);
      }
      return n;
    }
    case Tok::kOp:
      if (t.value == "(") {
        Next();
        auto list = Make(K::kList, t);
        if (SkipOp(")")) return list;  // () is an empty tuple
        KILN_ASSIGN_OR_RETURN(NodePtr e, Expression());
        if (!IsOp(",")) {
          KILN_RETURN_IF_ERROR(ExpectOp(")"));
          return e;
        }
        list->kids.push_back(std::move(e));
        while (SkipOp(",") && !IsOp(")")) {
          KILN_ASSIGN_OR_RETURN(NodePtr x, Expression());
          list->kids.push_back(std::move(x));
        }
        KILN_RETURN_IF_ERROR(ExpectOp(")"));
        return list;
      }
      if (t.value == "[") {
        Next();
        auto list = Make(K::kList, t);
        while (!IsOp("]")) {
          KILN_ASSIGN_OR_RETURN(NodePtr x, Expression());
          list->kids.push_back(std::move(x));
          if (!SkipOp(",")) break;
        }
        KILN_RETURN_IF_ERROR(ExpectOp("]"));
        return list;
      }
      if (t.value == "{") {
        Next();
        auto dict = Make(K::kDict, t);
        while (!IsOp("}")) {
          KILN_ASSIGN_OR_RETURN(NodePtr k, Expression());
          KILN_RETURN_IF_ERROR(ExpectOp(":"));
          KILN_ASSIGN_OR_RETURN(NodePtr v, Expression());
          dict->kids.push_back(std::move(k));
          dict->kids.push_back(std::move(v));
          if (!SkipOp(",")) break;
        }
        KILN_RETURN_IF_ERROR(ExpectOp("}"));
        return dict;
      }
      [[fallthrough]];
    default: return Err(t, "unexpected " + Describe(t) + " in expression");
    }
  }

  StatusOr<NodePtr> Postfix(NodePtr node) {
    while (true) {
      const Token &t = Peek();
      if (IsOp(".")) {
        Next();
        const Token &a = Peek();
        if (a.type == Tok::kName) {
          auto n = Make(K::kAttr, t);
          n->name = Next().value;
          n->kids.push_back(std::move(node));
          node = std::move(n);
        } else if (a.type == Tok::kInt) {
          auto n = Make(K::kItem, t);
          n->kids.push_back(std::move(node));
          auto idx = Make(K::kLiteral, a);
          int64_t i = 0;
          const std::string &digits = a.value;
          auto res = std::from_chars(digits.data(), digits.data() + digits.size(), i);
          if (res.ec != std::errc() || res.ptr != digits.data() + digits.size())
            return Err(a, "index out of range: " + digits);
          Next();
          idx->literal = Value::Int(i);
          n->kids.push_back(std::move(idx));
          node = std::move(n);
        } else {
          return Err(a, "expected an attribute name after '.', got " + Describe(a));
        }
      } else if (IsOp("[")) {
        Next();
        KILN_ASSIGN_OR_RETURN(node, Subscript(std::move(node), t));
      } else if (IsOp("(")) {
        KILN_ASSIGN_OR_RETURN(node, Call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<NodePtr> Subscript(NodePtr obj, const Token &at) {
    NodePtr parts[3];
    bool slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!IsOp(":") && !IsOp("]")) {
        KILN_ASSIGN_OR_RETURN(parts[i], Expression());
      }
      if (i < 2 && SkipOp(":")) {
        slice = true;
        continue;
      }
      break;
    }
    if (IsOp(",")) return Err(Peek(), "unsupported tuple subscript (outside kiln's chat template subset)");
    KILN_RETURN_IF_ERROR(ExpectOp("]"));
    if (!slice && !parts[0]) return Err(at, "empty subscript");
    auto n = Make(slice ? K::kSlice : K::kItem, at);
    n->kids.push_back(std::move(obj));
    n->kids.push_back(std::move(parts[0]));
    if (slice) {
      n->kids.push_back(std::move(parts[1]));
      n->kids.push_back(std::move(parts[2]));
    }
    return n;
  }

  // Parses "(args)" into node's kids (after its first) and kwargs.
  Status Args(Node &node) {
    KILN_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (IsOp("*") || IsOp("**")) return Err(Peek(), "unsupported '*' arguments (outside kiln's chat template subset)");
      if (Peek().type == Tok::kName && IsOp("=", 1)) {
        std::string key = Next().value;
        Next();
        KILN_ASSIGN_OR_RETURN(NodePtr v, Expression());
        node.kwargs.emplace_back(key, std::move(v));
      } else {
        if (!node.kwargs.empty()) return Err(Peek(), "positional argument after a keyword argument");
        KILN_ASSIGN_OR_RETURN(NodePtr v, Expression());
        node.kids.push_back(std::move(v));
      }
      if (!SkipOp(",")) break;
    }
    return ExpectOp(")");
  }

  StatusOr<NodePtr> Call(NodePtr callee) {
    const Token &at = Peek();
    if (callee->kind == K::kAttr && !IsKnownMethod(callee->name))
      return Err(at, "unsupported method '" + callee->name + "()' (outside kiln's chat template subset)");
    if (callee->kind == K::kName && kUnsupportedGlobals.count(callee->name)) {
      Token call = at;
      call.value = callee->name;
      call.line = callee->line;
      call.col = callee->col;
      globalCalls_.push_back(call);
    }
    auto n = Make(K::kCall, at);
    n->kids.push_back(std::move(callee));
    KILN_RETURN_IF_ERROR(Args(*n));
    return n;
  }

  StatusOr<NodePtr> FilterExpr(NodePtr node) {
    while (true) {
      if (IsOp("|")) {
        Next();
        const Token &at = Peek();
        KILN_ASSIGN_OR_RETURN(std::string name, ExpectName());
        if (!IsKnownFilter(name))
          return Err(at, "unsupported filter '" + name + "' (outside kiln's chat template subset)");
        auto n = Make(K::kFilter, at);
        n->name = name;
        n->kids.push_back(std::move(node));
        if (IsOp("(")) KILN_RETURN_IF_ERROR(Args(*n));
        node = std::move(n);
      } else if (IsName("is")) {
        Next();
        auto n = Make(K::kTest, Peek());
        n->negated = SkipName("not");
        const Token &at = Peek();
        KILN_ASSIGN_OR_RETURN(n->name, ExpectName());
        if (!IsKnownTest(n->name))
          return Err(at, "unsupported test '" + n->name + "' (outside kiln's chat template subset)");
        n->kids.push_back(std::move(node));
        const Token &t = Peek();
        // jinja2 takes any following name but these as a bare argument.
        bool bareArg = (t.type == Tok::kName && t.value != "else" && t.value != "or" && t.value != "and") ||
                       t.type == Tok::kString || t.type == Tok::kInt || t.type == Tok::kFloat ||
                       IsOp("[") || IsOp("{");
        if (IsOp("(")) {
          KILN_RETURN_IF_ERROR(Args(*n));
        } else if (bareArg) {
          KILN_ASSIGN_OR_RETURN(NodePtr arg, Primary());
          KILN_ASSIGN_OR_RETURN(arg, Postfix(std::move(arg)));
          n->kids.push_back(std::move(arg));
        }
        node = std::move(n);
      } else if (IsOp("(")) {
        KILN_ASSIGN_OR_RETURN(node, Call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> t_;
  // Names the template assigns (set, for, macro and its parameters), and its
  // calls of jinja2 globals kiln lacks, checked against them at the end.
  std::set<std::string> defined_;
  std::vector<Token> globalCalls_;
  size_t p_ = 0;
  int depth_ = 0;
  int loops_ = 0;
};

}  // namespace

StatusOr<Body> Parse(std::string_view source) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  return Parser(std::move(tokens)).Template();
}

}  // namespace kiln::chat
