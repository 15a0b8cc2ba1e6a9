// Steps the runner tests share: fixture plans named in KILN_TEST_PLANS
// ("name=path,..."), a one-chunk step, and a prefill then a decode.
#pragma once

#include "engine/plan_runner.h"
#include "kiln/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

using engine::PlanModelRunner;
using engine::ScheduledChunk;
using engine::Sequence;
using engine::Step;

inline std::unique_ptr<Plan> LoadNamed(const std::string &name) {
  const char *env = std::getenv("KILN_TEST_PLANS");
  std::stringstream ss(env ? env : "");
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == name) {
      auto plan = LoadPlan(item.substr(eq + 1));
      EXPECT_TRUE(plan.ok()) << plan.status().message();
      return plan.ok() ? std::move(*plan) : nullptr;
    }
  }
  ADD_FAILURE() << "KILN_TEST_PLANS has no plan named " << name;
  return nullptr;
}

constexpr int64_t kBlocks = 8, kBlockSize = 4;

inline Step OneChunk(Sequence &seq, int64_t start, int64_t n) {
  Step step;
  step.chunks.push_back(ScheduledChunk{&seq, seq.id, start, n, true});
  step.num_tokens = n;
  return step;
}

// Prefill of a 6-token prompt, then one decode step; the logits of both.
inline std::vector<float> PrefillThenDecode(PlanModelRunner &runner) {
  Sequence seq;
  seq.id = 1;
  seq.prompt = {3, 1, 4, 1, 5, 9};
  seq.block_table = {5, 2}; // not in order, so a wrong slot shows
  std::vector<float> all, logits;
  Status st = runner.Run(OneChunk(seq, 0, 6), logits);
  EXPECT_TRUE(st.ok()) << st.message();
  all = logits;
  seq.output = {2};
  st = runner.Run(OneChunk(seq, 6, 1), logits);
  EXPECT_TRUE(st.ok()) << st.message();
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

// Five sequences prefilled in one step, then decoded greedily in batches
// of 5, 3, 1, 2 and 5 again (on and between the decode buckets 1, 2, 4, 8),
// over a cache of `DecodeScriptBlocks` blocks of kBlockSize; the logits of
// every step, in order. The greedy tokens come from the logits, so two
// runners that agree on the logits decode the same tokens; with `follow`
// (another run's result) they come from its logits instead, so runners that
// agree only within rounding still compute the same steps.
constexpr int64_t kDecodeScriptBlocks = 64;

inline std::vector<float> DecodeScript(PlanModelRunner &runner,
                                       const std::vector<float> *follow = nullptr) {
  const int64_t vocab = runner.vocab_size();
  std::vector<Sequence> seqs(5);
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence &s = seqs[i];
    s.id = static_cast<int64_t>(i) + 1;
    for (size_t t = 0; t < 3 + 2 * i; ++t)
      s.prompt.push_back(static_cast<int32_t>((7 * i + 3 * t + 1) % std::min<int64_t>(vocab, 50)));
    // Blocks of each sequence interleaved with the others', out of order.
    for (int64_t b = 0; b < 12; ++b)
      s.block_table.push_back(static_cast<int32_t>((b * 5 + (4 - i)) % kDecodeScriptBlocks));
  }
  std::vector<float> all, logits;
  auto run = [&](std::vector<size_t> which, bool prefill) {
    Step step;
    for (size_t i : which) {
      Sequence &s = seqs[i];
      const int64_t start = prefill ? 0 : s.NumTokens() - 1;
      const int64_t n = prefill ? static_cast<int64_t>(s.prompt.size()) : 1;
      step.chunks.push_back(ScheduledChunk{&s, s.id, start, n, true});
      step.num_tokens += n;
    }
    Status st = runner.Run(step, logits);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok() || logits.size() != which.size() * static_cast<size_t>(vocab)) {
      ADD_FAILURE() << "step of " << which.size() << " sequences gave " << logits.size()
                    << " logits";
      return false;
    }
    const size_t offset = all.size();
    all.insert(all.end(), logits.begin(), logits.end());
    const bool followed = follow != nullptr && follow->size() >= all.size();
    for (size_t r = 0; r < which.size(); ++r) {
      const float *row = (followed ? follow->data() + offset : logits.data()) + r * vocab;
      seqs[which[r]].output.push_back(
          static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    }
    return true;
  };
  if (!run({0, 1, 2, 3, 4}, true))
    return all;
  // Each batch three times: a bucket's first step runs eagerly, its second
  // is captured, the third replays (where the table width stays).
  const std::vector<std::vector<size_t>> batches = {
      {0, 1, 2, 3, 4}, {1, 2, 4}, {3}, {0, 4}, {0, 1, 2, 3, 4}};
  for (const auto &b : batches)
    for (int repeat = 0; repeat < 3; ++repeat)
      if (!run(b, false))
        return all;
  return all;
}

} // namespace kiln::test
