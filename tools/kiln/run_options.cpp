// Request and engine options of `kiln run` / `kiln bench`.
#include "run_options.h"

#include "kiln/device.h"
#include "kiln/cpu.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

namespace kiln::cli {

const std::vector<std::string> kRequestOptions = {"--max-new-tokens",
                                                  "--temperature",
                                                  "--top-k",
                                                  "--top-p",
                                                  "--min-p",
                                                  "--repetition-penalty",
                                                  "--presence-penalty",
                                                  "--frequency-penalty",
                                                  "--seed",
                                                  "--stop",
                                                  "--stop-token-id",
                                                  "--min-new-tokens",
                                                  "--logprobs",
                                                  "--n"};
const std::vector<std::string> kRequestFlags = {"--ignore-eos"};
const std::vector<std::string> kEngineOptions = {
    "--engine-config", "--kv-cache-mb",           "--block-size", "--max-batched-tokens",
    "--max-seqs",      "--max-tracked",           "--threads",    "--device",
    "--backend",       "--gpu-memory-utilization"};
const std::vector<std::string> kEngineFlags = {"--no-prefix-caching", "--no-cuda-graphs"};

const char kEngineUsage[] =
    "engine options (plans with the ragged interface batch requests; docs/engine.md):\n"
    "  --engine-config FILE     JSON with any of kv_cache_mb, gpu_memory_utilization,\n"
    "                           block_size, max_batched_tokens, max_seqs, max_tracked,\n"
    "                           prefix_caching; the flags below override it\n"
    "  --kv-cache-mb N          KV cache memory budget in MiB (default: room for\n"
    "                           --max-seqs sequences of the full context, at most 1024)\n"
    "  --gpu-memory-utilization F\n"
    "                           on cuda, without --kv-cache-mb: give the KV cache the\n"
    "                           fraction F, in (0, 1], of the GPU memory free after the\n"
    "                           weights and a largest step's activations\n"
    "  --block-size N           tokens per KV block (default 16)\n"
    "  --max-batched-tokens N   token budget of one step; longer prompts are split\n"
    "                           across steps (default 512)\n"
    "  --max-seqs N             sequences in one step: the concurrency (default 64)\n"
    "  --max-tracked N          requests waiting or running at once (default 1024)\n"
    "  --no-prefix-caching      do not share the KV of common prompt prefixes\n"
    "  --no-cuda-graphs         on cuda, run decode steps eagerly, not as CUDA graphs\n"
    "                           (KILN_CUDA_GRAPHS=0 does the same)\n"
    "  --threads N              cap the CPU threads of matrix products (0: all cores)\n"
    "  --device DEV             what runs the plan: cpu, cuda (GPU 0) or cuda:N (default\n"
    "                           cuda when this kiln has it and a GPU is visible, else cpu;\n"
    "                           cpu for a dense plan, which only the cpu runs here);\n"
    "                           cuda opens libcublasLt.so.13 when it starts\n"
    "                           (KILN_CUBLASLT_LIBRARY names another file)\n"
    "  --backend DEV            the same as --device\n";

namespace {

Status ParseFloatOption(const ParsedArgs &a, const char *name, float *out) {
  double f;
  if (!a.Has(name))
    return Status::Ok();
  if (!ParseFloat(a.Get(name), &f))
    return InvalidArgument(std::string(name) + " expects a number");
  *out = static_cast<float>(f);
  return Status::Ok();
}

template <typename T>
Status ParseIntOption(const ParsedArgs &a, const char *name, long long lo, long long hi, T *out) {
  long long i;
  if (!a.Has(name))
    return Status::Ok();
  if (!ParseInt(a.Get(name), &i) || i < lo || i > hi)
    return InvalidArgument(std::string(name) + " expects an integer in [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "]");
  *out = static_cast<T>(i);
  return Status::Ok();
}

} // namespace

Status ParseIds(const std::string &text, const std::string &flag, std::vector<int32_t> *ids) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long v;
    if (!ParseInt(item, &v) || v < 0 || v > std::numeric_limits<int32_t>::max())
      return InvalidArgument(flag + ": '" + item + "' is not a token id");
    ids->push_back(static_cast<int32_t>(v));
  }
  if (ids->empty())
    return InvalidArgument(flag + " is empty");
  return Status::Ok();
}

Status ApplyRequestFlags(const ParsedArgs &a, RequestParams *o) {
  const long long kMaxInt = std::numeric_limits<int>::max();
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--max-new-tokens", 0, 1 << 30, &o->max_new_tokens));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--top-k", 0, kMaxInt, &o->sampling.top_k));
  SamplingParams &s = o->sampling;
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--temperature", &s.temperature));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--top-p", &s.top_p));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--min-p", &s.min_p));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--repetition-penalty", &s.repetition_penalty));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--presence-penalty", &s.presence_penalty));
  KILN_RETURN_IF_ERROR(ParseFloatOption(a, "--frequency-penalty", &s.frequency_penalty));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--logprobs", 0, kMaxLogprobs, &s.logprobs));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--min-new-tokens", 0, 1 << 30, &o->min_new_tokens));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--n", 1, 128, &o->n));
  long long i;
  if (a.Has("--seed")) {
    if (!ParseInt(a.Get("--seed"), &i))
      return InvalidArgument("--seed expects an integer");
    s.seed = static_cast<uint64_t>(i);
  }
  if (a.Has("--stop"))
    o->stop = a.All("--stop");
  for (const std::string &id : a.All("--stop-token-id")) {
    if (!ParseInt(id, &i) || i < 0 || i > std::numeric_limits<int32_t>::max())
      return InvalidArgument("--stop-token-id: '" + id + "' is not a token id");
    o->stop_token_ids.push_back(static_cast<int32_t>(i));
  }
  if (a.Has("--ignore-eos"))
    o->ignore_eos = true;
  return ValidateRequestParams(*o);
}

namespace {

// The keys of --engine-config, each set only when present; the flags given
// then override them.
Status ApplyEngineConfig(const std::string &path, PipelineOptions *o, bool *tracked_set,
                         bool *budget_set) {
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonObject(path, "--engine-config"));
  for (const auto &[key, v] : j.items()) {
    auto integer = [&](long long lo, long long hi, auto *out) -> Status {
      if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
        return InvalidArgument(path + ": \"" + key + "\" must be an integer in [" +
                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(v.get<long long>());
      return Status::Ok();
    };
    if (key == "kv_cache_mb") {
      int64_t mb = 0;
      KILN_RETURN_IF_ERROR(integer(1, 1 << 24, &mb));
      o->kv_cache_bytes = mb << 20;
    } else if (key == "block_size") {
      KILN_RETURN_IF_ERROR(integer(1, 1024, &o->block_size));
    } else if (key == "max_batched_tokens") {
      KILN_RETURN_IF_ERROR(integer(1, 1 << 24, &o->max_batched_tokens));
      *budget_set = true;
    } else if (key == "max_seqs") {
      KILN_RETURN_IF_ERROR(integer(1, 1 << 16, &o->max_seqs));
    } else if (key == "max_tracked") {
      KILN_RETURN_IF_ERROR(integer(1, 1 << 24, &o->max_tracked));
      *tracked_set = true;
    } else if (key == "gpu_memory_utilization") {
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1))
        return InvalidArgument(path + ": \"gpu_memory_utilization\" must be a number in (0, 1]");
      o->gpu_memory_utilization = v.get<double>();
    } else if (key == "prefix_caching") {
      if (!v.is_boolean())
        return InvalidArgument(path + ": \"prefix_caching\" must be true or false");
      o->prefix_caching = v.get<bool>();
    } else {
      return InvalidArgument(path + ": unknown key \"" + key +
                             "\" (known: kv_cache_mb, gpu_memory_utilization, block_size, "
                             "max_batched_tokens, max_seqs, max_tracked, prefix_caching)");
    }
  }
  return Status::Ok();
}

} // namespace

Status ApplyEngineFlags(const ParsedArgs &a, PipelineOptions *o) {
  bool tracked_set = a.Has("--max-tracked"), budget_set = a.Has("--max-batched-tokens");
  if (a.Has("--engine-config"))
    KILN_RETURN_IF_ERROR(ApplyEngineConfig(a.Get("--engine-config"), o, &tracked_set, &budget_set));
  int64_t mb = -1;
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--kv-cache-mb", 1, 1 << 24, &mb));
  if (mb > 0)
    o->kv_cache_bytes = mb << 20;
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--block-size", 1, 1024, &o->block_size));
  KILN_RETURN_IF_ERROR(
      ParseIntOption(a, "--max-batched-tokens", 1, 1 << 24, &o->max_batched_tokens));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--max-seqs", 1, 1 << 16, &o->max_seqs));
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--max-tracked", 1, 1 << 24, &o->max_tracked));
  // A large max_seqs raises the defaults that must be at least as large;
  // values the user set are kept (and checked by the pipeline).
  if (!tracked_set)
    o->max_tracked = std::max(o->max_tracked, o->max_seqs);
  if (!budget_set)
    o->max_batched_tokens = std::max<int64_t>(o->max_batched_tokens, o->max_seqs);
  if (a.Has("--no-prefix-caching"))
    o->prefix_caching = false;
  if (a.Has("--no-cuda-graphs"))
    o->cuda_graphs = false;
  KILN_ASSIGN_OR_RETURN(o->backend, DeviceFlag(a));
  if (a.Has("--gpu-memory-utilization")) {
    double f = 0;
    if (!ParseFloat(a.Get("--gpu-memory-utilization"), &f) || !(f > 0 && f <= 1))
      return InvalidArgument("--gpu-memory-utilization expects a fraction in (0, 1], got '" +
                             a.Get("--gpu-memory-utilization") + "'");
    o->gpu_memory_utilization = f;
  }
  KILN_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDevice(o->backend));
  if (o->gpu_memory_utilization > 0 && spec.backend == "cpu")
    return InvalidArgument("--gpu-memory-utilization sizes the KV cache from free GPU memory; "
                           "the cpu device has none (use --kv-cache-mb, or --device cuda)");
  return Status::Ok();
}

StatusOr<std::string> DeviceFlag(const ParsedArgs &a) {
  if (a.Has("--device") && a.Has("--backend"))
    return InvalidArgument("give --device or --backend (the same option), not both");
  const std::string flag = a.Has("--backend") ? "--backend" : "--device";
  if (!a.Has(flag))
    return DefaultDevice();
  const std::string device = a.Get(flag);
  KILN_RETURN_IF_ERROR(CheckDeviceName(device, flag));
  return device;
}

void DenseDefaultsToCpu(const ParsedArgs &a, const Plan &plan, PipelineOptions *o) {
  if (!a.Has("--device") && !a.Has("--backend") && o->gpu_memory_utilization == 0 &&
      GraphInterface(plan) != PlanInterface::kRagged)
    o->backend = "cpu";
}

StatusOr<std::unique_ptr<Device>> DeviceFromFlag(const ParsedArgs &a) {
  KILN_ASSIGN_OR_RETURN(std::string device, DeviceFlag(a));
  return Device::Open(device);
}

Status ApplyThreads(const ParsedArgs &a) {
  int n = 0;
  if (!a.Has("--threads"))
    return Status::Ok();
  KILN_RETURN_IF_ERROR(ParseIntOption(a, "--threads", 0, 1024, &n));
  SetCpuThreads(n);
  return Status::Ok();
}

StatusOr<Request> RequestFromJson(const nlohmann::json &j, const RequestParams &defaults) {
  using nlohmann::json;
  if (!j.is_object())
    return InvalidArgument("a request must be a JSON object");
  Request r;
  r.params = defaults;
  RequestParams &p = r.params;
  auto number = [](const json &v, const std::string &key, double *out) -> Status {
    if (!v.is_number())
      return InvalidArgument("\"" + key + "\" must be a number");
    *out = v.get<double>();
    return Status::Ok();
  };
  auto integer = [](const json &v, const std::string &key, long long lo, long long hi,
                    long long *out) -> Status {
    if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
      return InvalidArgument("\"" + key + "\" must be an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
    *out = v.get<long long>();
    return Status::Ok();
  };
  auto ids = [](const json &v, const std::string &key, std::vector<int32_t> *out) -> Status {
    if (!v.is_array())
      return InvalidArgument("\"" + key + "\" must be a list of token ids");
    for (const json &e : v) {
      if (!e.is_number_integer() || e.get<long long>() < 0 ||
          e.get<long long>() > std::numeric_limits<int32_t>::max())
        return InvalidArgument("\"" + key + "\" must be a list of token ids");
      out->push_back(static_cast<int32_t>(e.get<long long>()));
    }
    return Status::Ok();
  };
  bool has_prompt = false;
  for (const auto &[key, v] : j.items()) {
    double f = 0;
    long long i = 0;
    if (key == "prompt") {
      if (!v.is_string())
        return InvalidArgument("\"prompt\" must be a string");
      r.prompt = v.get<std::string>();
      has_prompt = true;
    } else if (key == "prompt_ids") {
      KILN_RETURN_IF_ERROR(ids(v, key, &r.prompt_ids));
      if (r.prompt_ids.empty())
        return InvalidArgument("\"prompt_ids\" is empty");
      has_prompt = true;
    } else if (key == "max_new_tokens" || key == "max_tokens") {
      KILN_RETURN_IF_ERROR(integer(v, key, 0, 1 << 30, &i));
      p.max_new_tokens = static_cast<int>(i);
    } else if (key == "min_new_tokens") {
      KILN_RETURN_IF_ERROR(integer(v, key, 0, 1 << 30, &i));
      p.min_new_tokens = static_cast<int>(i);
    } else if (key == "top_k") {
      KILN_RETURN_IF_ERROR(integer(v, key, 0, std::numeric_limits<int>::max(), &i));
      p.sampling.top_k = static_cast<int>(i);
    } else if (key == "n") {
      KILN_RETURN_IF_ERROR(integer(v, key, 1, 128, &i));
      p.n = static_cast<int>(i);
    } else if (key == "logprobs") {
      KILN_RETURN_IF_ERROR(integer(v, key, 0, kMaxLogprobs, &i));
      p.sampling.logprobs = static_cast<int>(i);
    } else if (key == "seed") {
      KILN_RETURN_IF_ERROR(integer(v, key, std::numeric_limits<long long>::min(),
                                   std::numeric_limits<long long>::max(), &i));
      p.sampling.seed = static_cast<uint64_t>(i);
    } else if (key == "temperature" || key == "top_p" || key == "min_p" ||
               key == "repetition_penalty" || key == "presence_penalty" ||
               key == "frequency_penalty") {
      KILN_RETURN_IF_ERROR(number(v, key, &f));
      float *field = key == "temperature"          ? &p.sampling.temperature
                     : key == "top_p"              ? &p.sampling.top_p
                     : key == "min_p"              ? &p.sampling.min_p
                     : key == "repetition_penalty" ? &p.sampling.repetition_penalty
                     : key == "presence_penalty"   ? &p.sampling.presence_penalty
                                                   : &p.sampling.frequency_penalty;
      *field = static_cast<float>(f);
    } else if (key == "stop") {
      p.stop.clear();
      if (v.is_string()) {
        p.stop.push_back(v.get<std::string>());
      } else if (v.is_array()) {
        for (const json &e : v) {
          if (!e.is_string())
            return InvalidArgument("\"stop\" must be a string or a list of strings");
          p.stop.push_back(e.get<std::string>());
        }
      } else {
        return InvalidArgument("\"stop\" must be a string or a list of strings");
      }
    } else if (key == "stop_token_ids") {
      p.stop_token_ids.clear();
      KILN_RETURN_IF_ERROR(ids(v, key, &p.stop_token_ids));
    } else if (key == "ignore_eos") {
      if (!v.is_boolean())
        return InvalidArgument("\"ignore_eos\" must be true or false");
      p.ignore_eos = v.get<bool>();
    } else {
      return InvalidArgument("unknown key \"" + key + "\"");
    }
  }
  if (!has_prompt)
    return InvalidArgument("a request needs \"prompt\" (text) or \"prompt_ids\"");
  if (!r.prompt.empty() && !r.prompt_ids.empty())
    return InvalidArgument("give \"prompt\" or \"prompt_ids\", not both");
  KILN_RETURN_IF_ERROR(ValidateRequestParams(p));
  return r;
}

nlohmann::ordered_json LogprobJson(const SampledToken &s) {
  auto lp = [](float v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json top = nlohmann::json::array();
  for (const TokenLogprob &t : s.top)
    top.push_back({t.token, lp(t.logprob)});
  return {{"token", s.token}, {"logprob", lp(s.logprob)}, {"top", top}};
}

Status WriteNpy(const std::string &path, const std::vector<float> &data, int64_t rows,
                int64_t cols) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                     ", " + std::to_string(cols) + "), }";
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  uint16_t len = static_cast<uint16_t>(dict.size());
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>(len >> 8);
  bytes += dict;
  bytes.append(reinterpret_cast<const char *>(data.data()), data.size() * sizeof(float));
  return WriteText(path, bytes);
}

StatusOr<nlohmann::json> ReadJsonObject(const std::string &path, const std::string &flag) {
  std::ifstream file(path);
  if (!file)
    return InvalidArgument("cannot open " + flag + " '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument(flag + " " + path + ": not a JSON object");
  return j;
}

Status WriteText(const std::string &path, const std::string &text) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return InvalidArgument("cannot open '" + path + "' for writing");
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? Status::Ok() : Internal("write to '" + path + "' failed");
}

} // namespace kiln::cli
