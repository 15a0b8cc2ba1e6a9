// Drives a Scheduler with the FakeModel the way a serving loop would
// (schedule, run, sample by argmax, update, stop at EOS) and checks the
// scheduler's invariants on every step, failing the current test on any
// violation.
#pragma once

#include "engine/block_manager.h"
#include "engine/scheduler.h"
#include "fake_model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace kiln::engine::testing {

struct HarnessOptions {
  SchedulerConfig config;
  int64_t num_blocks = 1024;
  int64_t block_size = 4;
  bool prefix_caching = false;
  int64_t vocab = 64;
  int32_t eos = -1; // -1: no EOS, requests stop at max_new_tokens
};

class Harness {
public:
  explicit Harness(const HarnessOptions &options);

  // Scheduler::Add of a new request.
  Status Add(int64_t id, std::vector<int32_t> prompt, int max_new_tokens);
  // One schedule -> run -> sample -> update round with every check. The
  // returned step's seq pointers may dangle (finished sequences are taken);
  // use seq_id.
  Step StepOnce();
  // Steps until nothing is waiting or running; false (and a test failure)
  // past max_steps or on the first violation.
  bool RunToEnd(int64_t max_steps);
  // The ground truth for a request added here.
  std::vector<int32_t> Reference(int64_t id) const;

  Scheduler &scheduler() { return *scheduler_; }
  BlockManager &blocks() { return *blocks_; }
  const HarnessOptions &options() const { return options_; }

  std::map<int64_t, Sequence> finished;   // by id
  std::map<int64_t, int64_t> finish_step; // 1-based step that finished it
  std::vector<Step> steps;                // every step, for tests to inspect
  int64_t num_preemptions = 0;

private:
  enum Phase { kDecode, kPrefill, kNew }; // a sequence's state before a step
  void CheckStep(const Step &step, const std::map<int64_t, Phase> &phase_before,
                 const std::vector<int64_t> &running_before, bool runnable_before);

  HarnessOptions options_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<FakeModel> model_;
  std::map<int64_t, Sequence> requests_; // as added, for references
  std::vector<int64_t> live_;            // added, not finished
};

} // namespace kiln::engine::testing
