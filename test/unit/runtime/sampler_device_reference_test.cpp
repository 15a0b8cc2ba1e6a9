// Host-side checks of on-device sampling's rules (kernels/cuda/sampling.cu),
// which need no GPU: the Sampler's peek-then-consume protocol draws the
// same numbers as plain sampling, and the device's selection arithmetic
// (the order key, fixed-point masses, the top-p and draw targets), written
// here as plain sequential code, picks the CPU Sampler's tokens. The
// kernel itself is checked against the Sampler on a GPU
// (test/cuda/device_sampling_test.cpp).
#include "core/sampling_contract.h"
#include "sampler_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace kiln {
namespace {

namespace kc = sampling;

// sampling.cu's OrderKey.
uint64_t OrderKey(float v, int64_t id) {
  uint32_t b = 0;
  if (v != 0.0f)
    std::memcpy(&b, &v, 4);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<uint64_t>(b) << 32) | (0xffffffffu - static_cast<uint32_t>(id));
}
int32_t IdOf(uint64_t key) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(key));
}

uint64_t Mass(double p) {
  return static_cast<uint64_t>(
      std::nearbyint(p * static_cast<double>(uint64_t{1} << kc::kMassBits)));
}

struct Cand {
  uint64_t key;
  float l;
};

// What the kernel's radix descent finds: the first candidate, in order,
// whose inclusive running weight exceeds `target`.
template <typename W> uint64_t Select(const std::vector<Cand> &order, W weight, uint64_t target) {
  uint64_t acc = 0;
  for (const Cand &c : order) {
    acc += weight(c);
    if (acc > target)
      return c.key;
  }
  return order.back().key;
}

// sampling.cu's Choose, sequentially; `bits` is the row's uniform.
int32_t ReferenceChoose(const std::vector<float> &x, const SamplingParams &p, uint64_t bits,
                        bool *drew) {
  *drew = false;
  std::vector<Cand> order;
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isnan(x[i]))
      order.push_back({OrderKey(x[i], static_cast<int64_t>(i)), x[i]});
  if (order.empty())
    return 0;
  std::sort(order.begin(), order.end(), [](const Cand &a, const Cand &b) { return a.key > b.key; });
  const float max = order[0].l;
  if (p.temperature == 0.0f || p.top_k == 1 || std::isinf(max))
    return IdOf(order[0].key);
  const double t = p.temperature;
  auto prob = [&](float l) { return std::exp((static_cast<double>(l) - max) / t); };
  uint64_t lo = 0;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < order.size())
    lo = Select(
        order, [](const Cand &) -> uint64_t { return 1; }, static_cast<uint64_t>(p.top_k) - 1);
  if (p.top_p < 1.0f) {
    auto kept = [&](const Cand &c) -> uint64_t { return c.key >= lo ? Mass(prob(c.l)) : 0; };
    uint64_t total = 0;
    for (const Cand &c : order)
      total += kept(c);
    const double want = std::ceil(static_cast<double>(p.top_p) * static_cast<double>(total));
    uint64_t target = want >= 1.0 ? static_cast<uint64_t>(want) - 1 : 0;
    lo = Select(order, kept, std::min(target, total - 1));
  }
  auto drawn = [&](const Cand &c) -> uint64_t {
    if (c.key < lo)
      return 0;
    const double pr = prob(c.l);
    return p.min_p > 0.0f && !(pr >= static_cast<double>(p.min_p)) ? 0 : Mass(pr);
  };
  uint64_t total = 0;
  for (const Cand &c : order)
    total += drawn(c);
  const uint64_t target =
      static_cast<uint64_t>((static_cast<unsigned __int128>(bits << 11) * total) >> 64);
  *drew = true;
  return IdOf(Select(order, drawn, std::min(target, total - 1)));
}

std::vector<float> RandomRow(int64_t vocab, std::mt19937_64 &rng, int kind) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(vocab));
  for (float &v : x)
    v = normal(rng);
  if (kind % 3 == 1)
    for (float &v : x)
      v = std::round(v * 2.0f) / 2.0f; // ties, -0 beside +0
  if (kind % 5 == 2)
    for (size_t i = 0; i < x.size(); i += 7)
      x[i] = -std::numeric_limits<float>::infinity();
  if (kind % 7 == 3)
    for (size_t i = 1; i < x.size(); i += 11)
      x[i] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

TEST(SamplerPeek, PeekingDrawsTheSameNumbers) {
  std::mt19937_64 rng(7);
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.seed = 42;
  auto plain = MakeSampler(p), peeking = MakeSampler(p);
  for (int step = 0; step < 200; ++step) {
    std::vector<float> x = RandomRow(64, rng, step);
    const uint64_t a = peeking->PeekUniformBits();
    EXPECT_EQ(peeking->PeekUniformBits(), a) << "a second peek is the same draw";
    EXPECT_LT(a, uint64_t{1} << 53);
    EXPECT_EQ(peeking->Sample(x.data(), 64), plain->Sample(x.data(), 64)) << step;
  }
}

TEST(SamplerPeek, ConsumeAdvancesLikeADraw) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 3;
  auto a = MakeSampler(p), b = MakeSampler(p);
  const uint64_t first = a->PeekUniformBits();
  a->ConsumeUniform();
  EXPECT_NE(a->PeekUniformBits(), first);
  std::vector<float> x(16, 0.0f);
  (void)b->Sample(x.data(), 16); // one draw
  EXPECT_EQ(a->PeekUniformBits(), b->PeekUniformBits());
}

// The device's arithmetic picks the CPU's token for every option and seed.
TEST(DeviceSamplingReference, MatchesSampler) {
  std::mt19937_64 rng(11);
  int rows = 0;
  for (int64_t vocab : {1000, 4099})
    for (float temperature : {0.0f, 0.6f, 1.5f})
      for (int top_k : {0, 1, 7, 100})
        for (float top_p : {1.0f, 0.9f, 0.3f})
          for (float min_p : {0.0f, 0.1f})
            for (int rep = 0; rep < 6; ++rep) {
              SamplingParams p;
              p.temperature = temperature;
              p.top_k = top_k;
              p.top_p = top_p;
              p.min_p = min_p;
              p.seed = static_cast<uint64_t>(++rows);
              auto host = MakeSampler(p), device = MakeSampler(p);
              for (int step = 0; step < 2; ++step) {
                std::vector<float> x = RandomRow(vocab, rng, rep + step);
                const uint64_t bits = device->PeekUniformBits();
                bool drew = false;
                const int32_t got = ReferenceChoose(x, p, bits, &drew);
                if (drew)
                  device->ConsumeUniform();
                ASSERT_EQ(got, host->Sample(x.data(), vocab))
                    << "vocab " << vocab << " T " << temperature << " top_k " << top_k << " top_p "
                    << top_p << " min_p " << min_p << " seed " << p.seed;
                ASSERT_EQ(device->PeekUniformBits(), host->PeekUniformBits());
              }
            }
}

} // namespace
} // namespace kiln
