// Response bodies of the OpenAI API: whole completions, server-sent-event
// chunks, usage, logprobs, models and embeddings. Pure functions of their
// inputs, so the HTTP layer only decides when to send them.
#pragma once

#include "kiln/response.h"
#include "kiln/tokenizer.h"
#include "serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::serve {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct ResponseContext {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id; // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  const Tokenizer *tokenizer = nullptr; // token strings of logprobs
  bool logprobs = false;
  int top_logprobs = 0;
  bool include_usage = false; // stream_options.include_usage: chunks carry "usage": null
  int n = 1;                  // completions per prompt: choice i is prompt i / n's
  std::vector<std::string> echo; // "echo": each prompt's text, put before its choices' text
};

// A fresh response id with `prefix` ("cmpl-", "chatcmpl-").
std::string NewResponseId(const std::string &prefix);

// The whole response of a non-streaming request; `choices` in choice order.
std::string CompletionBody(const ResponseContext &ctx, const std::vector<Response> &choices,
                           const Usage &usage);

// One SSE event ("data: {...}\n\n") carrying a piece of choice `choice`:
// its text and sampled tokens (logprobs), and finish_reason when `final`.
// Chat's first event of a choice carries the assistant role.
std::string StreamChunk(const ResponseContext &ctx, int choice, const std::string &text,
                        const std::vector<SampledToken> &samples, bool first, const char *finish);
// The last event before [DONE] with stream_options.include_usage.
std::string UsageChunk(const ResponseContext &ctx, const Usage &usage);
// An error inside a stream that already started.
std::string StreamError(const std::string &message, const std::string &type);
inline const char *kStreamDone = "data: [DONE]\n\n";

// What a finish reason is called in the API: "stop", "length", or
// "cancelled" for a request the server cut short.
const char *ApiFinish(FinishReason r);

nlohmann::json UsageJson(const Usage &u);
std::string Dump(const nlohmann::ordered_json &j);

} // namespace kiln::serve
