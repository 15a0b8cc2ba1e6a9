#include "serve/openai_request.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

namespace kiln::serve {
namespace {

using json = nlohmann::json;

// Fields of each endpoint. `user` is accepted and ignored (docs/serve.md).
const std::set<std::string> kCommon = {"model",
                                       "max_tokens",
                                       "temperature",
                                       "top_p",
                                       "top_k",
                                       "min_p",
                                       "n",
                                       "stop",
                                       "seed",
                                       "presence_penalty",
                                       "frequency_penalty",
                                       "repetition_penalty",
                                       "stream",
                                       "stream_options",
                                       "user",
                                       "response_format",
                                       "logit_bias",
                                       "timeout",
                                       "min_tokens",
                                       "ignore_eos",
                                       "stop_token_ids"};
const std::set<std::string> kCompletionOnly = {"prompt", "logprobs", "echo"};
const std::set<std::string> kChatOnly = {"messages", "logprobs", "top_logprobs",
                                         "max_completion_tokens"};

ApiError Bad(const std::string &param, const std::string &what) {
  return BadRequest("'" + param + "' " + what, param);
}

std::optional<ApiError> GetNumber(const json &body, const char *key, float *out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null())
    return std::nullopt;
  if (!it->is_number())
    return Bad(key, "must be a number");
  *out = it->get<float>();
  return std::nullopt;
}

std::optional<ApiError> GetInt(const json &body, const char *key, int64_t lo, int64_t hi,
                               std::optional<int64_t> *out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null())
    return std::nullopt;
  if (!it->is_number_integer())
    return Bad(key, "must be an integer");
  const int64_t v =
      it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX ? INT64_MAX : it->get<int64_t>();
  if (v < lo || v > hi)
    return Bad(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                        std::to_string(v));
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> GetBool(const json &body, const char *key, bool *out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null())
    return std::nullopt;
  if (!it->is_boolean())
    return Bad(key, "must be true or false");
  *out = it->get<bool>();
  return std::nullopt;
}

// A token id list: non-empty, every element a non-negative integer.
bool IdList(const json &v, std::vector<int32_t> *ids) {
  if (!v.is_array() || v.empty())
    return false;
  for (const json &x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
      return false;
    ids->push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  return true;
}

std::optional<ApiError> ParsePrompts(const json &p, int max_prompts, std::vector<Request> *out) {
  const char *kWhat = "must be a string, a list of strings, a list of token ids or a list of "
                      "token-id lists";
  if (p.is_string()) {
    out->emplace_back().prompt = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    if (!IdList(p, &out->emplace_back().prompt_ids))
      return Bad("prompt", kWhat);
  } else if (p.is_array() && !p.empty()) {
    for (const json &x : p) {
      Request r;
      if (x.is_string())
        r.prompt = x.get<std::string>();
      else if (!IdList(x, &r.prompt_ids))
        return Bad("prompt", kWhat);
      out->push_back(std::move(r));
    }
  } else {
    return Bad("prompt", kWhat);
  }
  if (static_cast<int>(out->size()) > max_prompts)
    return Bad("prompt", "holds " + std::to_string(out->size()) + " prompts; at most " +
                             std::to_string(max_prompts) + " per request");
  for (const Request &r : *out)
    if (r.prompt_ids.empty() && r.prompt.empty())
      return Bad("prompt", "must not be empty");
  return std::nullopt;
}

// A message's content: a string, or a list of {"type": "text", "text"} parts,
// which are joined (the engine reads text only).
std::optional<ApiError> CheckMessages(const json &m, json *out) {
  if (!m.is_array() || m.empty())
    return Bad("messages", "must be a non-empty list of messages");
  *out = json::array();
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json &msg = m[i];
    if (!msg.is_object())
      return Bad(where, "must be an object");
    json clean = json::object();
    for (auto it = msg.begin(); it != msg.end(); ++it) {
      const std::string &k = it.key();
      if (k == "role") {
        if (!it->is_string())
          return Bad(where + ".role", "must be a string");
        clean["role"] = *it;
      } else if (k == "content") {
        if (it->is_string() || it->is_null()) {
          clean["content"] = it->is_null() ? json("") : *it;
        } else if (it->is_array()) {
          std::string text;
          for (const json &part : *it) {
            if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
                !part["text"].is_string())
              return Bad(where + ".content",
                         "parts must be {\"type\": \"text\", \"text\": ...} (text only)");
            text += part["text"].get<std::string>();
          }
          clean["content"] = text;
        } else {
          return Bad(where + ".content", "must be a string or a list of text parts");
        }
      } else if (k == "name") {
        if (!it->is_string())
          return Bad(where + ".name", "must be a string");
        clean["name"] = *it;
      } else {
        return Bad(where + "." + k, "is not a supported message field");
      }
    }
    if (!clean.contains("role"))
      return Bad(where + ".role", "is required");
    if (!clean.contains("content"))
      clean["content"] = "";
    out->push_back(std::move(clean));
  }
  return std::nullopt;
}

// A seed for a request that gave none: a fresh one each time, so unseeded
// requests differ as OpenAI's do.
uint64_t FreshSeed() {
  static std::atomic<uint64_t> counter{std::random_device{}() |
                                       (uint64_t{std::random_device{}()} << 32)};
  return counter.fetch_add(0x9E3779B97F4A7C15ull);
}

// The engine's message starts with the field's name ("top_p must be ...").
ApiError FromEngine(const Status &s) {
  const std::string &m = s.message();
  return BadRequest(m, m.substr(0, m.find(' ')));
}

} // namespace

std::optional<ApiError> ParseCompletionJob(const json &body, Endpoint endpoint,
                                           const RequestParams &defaults, const ParseLimits &limits,
                                           CompletionJob *job) {
  *job = CompletionJob();
  if (!body.is_object())
    return BadRequest("the request body must be a JSON object");
  const bool chat = endpoint == Endpoint::kChat;
  const std::set<std::string> &own = chat ? kChatOnly : kCompletionOnly;
  for (auto it = body.begin(); it != body.end(); ++it)
    if (!kCommon.count(it.key()) && !own.count(it.key()))
      return BadRequest("unknown field '" + it.key() + "'", it.key());
  job->endpoint = endpoint;
  if (body.contains("model") && !body["model"].is_string())
    return Bad("model", "must be a string");
  job->model = body.value("model", "");

  RequestParams p = defaults;
  p.max_new_tokens =
      limits.context_length > 0 ? static_cast<int>(limits.context_length) : defaults.max_new_tokens;
  std::optional<int64_t> v;
  if (auto e = GetInt(body, "max_tokens", 1, INT32_MAX, &v))
    return e;
  if (chat)
    if (auto e = GetInt(body, "max_completion_tokens", 1, INT32_MAX, &v))
      return e;
  if (v)
    p.max_new_tokens = static_cast<int>(*v);
  v.reset();
  if (auto e = GetInt(body, "min_tokens", 0, INT32_MAX, &v))
    return e;
  if (v)
    p.min_new_tokens = static_cast<int>(*v);
  p.sampling.temperature = 1.0f; // OpenAI's default; 0 is greedy
  if (auto e = GetNumber(body, "temperature", &p.sampling.temperature))
    return e;
  if (auto e = GetNumber(body, "top_p", &p.sampling.top_p))
    return e;
  if (auto e = GetNumber(body, "min_p", &p.sampling.min_p))
    return e;
  if (auto e = GetNumber(body, "presence_penalty", &p.sampling.presence_penalty))
    return e;
  if (auto e = GetNumber(body, "frequency_penalty", &p.sampling.frequency_penalty))
    return e;
  if (auto e = GetNumber(body, "repetition_penalty", &p.sampling.repetition_penalty))
    return e;
  v.reset();
  if (auto e = GetInt(body, "top_k", -1, INT32_MAX, &v))
    return e;
  if (v)
    p.sampling.top_k = *v < 0 ? 0 : static_cast<int>(*v); // -1 is vLLM's "no limit"
  v.reset();
  if (auto e = GetInt(body, "n", 1, limits.max_n, &v))
    return e;
  p.n = v ? static_cast<int>(*v) : 1;
  job->n = p.n;
  v.reset();
  if (auto e = GetInt(body, "seed", INT64_MIN, INT64_MAX, &v))
    return e;
  p.sampling.seed = v ? static_cast<uint64_t>(*v) : FreshSeed();
  if (auto e = GetBool(body, "ignore_eos", &p.ignore_eos))
    return e;
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json &s = body["stop"];
    p.stop.clear();
    if (s.is_string()) {
      p.stop.push_back(s.get<std::string>());
    } else if (s.is_array() && static_cast<int>(s.size()) <= limits.max_stop) {
      for (const json &x : s) {
        if (!x.is_string())
          return Bad("stop", "must be a string or a list of strings");
        p.stop.push_back(x.get<std::string>());
      }
    } else {
      return Bad("stop", "must be a string or a list of at most " +
                             std::to_string(limits.max_stop) + " strings");
    }
    for (const std::string &x : p.stop)
      if (x.empty())
        return Bad("stop", "must not hold an empty string");
  }
  if (body.contains("stop_token_ids") && !body["stop_token_ids"].is_null()) {
    p.stop_token_ids.clear();
    if (!IdList(body["stop_token_ids"], &p.stop_token_ids))
      return Bad("stop_token_ids", "must be a non-empty list of token ids");
  }

  // Logprobs: completions take an integer (alternatives per token), chat a
  // boolean plus top_logprobs. The engine reports the chosen token's logprob
  // with at least one alternative, so 0 alternatives asks it for 1.
  if (chat) {
    if (auto e = GetBool(body, "logprobs", &job->logprobs))
      return e;
    v.reset();
    if (auto e = GetInt(body, "top_logprobs", 0, kMaxLogprobs, &v))
      return e;
    if (v && !job->logprobs)
      return Bad("top_logprobs", "needs \"logprobs\": true");
    job->top_logprobs = v ? static_cast<int>(*v) : 0;
  } else {
    v.reset();
    if (auto e = GetInt(body, "logprobs", 0, kMaxLogprobs, &v))
      return e;
    job->logprobs = v.has_value();
    job->top_logprobs = v ? static_cast<int>(*v) : 0;
  }
  p.sampling.logprobs = job->logprobs ? std::max(1, job->top_logprobs) : 0;
  if (body.contains("logit_bias") && !body["logit_bias"].is_null()) {
    const json &lb = body["logit_bias"];
    constexpr size_t kMaxBiased = 300; // OpenAI's limit
    if (!lb.is_object() || lb.size() > kMaxBiased)
      return Bad("logit_bias", "must be an object of at most 300 token ids (as strings) to "
                               "numbers in [-100, 100]");
    for (auto it = lb.begin(); it != lb.end(); ++it) {
      const std::string &k = it.key();
      if (k.empty() || k.size() > 9 ||
          !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return Bad("logit_bias", "has the key '" + k + "': keys are token ids");
      if (!it->is_number() || !(it->get<double>() >= -100 && it->get<double>() <= 100))
        return Bad("logit_bias", "gives token " + k + " " + it->dump() +
                                     ": biases are numbers in [-100, 100]");
      p.sampling.logit_bias.emplace_back(std::stoi(k), it->get<float>());
    }
  }
  if (!chat) {
    if (auto e = GetBool(body, "echo", &job->echo))
      return e;
    if (job->echo && job->logprobs)
      return Bad("echo", "with logprobs is not supported (the prompt's own logprobs are not "
                         "computed)");
  }

  if (auto e = GetBool(body, "stream", &job->stream))
    return e;
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json &so = body["stream_options"];
    if (!so.is_object())
      return Bad("stream_options", "must be an object");
    if (!job->stream)
      return Bad("stream_options", "is only allowed with \"stream\": true");
    for (auto it = so.begin(); it != so.end(); ++it)
      if (it.key() != "include_usage")
        return BadRequest("unknown field 'stream_options." + it.key() + "'",
                          "stream_options." + it.key());
    if (auto e = GetBool(so, "include_usage", &job->include_usage))
      return Bad("stream_options.include_usage", "must be true or false");
  }
  if (body.contains("timeout") && !body["timeout"].is_null()) {
    const json &t = body["timeout"];
    if (!t.is_number() || !(t.get<double>() > 0) || t.get<double>() > limits.max_timeout_s)
      return Bad("timeout", "must be a number of seconds in (0, " +
                                std::to_string(static_cast<int64_t>(limits.max_timeout_s)) + "]");
    job->timeout_s = t.get<double>();
  }
  if (body.contains("user") && !body["user"].is_string() && !body["user"].is_null())
    return Bad("user", "must be a string");
  // Plain text is what the engine writes; structured output is not served
  // yet, and a client asking for it must not believe it got it.
  if (body.contains("response_format") && !body["response_format"].is_null()) {
    const json &rf = body["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
      return Bad("response_format", "must be an object with a \"type\"");
    for (auto it = rf.begin(); it != rf.end(); ++it)
      if (it.key() != "type")
        return Bad("response_format", "has an unknown field '" + it.key() + "'");
    if (rf["type"] != "text")
      return Bad("response_format", "type '" + rf["type"].get<std::string>() +
                                        "' is not supported by this server (\"text\" only)");
  }

  Status ok = ValidateRequestParams(p);
  if (!ok.ok())
    return FromEngine(ok);

  job->prompts.clear();
  if (chat) {
    if (!body.contains("messages"))
      return Bad("messages", "is required");
    if (auto e = CheckMessages(body["messages"], &job->messages))
      return e;
    job->prompts.emplace_back();
  } else {
    if (!body.contains("prompt"))
      return Bad("prompt", "is required");
    if (auto e = ParsePrompts(body["prompt"], limits.max_prompts, &job->prompts))
      return e;
  }
  const int64_t streams = static_cast<int64_t>(job->prompts.size()) * job->n *
                          (1 + (job->logprobs ? job->top_logprobs : 0));
  if (streams > limits.max_streams)
    return Bad(job->logprobs ? "top_logprobs" : "n",
               "asks for " + std::to_string(job->prompts.size()) + " prompt(s) x n=" +
                   std::to_string(job->n) + " x (1 + top_logprobs=" +
                   std::to_string(job->logprobs ? job->top_logprobs : 0) + ") = " +
                   std::to_string(streams) + " token streams; this server answers at most " +
                   std::to_string(limits.max_streams) + " per request: split it");
  for (Request &r : job->prompts)
    r.params = p;
  return std::nullopt;
}

std::optional<ApiError> ParseBody(const std::string &body, nlohmann::json *out) {
  try {
    *out = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception &e) {
    // parse_error, and out_of_range for a number past a double (1e999). The
    // parser quotes the bytes it stopped at, which may be invalid UTF-8: they
    // are written as \xNN, so the message itself is valid UTF-8.
    std::string what;
    for (unsigned char c : std::string(e.what())) {
      if (c < 0x80) {
        what += static_cast<char>(c);
      } else {
        static const char kHex[] = "0123456789abcdef";
        what += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
      }
    }
    ApiError err = BadRequest("the body is not valid JSON: " + what);
    err.code = "invalid_json";
    return err;
  }
  return std::nullopt;
}

std::optional<ApiError> ParseEmbeddingJob(const json &body, int max_inputs, EmbeddingJob *job) {
  *job = EmbeddingJob();
  if (!body.is_object())
    return BadRequest("the request body must be a JSON object");
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string &k = it.key();
    if (k != "input" && k != "model" && k != "encoding_format" && k != "user")
      return BadRequest("unknown field '" + k + "'", k);
  }
  if (body.contains("model") && !body["model"].is_string())
    return Bad("model", "must be a string");
  job->model = body.value("model", "");
  if (body.contains("encoding_format")) {
    const json &f = body["encoding_format"];
    if (!f.is_string() || (f != "float" && f != "base64"))
      return Bad("encoding_format", "must be \"float\" or \"base64\"");
    job->base64 = f == "base64";
  }
  if (!body.contains("input"))
    return Bad("input", "is required");
  const json &in = body["input"];
  const char *kWhat = "must be a string, a list of strings, token ids or lists of token ids";
  if (in.is_string()) {
    job->texts.push_back(in.get<std::string>());
  } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
    if (!IdList(in, &job->ids.emplace_back()))
      return Bad("input", kWhat);
  } else if (in.is_array() && !in.empty() && in[0].is_array()) {
    for (const json &x : in)
      if (!IdList(x, &job->ids.emplace_back()))
        return Bad("input", kWhat);
  } else if (in.is_array() && !in.empty()) {
    for (const json &x : in) {
      if (!x.is_string())
        return Bad("input", kWhat);
      job->texts.push_back(x.get<std::string>());
    }
  } else {
    return Bad("input", kWhat);
  }
  const size_t count = job->ids.empty() ? job->texts.size() : job->ids.size();
  if (static_cast<int>(count) > max_inputs)
    return Bad("input",
               "holds " + std::to_string(count) + " inputs; at most " + std::to_string(max_inputs));
  for (const std::string &t : job->texts)
    if (t.empty())
      return Bad("input", "must not hold an empty string");
  return std::nullopt;
}

std::optional<ApiError> ParseTokenizeJob(const json &body, TokenizeJob *job) {
  *job = TokenizeJob();
  if (!body.is_object())
    return BadRequest("the request body must be a JSON object");
  job->chat = body.contains("messages");
  if (job->chat && body.contains("prompt"))
    return Bad("messages", "and 'prompt' were both given: give one");
  if (!job->chat && !body.contains("prompt"))
    return Bad("prompt", "is required (or 'messages', for a chat)");
  // The fields of each form; one of the other form is named, not ignored.
  static const std::set<std::string> kPromptForm = {"model", "prompt", "add_special_tokens",
                                                    "return_token_strs"};
  static const std::set<std::string> kChatForm = {"model",
                                                  "messages",
                                                  "add_special_tokens",
                                                  "add_generation_prompt",
                                                  "continue_final_message",
                                                  "return_token_strs"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if ((job->chat ? kChatForm : kPromptForm).count(it.key()))
      continue;
    if (kChatForm.count(it.key()))
      return Bad(it.key(), "goes with 'messages', not 'prompt'");
    return BadRequest("unknown field '" + it.key() + "'", it.key());
  }
  if (body.contains("model") && !body["model"].is_string())
    return Bad("model", "must be a string");
  job->model = body.value("model", "");
  job->add_special_tokens = !job->chat;
  if (auto e = GetBool(body, "add_special_tokens", &job->add_special_tokens))
    return e;
  if (auto e = GetBool(body, "return_token_strs", &job->return_token_strs))
    return e;
  if (!job->chat) {
    if (!body["prompt"].is_string())
      return Bad("prompt", "must be a string");
    job->prompt = body["prompt"].get<std::string>();
    return std::nullopt;
  }
  if (auto e = GetBool(body, "add_generation_prompt", &job->add_generation_prompt))
    return e;
  // Continuing the last message means cutting the rendered text after it,
  // which no kiln route does; accepted only as its default.
  bool continue_final = false;
  if (auto e = GetBool(body, "continue_final_message", &continue_final))
    return e;
  if (continue_final)
    return Bad("continue_final_message", "true is not supported by this server");
  return CheckMessages(body["messages"], &job->messages);
}

std::optional<ApiError> ParseDetokenizeJob(const json &body, DetokenizeJob *job) {
  *job = DetokenizeJob();
  if (!body.is_object())
    return BadRequest("the request body must be a JSON object");
  for (auto it = body.begin(); it != body.end(); ++it)
    if (it.key() != "model" && it.key() != "tokens")
      return BadRequest("unknown field '" + it.key() + "'", it.key());
  if (body.contains("model") && !body["model"].is_string())
    return Bad("model", "must be a string");
  job->model = body.value("model", "");
  if (!body.contains("tokens"))
    return Bad("tokens", "is required");
  const json &t = body["tokens"];
  // An empty list is text too: the empty string.
  if (!t.is_array() || (!t.empty() && !IdList(t, &job->tokens)))
    return Bad("tokens", "must be a list of token ids (integers >= 0)");
  return std::nullopt;
}

} // namespace kiln::serve
