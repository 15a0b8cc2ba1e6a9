// libFuzzer target: kiln serve's request layer (runtime/src/serve), the code
// between an HTTP body and the engine.
//
// Input: one selector byte (completions, chat completions, embeddings, raw
// HTTP), then the request body (or the bytes a client sends). A body goes
// through ParseBody and the endpoint's parser, as the server's routes call
// them; raw HTTP goes through the listener's request parser (http_wire.h),
// whole and a byte at a time, which must agree. A finding is a crash, a hang
// or a sanitizer report, or a broken contract:
//   - the HTTP parser: a refusal without a 4xx/5xx status and a message, a
//     request past its limits, or a different result fed byte by byte;
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
#include "serve/http_wire.h"
#include "serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <algorithm>
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

// Every request in `bytes`, parsed as the listener does (Feed, then Reset
// for the next pipelined one), fed in pieces of `step` bytes: one line per
// request or refusal.
std::string ParseHttp(const std::string &bytes, size_t step) {
  kiln::serve::WireLimits limits;
  limits.max_head_bytes = 512;
  limits.max_headers = 8;
  limits.max_body_bytes = 256;
  kiln::serve::RequestParser parser(limits);
  std::string out;
  size_t at = 0, end = 0;
  while (at < bytes.size()) {
    end = std::max(end, std::min(bytes.size(), at + step));
    size_t used = 0;
    const auto state = parser.Feed(bytes.data() + at, end - at, &used);
    Require(used <= end - at);
    at += used;
    if (state == kiln::serve::RequestParser::State::kNeedMore) {
      Require(at == end);
      if (end == bytes.size())
        break;
      continue;
    }
    if (state == kiln::serve::RequestParser::State::kError) {
      const auto &e = parser.error();
      Require(e.status >= 400 && e.status < 600 && !e.message.empty());
      out += "error " + std::to_string(e.status) + "\n";
      return out; // the listener closes the connection after a refusal
    }
    const kiln::serve::WireRequest &r = parser.request();
    Require(r.body.size() <= limits.max_body_bytes);
    Require(r.headers.size() <= limits.max_headers);
    Require(!r.method.empty() && !r.path.empty() && r.path[0] == '/');
    out += r.method + " " + r.target + " " + std::to_string(r.body.size()) + " " +
           std::to_string(r.keep_alive) + "\n" + r.body + "\n";
    parser.Reset();
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const int route = data[0] % 4;
  const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (route == 3) {
    const std::string whole = ParseHttp(text, text.size() + 1);
    Require(ParseHttp(text, 1) == whole);
    Require(ParseHttp(text, 7) == whole);
    return 0;
  }
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
