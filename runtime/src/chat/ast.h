// The syntax tree of a template: one node type for expressions and
// statements, so the parser and renderer stay small.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace kiln::chat {

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    // expressions
    kLiteral,   // literal
    kName,      // name
    kList,      // kids: items (tuples too)
    kDict,      // kids: key, value, key, value, ...
    kAttr,      // kids[0].name
    kItem,      // kids[0][kids[1]]
    kSlice,     // kids[0][kids[1]:kids[2]:kids[3]], any of 1..3 may be null
    kCall,      // kids[0](args, kwargs)
    kFilter,    // kids[0] | name(args, kwargs)
    kTest,      // kids[0] is [not] name(args); negated
    kUnary,     // name (op) kids[0]
    kBinary,    // kids[0] name kids[1]; and/or short-circuit
    kCompare,   // kids[0] ops[0] kids[1] ops[1] kids[2] ...
    kCond,      // kids[0] if kids[1] else kids[2] (null: undefined)
    // statements
    kText,      // name: the text
    kOutput,    // {{ kids[0] }}
    kIf,        // kids: conditions; bodies: one per condition, plus else
    kFor,       // for names in kids[0] [if kids[1]]: bodies[0], else bodies[1]
    kSet,       // names = kids[0], or name.attr = kids[0] (attr non-empty)
    kSetBlock,  // name: the text of bodies[0]
    kMacro,     // name(names = kids defaults; null: none): bodies[0]
    kBreak,
    kContinue,
    kBlock,     // bodies[0] rendered as is ({% generation %})
  };

  Kind kind;
  int line = 0, col = 0;
  std::string name;
  std::string attr;
  bool negated = false;
  Value literal;
  std::vector<NodePtr> kids;
  std::vector<std::pair<std::string, NodePtr>> kwargs;
  std::vector<std::string> names;  // for targets, macro parameters, compare ops
  std::vector<Body> bodies;

  Node(Kind k, int l, int c) : kind(k), line(l), col(c) {}
};

// Parses a whole template into a body of statements. Features outside the
// subset are errors naming the construct and its line:col.
StatusOr<Body> Parse(std::string_view source);

}  // namespace kiln::chat
