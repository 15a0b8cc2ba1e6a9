// Steps the runner tests share: fixture plans named in KILN_TEST_PLANS
// ("name=path,..."), a one-chunk step, and a prefill then a decode.
#pragma once

#include "engine/plan_runner.h"
#include "kiln/plan.h"

#include <gtest/gtest.h>

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

} // namespace kiln::test
