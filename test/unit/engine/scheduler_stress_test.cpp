// The scheduler on random request mixes: every request finishes within a
// bound of steps (no starvation), and a tiny pool with heavy preemption, or
// prefix caching, generates exactly what an unconstrained run does.
#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kiln::engine {
namespace {

using testing::Harness;
using testing::HarnessOptions;

struct Request {
  int64_t id;
  std::vector<int32_t> prompt;
  int max_new;
  int64_t arrive_step; // added before this step (0: before the first)
};

struct MixOptions {
  int num_requests = 40;
  bool shared_prefixes = false; // most prompts start with one of 3 prefixes
  bool staggered = false;       // requests arrive over time instead of at once
};

constexpr int32_t kEos = 7;
constexpr int64_t kVocab = 64;

std::vector<Request> RandomMix(uint32_t seed, const MixOptions &mix) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto &p : prefixes)
    for (int i = uniform(8, 24); i > 0; --i)
      p.push_back(uniform(0, kVocab - 1));
  std::vector<Request> out;
  int64_t step = 0;
  for (int i = 0; i < mix.num_requests; ++i) {
    Request r{i + 1, {}, uniform(1, 40), 0};
    if (mix.shared_prefixes && uniform(0, 3) > 0)
      r.prompt = prefixes[uniform(0, 2)];
    for (int n = uniform(1, 40); n > 0; --n)
      r.prompt.push_back(uniform(0, kVocab - 1));
    if (mix.staggered)
      step += uniform(0, 3);
    r.arrive_step = step;
    out.push_back(std::move(r));
  }
  return out;
}

// The fewest blocks Add accepts for every request of the mix.
int64_t TinyPool(const std::vector<Request> &reqs, int64_t block_size) {
  int64_t most = 1;
  for (const Request &r : reqs)
    most = std::max<int64_t>(
        most, (static_cast<int64_t>(r.prompt.size()) + r.max_new + block_size - 1) / block_size);
  return most;
}

struct Outcome {
  std::map<int64_t, std::vector<int32_t>> outputs;
  int64_t preemptions = 0;
  int64_t steps = 0;
};

// Runs the mix to the end, checking each output against the ground truth
// and each request's finish against the starvation bound: the oldest
// unfinished request is never preempted and gets a token every step, so
// request i finishes within sum_{j <= i}(prompt_j + max_new_j) steps of its
// arrival.
Outcome RunMix(const std::vector<Request> &reqs, HarnessOptions opt) {
  opt.vocab = kVocab;
  opt.eos = kEos;
  Harness h(opt);
  std::map<int64_t, int64_t> added_at;
  size_t next = 0;
  while (next < reqs.size() || h.scheduler().HasUnfinished()) {
    for (; next < reqs.size() && reqs[next].arrive_step <= static_cast<int64_t>(h.steps.size());
         ++next) {
      const Request &r = reqs[next];
      Status st = h.Add(r.id, r.prompt, r.max_new);
      EXPECT_TRUE(st.ok()) << st.message();
      added_at[r.id] = static_cast<int64_t>(h.steps.size());
    }
    h.StepOnce();
    if (::testing::Test::HasFailure() || h.steps.size() > 100000)
      break;
  }
  Outcome out;
  int64_t work = 0;
  for (const Request &r : reqs) {
    work += static_cast<int64_t>(r.prompt.size()) + r.max_new;
    auto done = h.finished.find(r.id);
    if (done == h.finished.end()) {
      ADD_FAILURE() << "request " << r.id << " never finished";
      continue;
    }
    EXPECT_EQ(done->second.output, h.Reference(r.id)) << "request " << r.id;
    EXPECT_LE(h.finish_step.at(r.id) - added_at.at(r.id), work) << "request " << r.id << " starved";
    out.outputs[r.id] = done->second.output;
  }
  EXPECT_EQ(h.blocks().NumFreeBlocks(), h.blocks().num_blocks()) << "blocks leaked";
  out.preemptions = h.num_preemptions;
  out.steps = static_cast<int64_t>(h.steps.size());
  return out;
}

HarnessOptions Options(int64_t num_blocks, int64_t block_size, bool caching) {
  HarnessOptions opt;
  opt.config = {32, 8, 64};
  opt.num_blocks = num_blocks;
  opt.block_size = block_size;
  opt.prefix_caching = caching;
  return opt;
}

TEST(SchedulerStress, TinyPoolMatchesAnUnconstrainedRun) {
  int64_t preemptions = 0;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<Request> reqs = RandomMix(seed, {});
    const Outcome roomy = RunMix(reqs, Options(4096, 4, false));
    EXPECT_EQ(roomy.preemptions, 0);
    const Outcome tiny = RunMix(reqs, Options(TinyPool(reqs, 4), 4, false));
    EXPECT_EQ(tiny.outputs, roomy.outputs);
    preemptions += tiny.preemptions;
    if (::testing::Test::HasFailure())
      return;
  }
  EXPECT_GT(preemptions, 50) << "the pool was never short; the test is too weak";
}

TEST(SchedulerStress, EveryBlockSizeCompletesInTheSmallestPool) {
  const std::vector<Request> reqs = RandomMix(11, {});
  const Outcome roomy = RunMix(reqs, Options(4096, 4, false));
  for (int64_t bs : {1, 3, 16}) {
    SCOPED_TRACE("block size " + std::to_string(bs));
    const Outcome tiny = RunMix(reqs, Options(TinyPool(reqs, bs), bs, false));
    EXPECT_EQ(tiny.outputs, roomy.outputs);
    EXPECT_GT(tiny.preemptions, 0);
  }
}

TEST(SchedulerStress, PrefixCachingChangesWorkNotOutputs) {
  for (uint32_t seed = 21; seed <= 25; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    MixOptions mix;
    mix.shared_prefixes = true;
    mix.staggered = true;
    const std::vector<Request> reqs = RandomMix(seed, mix);
    const Outcome plain = RunMix(reqs, Options(4096, 4, false));
    const Outcome cached = RunMix(reqs, Options(4096, 4, true));
    const Outcome tiny_cached = RunMix(reqs, Options(TinyPool(reqs, 4), 4, true));
    EXPECT_EQ(cached.outputs, plain.outputs);
    EXPECT_EQ(tiny_cached.outputs, plain.outputs);
    if (::testing::Test::HasFailure())
      return;
  }
}

TEST(SchedulerStress, StaggeredArrivalsInAMidSizedPool) {
  for (uint32_t seed = 31; seed <= 35; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    MixOptions mix;
    mix.staggered = true;
    mix.num_requests = 60;
    const std::vector<Request> reqs = RandomMix(seed, mix);
    const Outcome roomy = RunMix(reqs, Options(4096, 8, false));
    const Outcome mid = RunMix(reqs, Options(2 * TinyPool(reqs, 8), 8, true));
    EXPECT_EQ(mid.outputs, roomy.outputs);
    if (::testing::Test::HasFailure())
      return;
  }
}

} // namespace
} // namespace kiln::engine
