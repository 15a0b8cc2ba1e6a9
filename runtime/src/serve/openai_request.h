// The OpenAI request bodies of /v1/completions and /v1/chat/completions,
// checked field by field into engine requests. Every field is either used,
// or listed as accepted-and-ignored (`user`); any other field is a 400 that
// names it, so a client never believes a setting took effect when it did not.
#pragma once

#include "kiln/pipeline.h"
#include "serve/api_error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kiln::serve {

enum class Endpoint { kCompletions, kChat };

struct CompletionJob {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  // One engine request per prompt; chat has one, rendered from `messages`
  // by the caller (the prompt text is empty until then).
  std::vector<Request> prompts;
  nlohmann::json messages; // chat: the checked messages
  int n = 1;
  bool stream = false;
  bool include_usage = false; // stream_options.include_usage
  bool echo = false;          // completions: each choice's text starts with its prompt
  bool logprobs = false;      // report logprobs at all
  int top_logprobs = 0;       // alternatives per token
  double timeout_s = 0;       // the `timeout` extension; 0: the server's default
};

// Limits the parser enforces beyond the engine's own checks.
struct ParseLimits {
  int max_n = 16;
  int max_prompts = 64;
  int max_stop = 16;
  // The response a request may ask for: prompts x n x (1 + top_logprobs)
  // token streams at most.
  int max_streams = 256;
  int64_t context_length = 0; // default max_tokens when known (0: the plan default)
  double max_timeout_s = 3600;
};

// The JSON document of a request body, or the 400 that says why it is not
// one (bad syntax, invalid UTF-8, a number past a double).
std::optional<ApiError> ParseBody(const std::string &body, nlohmann::json *out);

// Fills `job` from `body`, starting from the plan's `defaults`. Returns the
// 400 to send when the body is wrong.
std::optional<ApiError> ParseCompletionJob(const nlohmann::json &body, Endpoint endpoint,
                                           const RequestParams &defaults, const ParseLimits &limits,
                                           CompletionJob *job);

// The embeddings request: `input` (a string, a list of strings, token ids or
// lists of them), `model`, `encoding_format` ("float" only), `user`.
struct EmbeddingJob {
  std::string model;
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids; // used instead of texts when not empty
  // encoding_format "base64": each vector as the base64 of its little-endian
  // float32 bytes (what the openai SDKs ask for by default).
  bool base64 = false;
};
std::optional<ApiError> ParseEmbeddingJob(const nlohmann::json &body, int max_inputs,
                                          EmbeddingJob *job);

// /tokenize, shaped as vLLM's: a "prompt" to encode, or chat "messages"
// rendered with the plan's template first. add_special_tokens defaults as
// vLLM's do: true for a prompt (as /v1/completions encodes one), false for
// messages (the template writes its own, as /v1/chat/completions).
// "return_token_strs" adds each id's vocabulary string.
struct TokenizeJob {
  std::string model;
  bool chat = false;
  std::string prompt;      // !chat
  nlohmann::json messages; // chat: the checked messages
  bool add_special_tokens = true;
  bool add_generation_prompt = true; // chat: open the assistant's turn
  bool return_token_strs = false;
};
std::optional<ApiError> ParseTokenizeJob(const nlohmann::json &body, TokenizeJob *job);

// /detokenize: "tokens", a list of ids (it may be empty), and "model".
struct DetokenizeJob {
  std::string model;
  std::vector<int32_t> tokens;
};
std::optional<ApiError> ParseDetokenizeJob(const nlohmann::json &body, DetokenizeJob *job);

} // namespace kiln::serve
