// /tokenize and /detokenize, shaped as vLLM's: the served plan's tokenizer
// (and chat template) over HTTP, so a client sees the ids a prompt becomes
// without generating. They run on the request thread, never the engine's;
// they take the key's rpm and concurrency quota like any request, but no
// tokens (tpm counts what the model consumed).
#include "serve/api_error.h"
#include "serve/http_call.h"
#include "serve/http_common.h"
#include "serve/http_server.h"
#include "serve/openai_response.h"

#include "kiln/tokenizer.h"

#include <httplib.h>

namespace kiln::serve {
namespace {

// 404 when the body names a model other than the served one ("" names none).
std::optional<ApiError> WrongModel(const ServedModel &m, const std::string &asked) {
  if (asked.empty() || asked == m.name)
    return std::nullopt;
  ApiError e = BadRequest(
      "the model '" + asked + "' does not exist; this server has '" + m.name + "'", "model");
  e.status = 404;
  e.code = "model_not_found";
  return e;
}

// The text /tokenize encodes: the prompt, or the messages through the
// plan's chat template. Bounded by max_prompt_bytes as a completion's
// prompt is.
std::optional<ApiError> TextToEncode(const ServedModel &m, const TokenizeJob &job,
                                     int64_t max_bytes, std::string *text) {
  const char *param = job.chat ? "messages" : "prompt";
  if (job.chat) {
    if (!m.chat)
      return BadRequest("the plan has no chat template; tokenize a \"prompt\" instead", param);
    auto rendered = m.chat(job.messages, job.add_generation_prompt);
    if (!rendered.ok())
      return BadRequest("the chat template: " + rendered.status().message(), param);
    *text = std::move(*rendered);
  } else {
    *text = job.prompt;
  }
  if (static_cast<int64_t>(text->size()) > max_bytes) {
    ApiError e =
        BadRequest(std::string(job.chat ? "the rendered chat" : "the prompt") + " is " +
                       std::to_string(text->size()) + " bytes; this server takes at most " +
                       std::to_string(max_bytes) + " (max_prompt_bytes)",
                   param);
    e.code = "prompt_too_large";
    return e;
  }
  return std::nullopt;
}

} // namespace

void HttpServer::TokenizeRoute(const httplib::Request &req, httplib::Response &res) {
  Call call;
  if (!Authorize(req, res, &call))
    return;
  const std::shared_ptr<const ServedModel> m = Model();
  if (draining_)
    return SendError(res, Unavailable("the server is shutting down", "draining"), &call);
  nlohmann::json body;
  if (auto e = ParseBody(req.body, &body))
    return SendError(res, *e, &call);
  TokenizeJob job;
  if (auto e = ParseTokenizeJob(body, &job))
    return SendError(res, *e, &call);
  if (auto e = WrongModel(*m, job.model))
    return SendError(res, *e, &call);
  if (m->tokenizer == nullptr)
    return SendError(res, BadRequest("the plan has no tokenizer", job.chat ? "messages" : "prompt"),
                     &call);
  if (!AdmitQuota(deps_.quotas, deps_.metrics, res, &call))
    return;
  std::string text;
  if (auto e = TextToEncode(*m, job, settings_.max_prompt_bytes, &text)) {
    RefundQuota(&call);
    return SendError(res, *e, &call);
  }
  // Not EncodeAtMost: a prompt past the context is what a client asks
  // /tokenize about, so it gets its whole count (and max_model_len).
  auto ids = m->tokenizer->Encode(text, job.add_special_tokens);
  if (!ids.ok()) {
    RefundQuota(&call);
    return SendError(res,
                     BadRequest("the text cannot be tokenized: " + ids.status().message(),
                                job.chat ? "messages" : "prompt"),
                     &call);
  }
  nlohmann::ordered_json j = {{"count", ids->size()},
                              {"max_model_len", m->context_length > 0
                                                    ? nlohmann::ordered_json(m->context_length)
                                                    : nlohmann::ordered_json(nullptr)},
                              {"tokens", *ids}};
  if (job.return_token_strs) {
    nlohmann::ordered_json strs = nlohmann::ordered_json::array();
    for (int32_t id : *ids)
      strs.push_back(m->tokenizer->IdToToken(id));
    j["token_strs"] = std::move(strs);
  }
  res.set_content(Dump(j), "application/json");
}

void HttpServer::DetokenizeRoute(const httplib::Request &req, httplib::Response &res) {
  Call call;
  if (!Authorize(req, res, &call))
    return;
  const std::shared_ptr<const ServedModel> m = Model();
  if (draining_)
    return SendError(res, Unavailable("the server is shutting down", "draining"), &call);
  nlohmann::json body;
  if (auto e = ParseBody(req.body, &body))
    return SendError(res, *e, &call);
  DetokenizeJob job;
  if (auto e = ParseDetokenizeJob(body, &job))
    return SendError(res, *e, &call);
  if (auto e = WrongModel(*m, job.model))
    return SendError(res, *e, &call);
  if (m->tokenizer == nullptr)
    return SendError(res, BadRequest("the plan has no tokenizer", "tokens"), &call);
  // The tokenizer's Decode drops ids it does not know, as HF's does; a
  // client asking about an id is told instead that it is not one.
  const Tokenizer &tok = *m->tokenizer;
  for (size_t i = 0; i < job.tokens.size(); ++i) {
    const int32_t id = job.tokens[i];
    if (id >= tok.vocab_size() || tok.IdToToken(id).empty())
      return SendError(res,
                       BadRequest("tokens[" + std::to_string(i) + "] = " + std::to_string(id) +
                                      " is not an id of the plan's tokenizer (its ids are 0.." +
                                      std::to_string(tok.vocab_size() - 1) + ")",
                                  "tokens"),
                       &call);
  }
  if (!AdmitQuota(deps_.quotas, deps_.metrics, res, &call))
    return;
  nlohmann::ordered_json j = {{"prompt", tok.Decode(job.tokens, /*skip_special_tokens=*/false)}};
  res.set_content(Dump(j), "application/json");
}

} // namespace kiln::serve
