#include "serve/openai_response.h"

#include "serve/api_error.h"

#include <sys/random.h>

#include <atomic>
#include <cmath>
#include <random>

namespace kiln::serve {
namespace {

using ojson = nlohmann::ordered_json;

// OpenAI's stand-in for a token the model rules out entirely.
float Finite(float lp) { return std::isfinite(lp) ? lp : -9999.0f; }

std::string TokenText(const ResponseContext &ctx, int32_t id) {
  return ctx.tokenizer ? ctx.tokenizer->Decode({id}, /*skip_special_tokens=*/false)
                       : std::to_string(id);
}

ojson Bytes(const std::string &s) {
  ojson b = ojson::array();
  for (unsigned char c : s)
    b.push_back(static_cast<int>(c));
  return b;
}

// Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
// chat: {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}.
ojson LogprobsJson(const ResponseContext &ctx, const std::vector<SampledToken> &samples,
                   size_t offset) {
  if (ctx.endpoint == Endpoint::kChat) {
    ojson content = ojson::array();
    for (const SampledToken &s : samples) {
      const std::string t = TokenText(ctx, s.token);
      ojson top = ojson::array();
      for (int i = 0; i < ctx.top_logprobs && i < static_cast<int>(s.top.size()); ++i) {
        const std::string a = TokenText(ctx, s.top[i].token);
        top.push_back({{"token", a}, {"logprob", Finite(s.top[i].logprob)}, {"bytes", Bytes(a)}});
      }
      content.push_back({{"token", t},
                         {"logprob", Finite(s.logprob)},
                         {"bytes", Bytes(t)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  ojson tokens = ojson::array(), lps = ojson::array(), tops = ojson::array(),
        offsets = ojson::array();
  for (const SampledToken &s : samples) {
    const std::string t = TokenText(ctx, s.token);
    tokens.push_back(t);
    lps.push_back(Finite(s.logprob));
    ojson top = ojson::object();
    for (int i = 0; i < ctx.top_logprobs && i < static_cast<int>(s.top.size()); ++i)
      top[TokenText(ctx, s.top[i].token)] = Finite(s.top[i].logprob);
    tops.push_back(top);
    offsets.push_back(offset);
    offset += t.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

ojson Head(const ResponseContext &ctx, const char *object) {
  return {{"id", ctx.id}, {"object", object}, {"created", ctx.created}, {"model", ctx.model}};
}

} // namespace

std::string NewResponseId(const std::string &prefix) {
  // 128 random bits: an id says nothing about how many came before it.
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t r = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (r <= 0)
      break;
    got += static_cast<size_t>(r);
  }
  if (got < sizeof(bytes)) { // no getrandom: the C++ library's source
    thread_local std::random_device rd;
    for (unsigned char &b : bytes)
      b = static_cast<unsigned char>(rd());
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out = prefix;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

const char *ApiFinish(FinishReason r) {
  return r == FinishReason::kCancelled ? "cancelled" : ApiFinishReason(r);
}

nlohmann::json UsageJson(const Usage &u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

std::string Dump(const ojson &j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string CompletionBody(const ResponseContext &ctx, const std::vector<Response> &choices,
                           const Usage &usage) {
  const bool chat = ctx.endpoint == Endpoint::kChat;
  ojson j = Head(ctx, chat ? "chat.completion" : "text_completion");
  ojson list = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Response &r = choices[i];
    ojson c = {{"index", i}};
    if (chat)
      c["message"] = {{"role", "assistant"}, {"content", r.generated_text}};
    else if (!ctx.echo.empty())
      c["text"] = ctx.echo[i / static_cast<size_t>(ctx.n)] + r.generated_text;
    else
      c["text"] = r.generated_text;
    c["logprobs"] = ctx.logprobs ? LogprobsJson(ctx, r.logprobs, 0) : ojson(nullptr);
    c["finish_reason"] = ApiFinish(r.finish_reason);
    list.push_back(c);
  }
  j["choices"] = list;
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

std::string StreamChunk(const ResponseContext &ctx, int choice, const std::string &text,
                        const std::vector<SampledToken> &samples, bool first, const char *finish) {
  const bool chat = ctx.endpoint == Endpoint::kChat;
  ojson j = Head(ctx, chat ? "chat.completion.chunk" : "text_completion");
  ojson c = {{"index", choice}};
  if (chat) {
    ojson delta = ojson::object();
    if (first)
      delta["role"] = "assistant";
    if (!text.empty() || first)
      delta["content"] = text;
    c["delta"] = delta;
  } else {
    c["text"] = text;
  }
  c["logprobs"] = ctx.logprobs && !samples.empty() ? LogprobsJson(ctx, samples, 0) : ojson(nullptr);
  c["finish_reason"] = finish ? ojson(finish) : ojson(nullptr);
  j["choices"] = ojson::array({c});
  if (ctx.include_usage) // every chunk but the usage chunk says "usage": null
    j["usage"] = nullptr;
  return "data: " + Dump(j) + "\n\n";
}

std::string UsageChunk(const ResponseContext &ctx, const Usage &usage) {
  ojson j =
      Head(ctx, ctx.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = ojson::array();
  j["usage"] = UsageJson(usage);
  return "data: " + Dump(j) + "\n\n";
}

std::string StreamError(const std::string &message, const std::string &type) {
  ApiError e;
  e.status = 500;
  e.type = type;
  e.message = message;
  return "data: " + ErrorBody(e) + "\n\n";
}

std::string ErrorBody(const ApiError &e) {
  ojson j = {{"error",
              {{"message", e.message},
               {"type", e.type},
               {"param", e.param.empty() ? ojson(nullptr) : ojson(e.param)},
               {"code", e.code.empty() ? ojson(nullptr) : ojson(e.code)}}}};
  return Dump(j);
}

} // namespace kiln::serve
