// kiln run --prompts-file: JSONL in, JSONL out, every request in one batch.
#include "cmd_run_batch.h"

#include "run_options.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

namespace kiln::cli {

StatusOr<std::vector<Request>> ReadRequestsFile(const std::string &path,
                                                const RequestParams &defaults) {
  std::ifstream file;
  std::istream *in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file)
      return InvalidArgument("cannot open --prompts-file '" + path + "'");
    in = &file;
  }
  std::vector<Request> requests;
  std::string line;
  for (int number = 1; std::getline(*in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return InvalidArgument(where + "not valid JSON");
    auto r = RequestFromJson(j, defaults);
    if (!r.ok())
      return InvalidArgument(where + r.status().message());
    requests.push_back(std::move(*r));
  }
  if (requests.empty())
    return InvalidArgument("--prompts-file '" + path + "' holds no request");
  return requests;
}

Status RunBatch(const ParsedArgs &a, Pipeline &pipe, const RequestParams &defaults) {
  KILN_ASSIGN_OR_RETURN(std::vector<Request> requests,
                        ReadRequestsFile(a.Get("--prompts-file"), defaults));
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].prompt_ids.empty() && !pipe.tokenizer())
      return InvalidArgument("request " + std::to_string(i + 1) +
                             " has a text prompt, but the plan has no tokenizer");
  const bool stream = !a.Has("--no-stream");
  std::map<int64_t, size_t> index; // request id -> line order
  auto print = [](const nlohmann::ordered_json &j) {
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  auto on_token = [&](const StreamEvent &e) {
    if (stream && !e.text.empty())
      print({{"index", index[e.request_id]}, {"completion", e.completion}, {"text", e.text}});
    return true;
  };
  auto respond = [&](const Response &r) {
    nlohmann::ordered_json j = {{"index", index[r.request_id]},
                                {"completion", r.completion},
                                {"generated_text", r.generated_text},
                                {"tokens", r.tokens},
                                {"prompt_length", r.prompt_length},
                                {"generated_length", r.generated_length},
                                {"finish_reason", ApiFinishReason(r.finish_reason)},
                                {"detail", FinishReasonName(r.finish_reason)},
                                {"ttft_ms", r.ttft_seconds * 1e3},
                                {"total_ms", r.total_seconds * 1e3}};
    if (!r.logprobs.empty()) {
      nlohmann::ordered_json lp = nlohmann::ordered_json::array();
      for (const SampledToken &s : r.logprobs)
        lp.push_back(LogprobJson(s));
      j["logprobs"] = lp;
    }
    print(j);
  };
  // Requests are queued before the first step, so they batch; a bad one is
  // refused before anything runs. Past the engine's max_tracked, the rest
  // wait here and join as earlier ones finish.
  size_t next = 0;
  auto submit_more = [&]() -> Status {
    for (; next < requests.size(); ++next) {
      auto id = pipe.Submit(requests[next], on_token);
      if (!id.ok() && id.status().code() == StatusCode::kResourceExhausted && pipe.HasUnfinished())
        return Status::Ok(); // full: the next step makes room
      if (!id.ok())
        return Status(id.status().code(), a.Get("--prompts-file") + ": request " +
                                              std::to_string(next + 1) + ": " +
                                              id.status().message());
      index[*id] = next;
    }
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(submit_more());
  // Responses stream out as they finish; with --no-stream, in input order.
  std::vector<Response> done;
  while (pipe.HasUnfinished()) {
    KILN_RETURN_IF_ERROR(pipe.Step());
    for (Response &r : pipe.TakeFinished()) {
      if (stream)
        respond(r);
      else
        done.push_back(std::move(r));
    }
    KILN_RETURN_IF_ERROR(submit_more());
  }
  for (Response &r : pipe.TakeFinished())
    stream ? respond(r) : done.push_back(std::move(r));
  std::stable_sort(done.begin(), done.end(), [&](const Response &x, const Response &y) {
    return index[x.request_id] != index[y.request_id] ? index[x.request_id] < index[y.request_id]
                                                      : x.completion < y.completion;
  });
  for (const Response &r : done)
    respond(r);
  const Pipeline::Stats st = pipe.stats();
  std::fprintf(stderr, "%zu requests, %lld steps, %lld tokens computed, %lld preemptions%s\n",
               requests.size(), static_cast<long long>(st.steps),
               static_cast<long long>(st.tokens_computed), static_cast<long long>(st.preemptions),
               pipe.batched() ? "" : " (dense plan: one request at a time)");
  return Status::Ok();
}

} // namespace kiln::cli
