// libFuzzer target: kiln serve's request layer (runtime/src/serve), the code
// between an HTTP body and the engine.
//
// Input: one selector byte (completions, chat completions, embeddings), then
// the request body. The body goes through ParseBody and the endpoint's
// parser, as the server's routes call them. A finding is a crash, a hang or
// a sanitizer report, or a broken contract:
//   - a refusal that is not a 4xx with a message, or whose error body is
//     not the OpenAI JSON error shape;
//   - an accepted request the engine would refuse (ValidateRequestParams),
//     which the server would answer with a 500 instead of a 400;
//   - an accepted request past the parser's limits (n, prompts, stop), or
//     without a prompt;
// Accepted chat messages are rendered through a ChatML template (a template
// may refuse them, as the server's 400 says; it must not crash).
#include "kiln/chat_template.h"
#include "kiln/request.h"
#include "serve/api_error.h"
#include "serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace {

using kiln::serve::ApiError;

void Require(bool ok) {
  if (!ok)
    __builtin_trap();
}

void CheckRefusal(const ApiError &e) {
  Require(e.status >= 400 && e.status < 500 && !e.message.empty() && !e.type.empty());
  auto body = nlohmann::json::parse(kiln::serve::ErrorBody(e), nullptr, /*allow_exceptions=*/false);
  Require(body.is_object() && body.contains("error") && body["error"].is_object() &&
          body["error"]["message"] == e.message);
}

// A ChatML template, as the Qwen2 family ships it (content as a string or a
// list of text parts, a system prompt, the generation prompt).
const kiln::ChatTemplate &Template() {
  static const kiln::ChatTemplate t = *kiln::ChatTemplate::Compile(
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' }}"
      "{% if m['content'] is string %}{{ m['content'] }}"
      "{% elif m['content'] is iterable %}{% for p in m['content'] %}"
      "{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}"
      "{{ '<|im_end|>\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}");
  return t;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const int route = data[0] % 3;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  nlohmann::json body;
  if (auto e = kiln::serve::ParseBody(text, &body)) {
    CheckRefusal(*e);
    return 0;
  }
  if (route == 2) {
    kiln::serve::EmbeddingJob job;
    constexpr int kMaxInputs = 8;
    if (auto e = kiln::serve::ParseEmbeddingJob(body, kMaxInputs, &job)) {
      CheckRefusal(*e);
      return 0;
    }
    const size_t inputs = job.ids.empty() ? job.texts.size() : job.ids.size();
    Require(inputs >= 1 && inputs <= static_cast<size_t>(kMaxInputs));
    for (const auto &ids : job.ids)
      Require(!ids.empty());
    return 0;
  }
  const auto endpoint =
      route == 0 ? kiln::serve::Endpoint::kCompletions : kiln::serve::Endpoint::kChat;
  kiln::serve::ParseLimits limits;
  limits.context_length = 64;
  kiln::RequestParams defaults;
  kiln::serve::CompletionJob job;
  if (auto e = kiln::serve::ParseCompletionJob(body, endpoint, defaults, limits, &job)) {
    CheckRefusal(*e);
    return 0;
  }
  Require(job.n >= 1 && job.n <= limits.max_n);
  Require(!job.prompts.empty() && job.prompts.size() <= static_cast<size_t>(limits.max_prompts));
  for (const kiln::Request &r : job.prompts) {
    Require(kiln::ValidateRequestParams(r.params).ok());
    Require(r.params.stop.size() <= static_cast<size_t>(limits.max_stop));
    if (endpoint == kiln::serve::Endpoint::kCompletions)
      Require(!r.prompt.empty() || !r.prompt_ids.empty());
  }
  if (endpoint == kiln::serve::Endpoint::kChat) {
    Require(job.messages.is_array() && !job.messages.empty());
    auto rendered = Template().Render(job.messages, /*add_generation_prompt=*/true);
    Require(rendered.ok() || !rendered.status().message().empty());
  }
  return 0;
}
