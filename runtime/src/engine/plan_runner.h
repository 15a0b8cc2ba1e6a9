// The ModelRunner of a plan with the ragged interface (Plan.ragged, written
// by kiln-ragged): owns the paged KV cache tensors in the backend's memory
// (in the plan's cache dtype), turns each scheduled Step into the plan's
// flat-batch index arrays, checks them once, then runs the executor on the
// backend and reads the logits back.
#pragma once

#include "core/backend.h"
#include "engine/device_sampler.h"
#include "engine/model_runner.h"
#include "kiln/executor.h"
#include "kiln/plan.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln {
class Communicator;
}

namespace kiln::engine {

// Rank 0's messages between runners (docs/tp-runtime.md): kOpen before it
// builds a runner (every rank then builds one), kExit when the run ends.
enum class TpControl { kOpen, kExit };
Status SendTpControl(Communicator &comm, TpControl what);
// A follower's wait for rank 0's next message.
StatusOr<TpControl> ReceiveTpControl(Communicator &comm);

class PlanModelRunner : public ModelRunner {
public:
  // Ends the followers' loop (StopFollowers) when it has not ended yet.
  ~PlanModelRunner() override;

  // Bytes of KV cache one block of `block_size` tokens takes over all
  // layers. InvalidArgument when the plan has no ragged interface or its
  // roles are malformed (what Create checks).
  static StatusOr<int64_t> BytesPerBlock(const Plan &plan, int64_t block_size);

  // Allocates `num_blocks` blocks of `block_size` tokens per layer in
  // `backend`'s memory; ResourceExhausted when the memory is not there.
  // `plan` and `backend` must outlive the runner.
  static StatusOr<std::unique_ptr<PlanModelRunner>> Create(const Plan &plan, Backend &backend,
                                                           int64_t num_blocks, int64_t block_size);

  // The largest step the engine will run, for sizing the KV cache by what
  // the device has left.
  struct StepLimits {
    int64_t max_tokens = 512; // tokens of one step (max_batched_tokens)
    int64_t max_seqs = 64;    // sequences of one step
    int64_t max_context = 0;  // tokens of one sequence (the context length)
  };
  // Like Create, with as many blocks as `fraction` (0 < fraction <= 1) of
  // the device memory that is free once the weights are uploaded and the
  // activations of a largest step (`limits`) are allocated. The device
  // keeps the rest, for op scratch and the arena's growth. InvalidArgument
  // on a backend that does not report device memory (the cpu).
  static StatusOr<std::unique_ptr<PlanModelRunner>>
  CreateForMemoryFraction(const Plan &plan, Backend &backend, double fraction, int64_t block_size,
                          const StepLimits &limits);

  // CUDA graphs for decode steps (docs/gpu.md): a decode-only step is
  // padded to a bucket of sequences and block table width
  // (engine/step_buckets.h) and its executor run is captured once per
  // bucket and replayed; prefill and mixed steps run eagerly. On by default
  // on a backend that can capture, unless KILN_CUDA_GRAPHS=0. Turning
  // graphs off also turns the padding off; SetDecodeBuckets turns the
  // padding alone on or off (tests compare graphs on and off on the same
  // shapes). SetMaxBucket caps a bucket at the largest batch of a step
  // (0: no cap), so padding stays within the activations reserved for one.
  void SetCudaGraphs(bool on);
  void SetDecodeBuckets(bool on) { buckets_ = on; }
  void SetMaxBucket(int64_t max_seqs) { max_bucket_ = max_seqs; }
  bool cuda_graphs() const { return graphs_; }

  // Tensor parallelism (docs/tp-runtime.md). With a communicator of more
  // than one rank, rank 0 runs the engine: each step's index arrays, once
  // built, are broadcast to the other ranks, whose FollowSteps binds and
  // runs them, so every rank executes the same step in lockstep and the
  // scheduler above knows nothing of ranks. StopFollowers (rank 0) ends the
  // followers' loop; FollowSteps returns Ok then, or the error that ended it.
  // `comm` must outlive the runner.
  void SetCommunicator(Communicator *comm) { comm_ = comm; }
  Status FollowSteps();
  Status StopFollowers();
  // Reallocates the caches with `num_blocks` blocks (every rank must agree
  // on the count: rank 0's block tables index them all).
  Status SetNumBlocks(int64_t num_blocks);
  // False on a tensor-parallel rank that holds no KV head in any layer
  // (its caches are empty, so it can take any block count).
  bool HoldsKv() const;
  const Executor &executor() const { return *executor_; }
  Executor &executor() { return *executor_; } // for profiling switches

  int64_t vocab_size() const override { return vocab_; }
  int64_t num_blocks() const override { return num_blocks_; }
  int64_t block_size() const override { return block_size_; }
  int64_t kv_window() const override { return kv_window_; }
  Status Run(const Step &step, std::vector<float> &logits) override;
  // On a backend with a sampling kernel (device_sampler.cpp).
  bool SamplesOnDevice() const override { return device_sampler_ != nullptr; }
  Status RunAndSample(const Step &step, const std::vector<RowSampling> &rows,
                      std::vector<RowSample> &out) override;

private:
  PlanModelRunner(const Plan &plan, Backend &backend, int64_t num_blocks, int64_t block_size)
      : plan_(plan), backend_(backend), num_blocks_(num_blocks), block_size_(block_size) {}
  // The runner without its caches: roles read, weights uploaded.
  static StatusOr<std::unique_ptr<PlanModelRunner>> Prepare(const Plan &plan, Backend &backend,
                                                            int64_t block_size);
  // Allocates num_blocks_ blocks for every layer's key and value cache.
  Status AllocateCaches();
  // Binds a largest step over one-block caches, so the executor allocates
  // the arena that step needs; runs nothing.
  Status ReserveActivations(const StepLimits &limits);
  // Binds the arrays of BuildIndices with the caches as they are.
  Status BindStep(int64_t tokens, int64_t seqs);
  // Binds and runs `step`, leaving its logits in the executor's output;
  // `sampled` gets the number of rows that sample.
  Status Execute(const Step &step, int64_t *sampled);
  // The sampled rows (rows_buf_) of a logits output that holds a row for
  // every token of the step.
  Status CopyRows(const TensorView &out, size_t rows, std::vector<float> &logits);
  // Pads the built arrays of a decode step to its bucket.
  Status PadDecode(int64_t &T, int64_t &N);
  // Fills the index arrays of `step`; Internal when a sequence lacks blocks.
  Status BuildIndices(const Step &step);
  // Rank 0: sends the built arrays of a step of T tokens and N sequences to
  // the followers (no-op without tensor parallelism); a follower receives
  // them. `decode`: run as a decode step (CUDA graphs).
  Status SendStep(int64_t T, int64_t N, bool decode);
  Status ReceiveStep(bool *stop, int64_t *T, int64_t *N, bool *decode);

  const Plan &plan_;
  Backend &backend_;
  int64_t num_blocks_, block_size_;
  int64_t kv_window_ = 0;
  int64_t vocab_ = 0;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<DeviceSampler> device_sampler_; // null: the engine samples on the host
  // Position in plan.inputs() of each role, and of each layer's caches.
  int ids_ = -1, pos_ = -1, slots_ = -1, qstart_ = -1, ctx_ = -1, tables_ = -1, rows_ = -1;
  int logits_ = -1; // position in plan.outputs()
  struct Cache {
    int key_input = -1, value_input = -1;
    DType dtype = DType::kF32;
    Shape key_shape, value_shape; // [num_blocks, kv_heads, block_size, head_dim]
    DeviceBuffer key, value;
  };
  std::vector<Cache> caches_;
  // Per-step inputs, kept alive from Bind through Run.
  std::vector<int64_t> ids_buf_, pos_buf_, slots_buf_, qstart_buf_, ctx_buf_, tables_buf_,
      rows_buf_;
  int64_t max_blocks_ = 1; // block table width of the current step
  bool graphs_ = false, buckets_ = false;
  int64_t max_bucket_ = 0;
  Communicator *comm_ = nullptr;
  bool stopped_ = false;
};

} // namespace kiln::engine
