// Chat templates: the subset of Jinja that Hugging Face chat templates use,
// rendered the way transformers renders them (trim_blocks and lstrip_blocks
// on, an immutable sandbox, raise_exception and strftime_now as globals,
// tojson as json.dumps with ensure_ascii=False). docs/chat-templates.md lists
// the subset.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "kiln/status.h"

namespace kiln {

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

}  // namespace kiln
