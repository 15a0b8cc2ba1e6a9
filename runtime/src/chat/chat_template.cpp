#include "kiln/chat_template.h"

#include <nlohmann/json.hpp>

#include "chat/ast.h"
#include "chat/render.h"

namespace kiln {

struct ChatTemplate::Impl {
  chat::Body body;
};

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;
ChatTemplate &ChatTemplate::operator=(ChatTemplate &&) noexcept = default;
ChatTemplate::ChatTemplate(const ChatTemplate &) = default;
ChatTemplate &ChatTemplate::operator=(const ChatTemplate &) = default;

StatusOr<ChatTemplate> ChatTemplate::Compile(std::string_view source) {
  auto body = chat::Parse(source);
  if (!body.ok()) return body.status().WithContext("chat template");
  auto impl = std::make_shared<Impl>();
  impl->body = std::move(body.value());
  ChatTemplate t;
  t.impl_ = std::move(impl);
  return t;
}

namespace {

// JSON to template values; containers nest at most kMaxDepth levels, the
// renderer's limit for every value (its recursion over values, repr, tojson
// and freeing, is bounded by it).
template <typename Json> StatusOr<chat::Value> FromJson(const Json &j, int depth) {
  using chat::Value;
  if (depth >= ChatTemplate::kMaxDepth && j.is_structured())
    return InvalidArgument("chat template input nested too deeply (more than " +
                           std::to_string(ChatTemplate::kMaxDepth) + " levels)");
  switch (j.type()) {
  case nlohmann::detail::value_t::null: return Value::None();
  case nlohmann::detail::value_t::boolean: return Value::Bool(j.template get<bool>());
  case nlohmann::detail::value_t::number_integer: return Value::Int(j.template get<int64_t>());
  case nlohmann::detail::value_t::number_unsigned: {
    uint64_t u = j.template get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
    return Value::Int(static_cast<int64_t>(u));
  }
  case nlohmann::detail::value_t::number_float: return Value::Float(j.template get<double>());
  case nlohmann::detail::value_t::string: return Value::Str(j.template get<std::string>());
  case nlohmann::detail::value_t::array: {
    chat::List items;
    for (const auto &x : j) {
      KILN_ASSIGN_OR_RETURN(Value v, FromJson(x, depth + 1));
      items.push_back(std::move(v));
    }
    return Value::MakeList(std::move(items));
  }
  case nlohmann::detail::value_t::object: {
    chat::Dict d;
    for (auto it = j.begin(); it != j.end(); ++it) {
      KILN_ASSIGN_OR_RETURN(Value v, FromJson(it.value(), depth + 1));
      d.items.emplace_back(it.key(), std::move(v));
    }
    return Value::MakeDict(std::move(d));
  }
  default: return InvalidArgument("chat template input holds a value JSON cannot express");
  }
}

template <typename Json>
StatusOr<std::string> RenderWith(const chat::Body &body, const Json &messages, bool addGenerationPrompt,
                                 const Json &extra) {
  if (!messages.is_array()) return InvalidArgument("chat template: messages must be a JSON array");
  if (!extra.is_object() && !extra.is_null()) return InvalidArgument("chat template: extra variables must be a JSON object");
  chat::Dict vars;
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      KILN_ASSIGN_OR_RETURN(chat::Value v, FromJson(it.value(), 0));
      vars.Set(it.key(), std::move(v));
    }
  }
  KILN_ASSIGN_OR_RETURN(chat::Value msgs, FromJson(messages, 0));
  vars.Set("messages", std::move(msgs));
  vars.Set("add_generation_prompt", chat::Value::Bool(addGenerationPrompt));
  chat::Renderer r(body, std::move(vars));
  auto out = r.Run();
  if (!out.ok()) return out.status().WithContext("chat template");
  return out;
}

}  // namespace

StatusOr<std::string> ChatTemplate::Render(const nlohmann::json &messages, bool addGenerationPrompt,
                                           const nlohmann::json &extra) const {
  if (!impl_) return InvalidArgument("chat template: not compiled");
  return RenderWith(impl_->body, messages, addGenerationPrompt, extra);
}

StatusOr<std::string> ChatTemplate::Render(const nlohmann::json &messages, bool addGenerationPrompt) const {
  return Render(messages, addGenerationPrompt, nlohmann::json::object());
}

StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json &messages, bool addGenerationPrompt,
                                           const nlohmann::ordered_json &extra) const {
  if (!impl_) return InvalidArgument("chat template: not compiled");
  return RenderWith(impl_->body, messages, addGenerationPrompt, extra);
}

}  // namespace kiln
