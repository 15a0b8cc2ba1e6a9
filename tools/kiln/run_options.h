// Options shared by `kiln run` and `kiln bench`: request parameters from
// flags or from a JSON object, engine (pipeline) settings, and small writers.
#pragma once

#include "cli_args.h"
#include "kiln/device.h"
#include "kiln/pipeline.h"

#include <memory>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::cli {

// Value options and flags of the request parameters (--max-new-tokens,
// --temperature, ...) and of the engine (--kv-cache-mb, --max-seqs, ...).
extern const std::vector<std::string> kRequestOptions, kRequestFlags;
extern const std::vector<std::string> kEngineOptions, kEngineFlags;
// --help text of the engine options.
extern const char kEngineUsage[];

// "1,2,3" as token ids; InvalidArgument naming `flag` otherwise.
Status ParseIds(const std::string &text, const std::string &flag, std::vector<int32_t> *ids);
// Overrides `params` with the request flags given, then validates.
Status ApplyRequestFlags(const ParsedArgs &a, RequestParams *params);
// Overrides `options` with the engine flags given.
Status ApplyEngineFlags(const ParsedArgs &a, PipelineOptions *options);
// --threads N; no-op when absent.
Status ApplyThreads(const ParsedArgs &a);

// --device DEV, or its alias --backend: "cpu", "cuda" or "cuda:N" (default
// DefaultDevice(): cuda when built and a GPU is visible, else cpu). The
// backend name is checked against the backends this kiln was built with
// (InvalidArgument listing them), and the index's spelling; whether device
// N exists is the backend's to say when it is created.
StatusOr<std::string> DeviceFlag(const ParsedArgs &a);
// Without --device/--backend/--gpu-memory-utilization, a plan without the
// ragged interface runs on the cpu (the engine drives dense plans only
// there) whatever the default device is.
void DenseDefaultsToCpu(const ParsedArgs &a, const Plan &plan, PipelineOptions *options);
// The device --device names, open, for the commands that run an executor
// directly (exec).
StatusOr<std::unique_ptr<Device>> DeviceFromFlag(const ParsedArgs &a);

// One JSONL request: "prompt" (text) or "prompt_ids", plus any of the
// request keys (max_new_tokens, temperature, top_k, top_p, min_p, seed,
// repetition_penalty, presence_penalty, frequency_penalty, stop,
// stop_token_ids, min_new_tokens, ignore_eos, n, logprobs) over `defaults`.
// InvalidArgument naming the key for unknown keys and wrong types.
StatusOr<Request> RequestFromJson(const nlohmann::json &j, const RequestParams &defaults);

// {"token": id, "logprob": lp, "top": [[id, lp], ...]}; -inf as null.
nlohmann::ordered_json LogprobJson(const SampledToken &s);

// NumPy .npy v1.0 float32 [rows, cols].
Status WriteNpy(const std::string &path, const std::vector<float> &data, int64_t rows,
                int64_t cols);
Status WriteText(const std::string &path, const std::string &text);
// The JSON object in file `path`; InvalidArgument naming `flag` and the
// file when it cannot be read or is not a JSON object.
StatusOr<nlohmann::json> ReadJsonObject(const std::string &path, const std::string &flag);

} // namespace kiln::cli
