#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace kiln::engine::testing {

Harness::Harness(const HarnessOptions &options) : options_(options) {
  auto blocks =
      BlockManager::Create(options.num_blocks, options.block_size, options.prefix_caching);
  EXPECT_TRUE(blocks.ok()) << blocks.status().message();
  blocks_ = std::move(*blocks);
  auto scheduler = Scheduler::Create(options.config, *blocks_);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status().message();
  scheduler_ = std::move(*scheduler);
  model_ = std::make_unique<FakeModel>(*blocks_, options.vocab);
}

Status Harness::Add(int64_t id, std::vector<int32_t> prompt, int max_new_tokens) {
  Sequence seq;
  seq.id = id;
  seq.prompt = std::move(prompt);
  seq.max_new_tokens = max_new_tokens;
  Sequence copy = seq;
  KILN_RETURN_IF_ERROR(scheduler_->Add(std::move(seq)));
  requests_[id] = std::move(copy);
  live_.push_back(id);
  return Status::Ok();
}

std::vector<int32_t> Harness::Reference(int64_t id) const {
  const Sequence &r = requests_.at(id);
  return model_->Reference(id, r.prompt, r.max_new_tokens, options_.eos);
}

Step Harness::StepOnce() {
  std::map<int64_t, Phase> phase;
  std::vector<std::pair<int64_t, int64_t>> running; // (arrival, id)
  for (int64_t id : live_) {
    const Sequence *s = scheduler_->Find(id);
    if (s->status != SequenceStatus::kRunning) {
      phase[id] = kNew;
      continue;
    }
    phase[id] = s->NumUncomputed() == 1 ? kDecode : kPrefill;
    running.emplace_back(s->arrival, id);
  }
  std::sort(running.begin(), running.end());
  std::vector<int64_t> running_ids;
  for (const auto &r : running)
    running_ids.push_back(r.second);
  const bool runnable = scheduler_->HasUnfinished();

  Step step = scheduler_->Schedule();
  CheckStep(step, phase, running_ids, runnable);

  std::vector<float> logits;
  Status st = model_->Run(step, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<int32_t> sampled;
  for (int64_t row = 0; row < step.NumSampling(); ++row) {
    const float *l = &logits[row * options_.vocab];
    sampled.push_back(static_cast<int32_t>(std::max_element(l, l + options_.vocab) - l));
  }
  st = scheduler_->Update(step, sampled);
  EXPECT_TRUE(st.ok()) << st.message();
  size_t row = 0;
  for (const ScheduledChunk &c : step.chunks) {
    if (!c.samples || sampled[row++] != options_.eos)
      continue;
    EXPECT_TRUE(scheduler_->Finish(c.seq_id, FinishReason::kEos).ok());
  }
  num_preemptions += static_cast<int64_t>(step.preempted.size());
  steps.push_back(step);
  for (Sequence &s : scheduler_->TakeFinished()) {
    finish_step[s.id] = static_cast<int64_t>(steps.size());
    live_.erase(std::find(live_.begin(), live_.end(), s.id));
    finished[s.id] = std::move(s);
  }
  EXPECT_LE(scheduler_->NumRunning(), options_.config.max_seqs_per_step);
  return step;
}

void Harness::CheckStep(const Step &step, const std::map<int64_t, Phase> &phase_before,
                        const std::vector<int64_t> &running_before, bool runnable_before) {
  const SchedulerConfig &cfg = options_.config;
  EXPECT_EQ(step.empty(), !runnable_before) << "step " << step.id;
  EXPECT_LE(step.num_tokens, cfg.max_batched_tokens) << "step " << step.id << " over budget";
  EXPECT_LE(static_cast<int64_t>(step.chunks.size()), cfg.max_seqs_per_step);
  int64_t sum = 0;
  std::set<int64_t> seen;
  Phase last = kDecode;
  for (const ScheduledChunk &c : step.chunks) {
    sum += c.num_tokens;
    EXPECT_TRUE(seen.insert(c.seq_id).second) << "sequence " << c.seq_id << " twice in a step";
    EXPECT_GE(c.num_tokens, 1);
    const Sequence *s = scheduler_->Find(c.seq_id);
    ASSERT_TRUE(s != nullptr && s == c.seq);
    EXPECT_EQ(c.start, s->num_computed_tokens);
    EXPECT_LE(c.start + c.num_tokens, s->NumTokens());
    EXPECT_EQ(c.samples, c.start + c.num_tokens == s->NumTokens());
    const Phase p = phase_before.at(c.seq_id);
    EXPECT_GE(p, last) << "step " << step.id << ": decodes, then started prompts, then new ones";
    EXPECT_TRUE(p != kNew || step.preempted.empty())
        << "step " << step.id << " admitted sequence " << c.seq_id << " while memory ran out";
    EXPECT_EQ(std::count(step.preempted.begin(), step.preempted.end(), c.seq_id), 0)
        << "step " << step.id << " preempted sequence " << c.seq_id << " and kept a chunk of it";
    last = p;
  }
  EXPECT_EQ(sum, step.num_tokens);
  ASSERT_LE(step.preempted.size(), running_before.size());
  for (size_t j = 0; j < step.preempted.size(); ++j)
    EXPECT_EQ(step.preempted[j], running_before[running_before.size() - 1 - j])
        << "step " << step.id << ": preemption must take the most recently admitted first";
}

bool Harness::RunToEnd(int64_t max_steps) {
  for (int64_t i = 0; i < max_steps; ++i) {
    if (!scheduler_->HasUnfinished()) {
      EXPECT_EQ(blocks_->NumFreeBlocks(), blocks_->num_blocks()) << "blocks leaked";
      return true;
    }
    StepOnce();
    if (::testing::Test::HasFailure())
      return false;
  }
  ADD_FAILURE() << "requests still unfinished after " << max_steps << " steps";
  return false;
}

} // namespace kiln::engine::testing
