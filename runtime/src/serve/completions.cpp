// /v1/completions, /v1/chat/completions and /v1/embeddings: parse, admit
// (quota, then the engine's bounded queue), then answer whole or as
// server-sent events while the engine thread generates.
#include "serve/api_error.h"
#include "serve/http_call.h"
#include "serve/http_common.h"
#include "serve/http_server.h"
#include "serve/openai_response.h"

#include <httplib.h>

#include <ctime>
#include <limits>
#include <map>
#include <optional>

namespace kiln::serve {
namespace {

// RFC 4648 base64 of `n` bytes (the host is little-endian, as the plan
// format already requires, so float32 vectors go out as OpenAI expects).
std::string Base64(const void *data, size_t n) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto *p = static_cast<const unsigned char *>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0) |
                       (i + 2 < n ? uint32_t{p[i + 2]} : 0);
    out += kAlphabet[(b >> 18) & 63];
    out += kAlphabet[(b >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(b >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[b & 63] : '=';
  }
  return out;
}

// Tokenizes a text prompt on the calling (request) thread, so the engine
// thread only steps the model. Refuses a prompt of more than `max_bytes`
// bytes, and one that does not fit the context as soon as tokenizing
// passes it (the rest is never tokenized).
std::optional<ApiError> TokenizePrompt(const ServedModel &m, int64_t max_bytes, bool add_special,
                                       std::string_view text, std::vector<int32_t> *ids) {
  if (static_cast<int64_t>(text.size()) > max_bytes) {
    ApiError e = BadRequest("the prompt is " + std::to_string(text.size()) +
                                " bytes; this server takes at most " + std::to_string(max_bytes) +
                                " (max_prompt_bytes)",
                            "prompt");
    e.code = "prompt_too_large";
    return e;
  }
  if (m.tokenizer == nullptr)
    return BadRequest("the plan has no tokenizer: give the prompt as token ids", "prompt");
  const size_t limit = m.context_length > 0 ? static_cast<size_t>(m.context_length)
                                            : std::numeric_limits<size_t>::max();
  auto got = m.tokenizer->EncodeAtMost(text, add_special, limit);
  if (got.ok()) {
    *ids = std::move(*got);
    return std::nullopt;
  }
  if (got.status().code() == StatusCode::kResourceExhausted) {
    ApiError e = BadRequest("the prompt is longer than the context length of " +
                                std::to_string(m.context_length) + " tokens",
                            "prompt");
    e.code = "context_length_exceeded";
    return e;
  }
  return BadRequest("the prompt cannot be tokenized: " + got.status().message(), "prompt");
}

} // namespace


namespace {

constexpr auto kKeepAlive = std::chrono::seconds(2);

// What the reader of a RequestStream accumulates, per choice and in all.
struct Collected {
  std::vector<Response> responses; // by choice
  std::vector<bool> done;
  Usage usage;

  explicit Collected(int choices) : responses(choices), done(choices, false) {}
  void Final(ChoiceEvent &ev, int n) {
    if (ev.choice % n == 0)
      usage.prompt_tokens += ev.response.prompt_length;
    usage.completion_tokens += ev.response.generated_length;
    done[ev.choice] = true;
    responses[ev.choice] = std::move(ev.response);
  }
};

} // namespace

void HttpServer::Completions(const httplib::Request &req, httplib::Response &res,
                             Endpoint endpoint) {
  auto call = std::make_shared<Call>();
  if (!Authorize(req, res, call.get()))
    return;
  // The plan this request runs on, to its end, whatever Reload does meanwhile.
  const std::shared_ptr<const ServedModel> m = Model();
  if (m->engine == nullptr) {
    ApiError e = BadRequest("the model '" + m->name +
                            "' is an encoder: it serves /v1/embeddings only");
    e.status = 404;
    e.code = "model_not_found";
    return SendError(res, e, call.get());
  }
  if (draining_) {
    deps_.metrics->Add("kiln_rejections_total", 1, "draining");
    return SendError(res, Unavailable("the server is shutting down", "draining"), call.get());
  }
  nlohmann::json body;
  if (auto e = ParseBody(req.body, &body)) {
    deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
    return SendError(res, *e, call.get());
  }
  ParseLimits limits;
  limits.context_length = m->context_length;
  limits.max_timeout_s = settings_.max_request_timeout_s;
  CompletionJob job;
  if (auto e = ParseCompletionJob(body, endpoint, m->defaults, limits, &job)) {
    deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
    return SendError(res, *e, call.get());
  }
  if (!job.model.empty() && job.model != m->name) {
    ApiError e = BadRequest("the model '" + job.model + "' does not exist; this server has '" +
                                m->name + "'",
                            "model");
    e.status = 404;
    e.code = "model_not_found";
    return SendError(res, e, call.get());
  }
  for (Request &r : job.prompts) {
    if (endpoint != Endpoint::kCompletions || !r.prompt_ids.empty())
      continue;
    if (auto e = TokenizePrompt(*m, settings_.max_prompt_bytes, /*add_special=*/true, r.prompt,
                                &r.prompt_ids)) {
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res, *e, call.get());
    }
  }
  if (endpoint == Endpoint::kChat) {
    if (!m->chat) {
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res,
                       BadRequest("the plan has no chat template; use /v1/completions", "messages"),
                       call.get());
    }
    auto prompt = m->chat(job.messages, /*add_generation_prompt=*/true);
    if (!prompt.ok()) {
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res,
                       BadRequest("the chat template: " + prompt.status().message(), "messages"),
                       call.get());
    }
    // The template writes the special tokens (BOS included) itself, so the
    // text is encoded without adding them again (as HF's apply_chat_template).
    if (m->tokenizer == nullptr)
      return SendError(res, BadRequest("the plan has no tokenizer for chat", "messages"),
                       call.get());
    std::vector<int32_t> ids;
    if (auto e = TokenizePrompt(*m, settings_.max_prompt_bytes, /*add_special=*/false, *prompt,
                                &ids)) {
      e->param = "messages";
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res, *e, call.get());
    }
    if (ids.empty())
      return SendError(res, BadRequest("the rendered chat prompt is empty", "messages"),
                       call.get());
    job.prompts[0].prompt_ids = std::move(ids);
  }
  if (!AdmitQuota(deps_.quotas, deps_.metrics, res, call.get()))
    return;
  // The engine reports what the request consumed when its last choice ends,
  // however it ends (finished, cancelled on a disconnect or a timeout): the
  // call, and with it the quota's charge and the access-log line, lives
  // until then.
  auto submitted = m->engine->Submit(job.prompts, [call](int64_t prompt, int64_t completion) {
    call->prompt_tokens = prompt;
    call->completion_tokens = completion;
  });
  if (!submitted.ok()) {
    RefundQuota(call.get());
    deps_.metrics->Add("kiln_rejections_total", 1, "queue_full");
    return SendError(res, Unavailable(submitted.status().message(), "queue_full"), call.get());
  }
  std::shared_ptr<RequestStream> stream = *submitted;
  Status admitted = stream->WaitAdmitted();
  if (!admitted.ok()) {
    RefundQuota(call.get());
    if (admitted.code() == StatusCode::kInvalidArgument) {
      deps_.metrics->Add("kiln_rejections_total", 1, "bad_request");
      return SendError(res, BadRequest(admitted.message(), "prompt"), call.get());
    }
    deps_.metrics->Add("kiln_rejections_total", 1, "engine");
    return SendError(res, Unavailable(admitted.message(), "engine_busy"), call.get());
  }

  ResponseContext ctx;
  ctx.endpoint = endpoint;
  ctx.id = NewResponseId(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-");
  ctx.created = static_cast<int64_t>(std::time(nullptr));
  ctx.model = m->name;
  ctx.tokenizer = m->tokenizer;
  ctx.logprobs = job.logprobs;
  ctx.top_logprobs = job.top_logprobs;
  ctx.include_usage = job.stream && job.include_usage;
  ctx.n = job.n;
  if (job.echo)
    for (const Request &r : job.prompts)
      ctx.echo.push_back(!r.prompt.empty() || m->tokenizer == nullptr
                             ? r.prompt
                             : m->tokenizer->Decode(r.prompt_ids, /*skip_special_tokens=*/false));
  const double timeout_s = job.timeout_s > 0 ? job.timeout_s : settings_.request_timeout_s;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  const int n = job.n;
  EngineLoop *engine = m->engine;

  if (!job.stream) {
    Collected got(stream->choices());
    ChoiceEvent ev;
    for (;;) {
      RequestStream::Next next = stream->Pop(deadline, &ev);
      if (next == RequestStream::Next::kEvent) {
        if (ev.final)
          got.Final(ev, n);
        continue;
      }
      if (next == RequestStream::Next::kDone)
        break;
      if (next == RequestStream::Next::kTimeout) {
        engine->Cancel(*stream, "timeout");
        ApiError e;
        e.status = 504;
        e.type = "timeout";
        e.code = "timeout";
        e.message =
            "the request did not finish within its timeout of " + std::to_string(timeout_s) + " s";
        return SendError(res, e, call.get());
      }
      ApiError e;
      e.status = 500;
      e.type = "server_error";
      e.message = stream->status().message();
      return SendError(res, e, call.get());
    }
    res.set_content(CompletionBody(ctx, got.responses, got.usage), "application/json");
    return;
  }

  // Streaming: one SSE event per token (or per released piece of text),
  // a final event per choice with its finish_reason, usage when asked for,
  // then [DONE]. A failed write means the client left: the request is
  // cancelled and its KV blocks freed at the next step.
  const bool include_usage = job.include_usage;
  auto state = std::make_shared<Collected>(stream->choices());
  auto first = std::make_shared<std::vector<bool>>(stream->choices(), true);
  res.set_header("Cache-Control", "no-cache");
  ++active_;
  auto finished = std::make_shared<bool>(false);
  auto echoed = std::make_shared<bool>(ctx.echo.empty());
  // An admin caller's id for /admin/cancel (the --replicas front end, whose
  // client left: it cancels here and reads the usage chunk for the quota).
  std::string cancel_id;
  if (call->key >= 0 && deps_.keys != nullptr && deps_.keys->key(call->key).admin)
    cancel_id = req.get_header_value("X-Kiln-Request-Id");
  if (!cancel_id.empty()) {
    std::lock_guard<std::mutex> l(cancel_mu_);
    cancellable_[cancel_id] = Cancellable{stream, engine};
  }
  res.set_chunked_content_provider(
      "text/event-stream",
      [=, keep = m](size_t, httplib::DataSink &sink) {
        ChoiceEvent ev;
        auto write = [&](const std::string &s) { return sink.write(s.data(), s.size()); };
        if (!*echoed) { // "echo": each choice's first chunk is its prompt
          *echoed = true;
          for (int c = 0; c < stream->choices(); ++c)
            write(StreamChunk(ctx, c, ctx.echo[static_cast<size_t>(c / n)], {}, false, nullptr));
        }
        for (;;) {
          const Clock::time_point slice = std::min(deadline, Clock::now() + kKeepAlive);
          RequestStream::Next next = stream->Pop(slice, &ev);
          bool ok = true;
          if (next == RequestStream::Next::kEvent) {
            const bool want = !ev.text.empty() || ev.final || (ctx.logprobs && ev.has_sample);
            if (!want)
              continue;
            std::vector<SampledToken> samples;
            if (ev.has_sample)
              samples.push_back(ev.sample);
            const char *finish = nullptr;
            if (ev.final) {
              finish = ApiFinish(ev.response.finish_reason);
              state->Final(ev, n);
            }
            ok = write(StreamChunk(ctx, ev.choice, ev.text, samples, (*first)[ev.choice], finish));
            (*first)[ev.choice] = false;
          } else if (next == RequestStream::Next::kDone) {
            if (include_usage)
              ok = write(UsageChunk(ctx, state->usage));
            ok = ok && write(kStreamDone);
            *finished = true;
            sink.done();
            return true;
          } else if (next == RequestStream::Next::kTimeout && Clock::now() < deadline) {
            // Nothing to send yet: an SSE comment probes the connection.
            ok = write(": keep-alive\n\n");
          } else if (next == RequestStream::Next::kTimeout) {
            engine->Cancel(*stream, "timeout");
            call->note = "timeout";
            write(StreamError("the request did not finish within its timeout", "timeout"));
            write(kStreamDone);
            *finished = true;
            sink.done();
            return true;
          } else {
            write(StreamError(stream->status().message(), "server_error"));
            write(kStreamDone);
            *finished = true;
            sink.done();
            return true;
          }
          if (!ok) {
            engine->Cancel(*stream, "disconnect");
            call->note = "cancelled: client disconnected";
            *finished = true;
            return false;
          }
        }
      },
      [=, keep = m](bool) {
        // The response ended (or the connection did) before the stream
        // finished: cancel what still runs.
        if (!*finished) {
          engine->Cancel(*stream, "disconnect");
          call->note = "cancelled: client disconnected";
        }
        if (!cancel_id.empty()) {
          std::lock_guard<std::mutex> l(cancel_mu_);
          cancellable_.erase(cancel_id);
        }
        --active_;
      });
}

void HttpServer::EmbeddingsRoute(const httplib::Request &req, httplib::Response &res) {
  Call call;
  if (!Authorize(req, res, &call))
    return;
  const std::shared_ptr<const ServedModel> m = Model();
  if (!m->embed) {
    ApiError e = BadRequest("the model '" + m->name +
                            "' is a decoder: /v1/embeddings needs an encoder plan");
    e.status = 404;
    e.code = "model_not_found";
    return SendError(res, e, &call);
  }
  if (draining_)
    return SendError(res, Unavailable("the server is shutting down", "draining"), &call);
  nlohmann::json body;
  if (auto e = ParseBody(req.body, &body))
    return SendError(res, *e, &call);
  EmbeddingJob job;
  if (auto e = ParseEmbeddingJob(body, 256, &job))
    return SendError(res, *e, &call);
  if (!job.model.empty() && job.model != m->name) {
    ApiError e = BadRequest("the model '" + job.model + "' does not exist", "model");
    e.status = 404;
    e.code = "model_not_found";
    return SendError(res, e, &call);
  }
  if (!AdmitQuota(deps_.quotas, deps_.metrics, res, &call))
    return;
  auto out = m->embed(job);
  if (!out.ok())
    return SendError(res, BadRequest(out.status().message(), "input"), &call);
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < out->vectors.size(); ++i) {
    nlohmann::ordered_json vec = out->vectors[i];
    if (job.base64)
      vec = Base64(out->vectors[i].data(), out->vectors[i].size() * sizeof(float));
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vec}});
  }
  call.prompt_tokens = out->tokens;
  nlohmann::ordered_json j = {
      {"object", "list"},
      {"data", data},
      {"model", m->name},
      {"usage", {{"prompt_tokens", out->tokens}, {"total_tokens", out->tokens}}}};
  res.set_content(Dump(j), "application/json");
}

} // namespace kiln::serve
