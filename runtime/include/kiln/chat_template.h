// Chat templates: the subset of Jinja that Hugging Face chat templates use,
// rendered the way transformers renders them (trim_blocks and lstrip_blocks
// on, an immutable sandbox, raise_exception and strftime_now as globals,
// tojson as json.dumps with ensure_ascii=False). docs/chat-templates.md lists
// the subset.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "kiln/status.h"

namespace kiln {

class Plan;      // kiln/plan.h
class Tokenizer; // kiln/tokenizer.h

// A compiled HF chat template (Jinja subset). Compile() rejects, with line:col
// and the construct named, any feature outside the subset. Copies share the
// compiled template; Render() may be called from many threads at once.
class ChatTemplate {
public:
  ChatTemplate();
  ~ChatTemplate();
  ChatTemplate(ChatTemplate &&) noexcept;
  ChatTemplate &operator=(ChatTemplate &&) noexcept;
  ChatTemplate(const ChatTemplate &);
  ChatTemplate &operator=(const ChatTemplate &);

  static StatusOr<ChatTemplate> Compile(std::string_view source);

  // messages: JSON array of {"role": ..., "content": ...} (content may be a
  // string or a list of {"type":"text","text":...} parts; tool_calls etc. pass
  // through as values). extra: other top-level variables (bos_token,
  // eos_token, tools, ...). A template error (raise_exception, a type error,
  // the output or loop limits) is an InvalidArgument status naming the line.
  //
  // nlohmann::json keeps object keys sorted, so `tojson` of a dict prints its
  // keys sorted; pass ordered_json to keep the request's key order, as
  // transformers does.
  StatusOr<std::string> Render(const nlohmann::json &messages, bool add_generation_prompt,
                               const nlohmann::json &extra) const;
  StatusOr<std::string> Render(const nlohmann::json &messages, bool add_generation_prompt) const;
  StatusOr<std::string> Render(const nlohmann::ordered_json &messages, bool add_generation_prompt,
                               const nlohmann::ordered_json &extra) const;

  // Limits that keep a hostile template from exhausting the process.
  static constexpr size_t kMaxOutputBytes = 16u << 20;
  static constexpr int kMaxDepth = 200;           // nesting of calls, expressions and values
  static constexpr long kMaxLoopIterations = 200000;  // all loops of one render

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The chat template a plan carries (its tokenizer_config.json's, checked by
// kiln build), compiled once, with the plan's bos_token and eos_token (its
// BOS and first EOS token, as the tokenizer spells them) as the variables
// transformers' apply_chat_template passes. What kiln run --chat and kiln
// serve's /v1/chat/completions render. Defined in the runtime library
// (kiln_runtime), not the template library: it reads a Plan.
class PlanChatTemplate {
public:
  // empty() when the plan has no template; InvalidArgument when its
  // template does not compile (a plan from another or an older kiln).
  // `tokenizer` may be null: then neither variable is set.
  static StatusOr<PlanChatTemplate> ForPlan(const Plan &plan, const Tokenizer *tokenizer);

  bool empty() const { return !template_.has_value(); }
  // As ChatTemplate::Render, with bos_token and eos_token added to `extra`
  // where it has none of its own. InvalidArgument when empty().
  StatusOr<std::string> Render(const nlohmann::ordered_json &messages, bool add_generation_prompt,
                               const nlohmann::ordered_json &extra) const;
  StatusOr<std::string> Render(const nlohmann::json &messages, bool add_generation_prompt) const;

private:
  std::optional<ChatTemplate> template_;
  std::optional<std::string> bos_token_, eos_token_;
};

}  // namespace kiln
