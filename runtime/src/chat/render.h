// Renders a parsed template: statements write text, expressions compute
// Values, with Jinja's scoping (a for loop and a macro get their own frame,
// an if does not) and limits on depth, loop iterations and output size.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"

namespace kiln::chat {

class Renderer {
public:
  // vars: the render's variables, on top of Globals().
  Renderer(const Body &body, Dict vars);
  // Breaks the reference cycles the render's namespaces may hold.
  ~Renderer();
  Renderer(const Renderer &) = delete;
  Renderer &operator=(const Renderer &) = delete;
  StatusOr<std::string> Run();

  // A namespace() owned by this render (see namespaces_).
  Value NewNamespace(Dict attrs);

  StatusOr<Value> Eval(const Node &n);
  // Calls a callable value (a global, a method or a macro).
  StatusOr<Value> Call(const Value &fn, CallArgs &args);
  // Fails once the output or a computed string would pass the size limit.
  Status CheckSize(size_t bytes) const;
  // Counts one loop iteration (or one item of a filter's pass) against the limit.
  Status CountIteration();

private:
  using Frame = std::unordered_map<std::string, Value>;
  using Chain = std::vector<std::shared_ptr<Frame>>;
  enum class Flow { kNormal, kBreak, kContinue };

  Status Exec(const Body &body, std::string &out);
  Status ExecOne(const Node &n, std::string &out);
  Status ExecFor(const Node &n, std::string &out);
  Status ExecSet(const Node &n);
  Value DefineMacro(const Node &n);
  Status Assign(const std::vector<std::string> &names, const Value &v);
  Value Lookup(const std::string &name) const;
  StatusOr<Value> EvalNode(const Node &n);
  StatusOr<Value> EvalBinary(const Node &n);
  StatusOr<Value> EvalCompare(const Node &n);
  StatusOr<Value> EvalSlice(const Node &n);
  StatusOr<Value> EvalCall(const Node &n);
  Status EvalArgs(const Node &n, CallArgs &args);

  struct Depth {
    Renderer &r;
    explicit Depth(Renderer &rr) : r(rr) { ++r.depth_; }
    ~Depth() { --r.depth_; }
  };
  Status CheckDepth() const;

  const Body &body_;
  Chain chain_;
  // Every namespace this render made and still refers to. A namespace is the
  // one mutable value (a loop object is updated in place, but only with
  // values older than itself), so every reference cycle a template can build
  // ({% set ns.x = ns %}, ns.l = [ns], {'k': ns}, a bound dict method that
  // holds ns, ...) runs through one. Clearing their attributes when the
  // render ends frees the cycles; weak references could not, since a
  // namespace held only by another's attribute must stay alive. Namespaces
  // that nothing else holds are dropped as the list grows, so a loop that
  // makes one per iteration does not pile them up.
  std::vector<std::shared_ptr<Dict>> namespaces_;
  size_t compactAt_ = 64;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;
  long iterations_ = 0;
  bool located_ = false;  // the error already names its line
};

// The items a for loop walks: a list's items, a dict's keys, a string's
// characters; Undefined is empty.
StatusOr<List> Iterate(const Value &v);
// Python's str arithmetic and comparisons on UTF-8: code point counts.
size_t Utf8Length(const std::string &s);
std::vector<std::string> Utf8Chars(const std::string &s);

}  // namespace kiln::chat
