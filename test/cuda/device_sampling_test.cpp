// The on-device sampler (kernels/cuda/sampling.cu through
// engine/device_sampler.cpp) against the CPU Sampler, the reference: the
// same tokens for the same seeds over every option combination, odd vocab
// sizes, ties, -inf, +inf and NaN logits, and logprobs within 1e-5. Each
// row runs two steps, so the draws stay in step with the host's RNG. Skips,
// saying why, where no CUDA device is visible.
#include "backends/cuda/cuda_backend.h"
#include "backends/registry.h"
#include "engine/device_sampler.h"
#include "kiln/pipeline.h"
#include "kiln/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::engine {
namespace {

#define KILN_SKIP_WITHOUT_GPU()                                                                    \
  do {                                                                                             \
    if (cuda::CudaDeviceCount() == 0)                                                              \
      GTEST_SKIP() << "no CUDA device visible (the GPU tests run with `make test-gpu`)";           \
  } while (0)

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Every combination of the options, each `reps` times with its own seed.
std::vector<SamplingParams> Combinations(int reps, uint64_t seed0) {
  std::vector<SamplingParams> out;
  uint64_t seed = seed0;
  for (float temperature : {0.0f, 0.7f, 1.3f})
    for (int top_k : {0, 1, 5, 50})
      for (float top_p : {1.0f, 0.9f, 0.5f})
        for (float min_p : {0.0f, 0.05f})
          for (int penalties = 0; penalties < 4; ++penalties)
            for (int logprobs : {0, 5})
              for (int r = 0; r < reps; ++r) {
                SamplingParams p;
                p.temperature = temperature;
                p.top_k = top_k;
                p.top_p = top_p;
                p.min_p = min_p;
                if (penalties & 1)
                  p.repetition_penalty = 1.3f;
                if (penalties & 2) {
                  p.presence_penalty = 0.5f;
                  p.frequency_penalty = -0.3f;
                }
                p.logprobs = logprobs;
                p.seed = seed++;
                out.push_back(p);
              }
  return out;
}

// Random logits; every third row coarsened so that many values tie, some
// rows with -inf, NaN or +inf entries, and -0/+0.
std::vector<float> Logits(int64_t rows, int64_t vocab, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(rows * vocab));
  for (int64_t r = 0; r < rows; ++r) {
    float *row = x.data() + r * vocab;
    for (int64_t i = 0; i < vocab; ++i)
      row[i] = normal(rng);
    if (r % 3 == 1)
      for (int64_t i = 0; i < vocab; ++i)
        row[i] = std::round(row[i] * 2.0f) / 2.0f; // ties, and -0 beside +0
    if (r % 7 == 2)
      for (int64_t i = 0; i < vocab; i += 5)
        row[i] = -kInf;
    if (r % 11 == 3)
      for (int64_t i = 1; i < vocab; i += 13)
        row[i] = kNaN;
    if (r % 97 == 5)
      row[vocab / 3] = row[vocab / 2] = kInf;
    if (r % 89 == 6)
      for (int64_t i = 0; i < vocab; ++i)
        row[i] = i % 2 ? -kInf : kNaN;
  }
  return x;
}

struct Row {
  SamplingParams params;
  std::unique_ptr<Sampler> host, device; // same seed: the reference and the device's draws
  Sequence seq;
  std::vector<int32_t> suppressed;
};

void ExpectSameSample(const SampledToken &want, const SampledToken &got, int logprobs,
                      const std::string &where) {
  EXPECT_EQ(got.token, want.token) << where;
  if (logprobs == 0)
    return;
  if (std::isinf(want.logprob))
    EXPECT_EQ(got.logprob, want.logprob) << where;
  else
    EXPECT_NEAR(got.logprob, want.logprob, 1e-5) << where;
  ASSERT_EQ(got.top.size(), want.top.size()) << where;
  for (size_t j = 0; j < want.top.size(); ++j) {
    EXPECT_EQ(got.top[j].token, want.top[j].token) << where << " top " << j;
    if (std::isinf(want.top[j].logprob))
      EXPECT_EQ(got.top[j].logprob, want.top[j].logprob) << where << " top " << j;
    else
      EXPECT_NEAR(got.top[j].logprob, want.top[j].logprob, 1e-5) << where << " top " << j;
  }
}

void CompareWithHost(int64_t vocab, int reps, uint64_t seed) {
  auto backend = CreateBackend("cuda");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  std::unique_ptr<DeviceSampler> sampler = DeviceSampler::Create(**backend);
  ASSERT_TRUE(sampler) << "the cuda backend has no sampling kernel (or KILN_DEVICE_SAMPLING=0)";
  std::mt19937_64 rng(seed);
  std::vector<Row> rows;
  for (const SamplingParams &p : Combinations(reps, seed * 1000)) {
    Row r;
    r.params = p;
    auto host = Sampler::Create(p), device = Sampler::Create(p);
    ASSERT_TRUE(host.ok() && device.ok());
    r.host = std::move(*host);
    r.device = std::move(*device);
    // A prompt and an output with repeats, so every penalty has work.
    for (int i = 0; i < 40; ++i)
      r.seq.prompt.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
    for (int i = 0; i < 12; ++i)
      r.seq.output.push_back(i % 3 == 0
                                 ? r.seq.prompt[i]
                                 : static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
    r.seq.output.push_back(r.seq.output[1]);
    if (rows.size() % 4 == 0)
      r.suppressed = {0, static_cast<int32_t>(vocab - 1), r.seq.output[1], -3,
                      static_cast<int32_t>(vocab)};
    rows.push_back(std::move(r));
  }
  const int64_t L = static_cast<int64_t>(rows.size());
  auto buffer = DeviceBuffer::Allocate(**backend, static_cast<uint64_t>(L * vocab) * 4);
  ASSERT_TRUE(buffer.ok()) << buffer.status().message();
  const TensorView view{DType::kF32, {L, vocab}, buffer->data(), MemorySpace::kDevice};
  std::vector<int64_t> logits_rows(static_cast<size_t>(L));
  for (int64_t i = 0; i < L; ++i)
    logits_rows[i] = L - 1 - i; // rows need not be in order
  for (int step = 0; step < 2; ++step) {
    std::vector<float> logits = Logits(L, vocab, rng);
    ASSERT_TRUE((*backend)->CopyFromHost(buffer->data(), logits.data(), logits.size() * 4).ok());
    std::vector<RowSampling> sampling;
    for (Row &r : rows) {
      RowSampling s;
      s.params = &r.params;
      s.seq = &r.seq;
      s.suppressed = &r.suppressed;
      if (r.params.temperature != 0.0f && r.params.top_k != 1)
        s.uniform_bits = r.device->PeekUniformBits();
      sampling.push_back(s);
    }
    std::vector<RowSample> got;
    Status st = sampler->Sample(view, logits_rows, sampling, got);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(got.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      Row &r = rows[i];
      std::vector<int32_t> history = r.seq.prompt;
      history.insert(history.end(), r.seq.output.begin(), r.seq.output.end());
      const float *row = logits.data() + logits_rows[i] * vocab;
      const SampledToken want =
          r.host->Sample(row, vocab, history, r.seq.prompt.size(), r.suppressed);
      const SamplingParams &p = r.params;
      const std::string where =
          "vocab " + std::to_string(vocab) + " step " + std::to_string(step) + " row " +
          std::to_string(i) + " (logits row " + std::to_string(logits_rows[i]) +
          "): T=" + std::to_string(p.temperature) + " top_k=" + std::to_string(p.top_k) +
          " top_p=" + std::to_string(p.top_p) + " min_p=" + std::to_string(p.min_p) +
          " rep=" + std::to_string(p.repetition_penalty) +
          " pres=" + std::to_string(p.presence_penalty) + " seed=" + std::to_string(p.seed);
      ExpectSameSample(want, got[i].sample, p.logprobs, where);
      if (got[i].drew)
        r.device->ConsumeUniform();
      // Both samplers must have drawn the same number of times.
      EXPECT_EQ(r.device->PeekUniformBits(), r.host->PeekUniformBits()) << where;
      r.seq.output.push_back(want.token);
    }
  }
}

TEST(DeviceSampling, MatchesHostSamplerVocab1000) {
  KILN_SKIP_WITHOUT_GPU();
  CompareWithHost(1000, 4, 1);
}

TEST(DeviceSampling, MatchesHostSamplerVocab32003) {
  KILN_SKIP_WITHOUT_GPU();
  CompareWithHost(32003, 2, 2);
}

TEST(DeviceSampling, MatchesHostSamplerVocab128256) {
  KILN_SKIP_WITHOUT_GPU();
  CompareWithHost(128256, 1, 3);
}

TEST(DeviceSampling, RefusesBadRows) {
  KILN_SKIP_WITHOUT_GPU();
  auto backend = CreateBackend("cuda");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  std::unique_ptr<DeviceSampler> sampler = DeviceSampler::Create(**backend);
  ASSERT_TRUE(sampler);
  auto buffer = DeviceBuffer::Allocate(**backend, 2 * 16 * 4);
  ASSERT_TRUE(buffer.ok());
  const TensorView view{DType::kF32, {2, 16}, buffer->data(), MemorySpace::kDevice};
  SamplingParams p;
  Sequence seq;
  RowSampling row;
  row.params = &p;
  row.seq = &seq;
  std::vector<RowSample> out;
  Status st = sampler->Sample(view, {2}, {row}, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("logits row 2"), std::string::npos) << st.message();
  st = sampler->Sample(view, {0, 1}, {row}, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  const TensorView wrong{DType::kF16, {2, 16}, buffer->data(), MemorySpace::kDevice};
  EXPECT_EQ(sampler->Sample(wrong, {0}, {row}, out).code(), StatusCode::kInvalidArgument);
}

TEST(DeviceSampling, SwitchedOffByEnvironment) {
  KILN_SKIP_WITHOUT_GPU();
  auto backend = CreateBackend("cuda");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  setenv("KILN_DEVICE_SAMPLING", "0", 1);
  EXPECT_EQ(DeviceSampler::Create(**backend), nullptr);
  unsetenv("KILN_DEVICE_SAMPLING");
  EXPECT_NE(DeviceSampler::Create(**backend), nullptr);
}

// The path of plan `name` in KILN_TEST_PLANS ("name=path,..."), or "".
std::string TestPlan(const std::string &name) {
  const char *env = std::getenv("KILN_TEST_PLANS");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.substr(0, item.find('=')) == name)
      return item.substr(item.find('=') + 1);
  return "";
}

// The whole engine on a real plan: seeded requests with every kind of
// option give the same tokens (and logprobs) with device sampling as with
// KILN_DEVICE_SAMPLING=0, in one batch, over many steps.
TEST(DeviceSampling, PipelineMatchesHostSampling) {
  KILN_SKIP_WITHOUT_GPU();
  for (const std::string name : {"llama", "gpt2"}) {
    const std::string path = TestPlan(name);
    if (path.empty())
      GTEST_SKIP() << "KILN_TEST_PLANS names no " << name
                   << " plan (tools/gpu/test_gpu.sh sets it)";
    std::vector<Request> requests;
    for (int i = 0; i < 6; ++i) {
      Request r;
      for (int t = 0; t < 5 + 3 * i; ++t)
        r.prompt_ids.push_back((t * 37 + i * 11 + 1) % 200);
      SamplingParams &p = r.params.sampling;
      p.seed = 1000 + i;
      p.temperature = i == 0 ? 0.0f : 0.6f + 0.2f * i;
      p.top_k = i == 2 ? 20 : 0;
      p.top_p = i == 3 ? 0.8f : 1.0f;
      p.min_p = i == 4 ? 0.05f : 0.0f;
      p.repetition_penalty = i % 2 ? 1.2f : 1.0f;
      p.presence_penalty = i == 5 ? 0.5f : 0.0f;
      p.frequency_penalty = i == 5 ? 0.4f : 0.0f;
      p.logprobs = i % 3;
      r.params.max_new_tokens = 24;
      r.params.min_new_tokens = i == 1 ? 12 : 0; // suppresses EOS for a while
      r.params.n = i == 4 ? 2 : 1;
      requests.push_back(std::move(r));
    }
    PipelineOptions options;
    options.backend = "cuda";
    options.kv_cache_bytes = 64 << 20;
    auto run = [&](bool device) -> std::vector<Response> {
      if (device)
        unsetenv("KILN_DEVICE_SAMPLING");
      else
        setenv("KILN_DEVICE_SAMPLING", "0", 1);
      auto pipe = Pipeline::Open(path, options);
      unsetenv("KILN_DEVICE_SAMPLING");
      EXPECT_TRUE(pipe.ok()) << pipe.status().message();
      if (!pipe.ok())
        return {};
      auto out = (*pipe)->Generate(requests);
      EXPECT_TRUE(out.ok()) << out.status().message();
      return out.ok() ? std::move(*out) : std::vector<Response>{};
    };
    const std::vector<Response> host = run(false), device = run(true);
    ASSERT_EQ(host.size(), device.size()) << name;
    ASSERT_EQ(host.size(), 7u) << name;
    for (size_t i = 0; i < host.size(); ++i) {
      const std::string where = name + " response " + std::to_string(i);
      EXPECT_EQ(device[i].tokens, host[i].tokens) << where;
      ASSERT_EQ(device[i].logprobs.size(), host[i].logprobs.size()) << where;
      for (size_t t = 0; t < host[i].logprobs.size(); ++t)
        ExpectSameSample(host[i].logprobs[t], device[i].logprobs[t],
                         static_cast<int>(host[i].logprobs[t].top.size()) + 1,
                         where + " token " + std::to_string(t));
    }
  }
}

TEST(DeviceSampling, CpuBackendSamplesOnHost) {
  auto backend = CreateBackend("cpu");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ(DeviceSampler::Create(**backend), nullptr);
}

} // namespace
} // namespace kiln::engine
