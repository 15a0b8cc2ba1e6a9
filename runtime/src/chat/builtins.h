// Filters, tests, methods and globals: the names the parser accepts and the
// renderer calls.
#pragma once

#include <string>

#include "chat/value.h"

namespace kiln::chat {

bool IsKnownFilter(const std::string &name);
bool IsKnownTest(const std::string &name);
// Methods callable as obj.name(...) on strings, dicts and the loop object.
bool IsKnownMethod(const std::string &name);

StatusOr<Value> ApplyFilter(Renderer &r, const std::string &name, const Value &v, CallArgs &args);
StatusOr<bool> ApplyTest(Renderer &r, const std::string &name, const Value &v, CallArgs &args);
// obj.name as jinja2 resolves it: an attribute (a method) first, then an item.
StatusOr<Value> GetAttr(const Value &obj, const std::string &name);
// obj[key] as jinja2 resolves it: an item first, then an attribute.
StatusOr<Value> GetItem(const Value &obj, const Value &key);
// The globals transformers gives a template: range, namespace, dict,
// raise_exception, strftime_now.
Dict Globals();

}  // namespace kiln::chat
