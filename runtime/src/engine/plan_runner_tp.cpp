// PlanModelRunner across tensor-parallel ranks: rank 0 broadcasts each
// step's index arrays (the ragged inputs) and the other ranks run them.
// A step is two broadcasts: a fixed header, then the arrays in one buffer.
#include "core/paged_indices.h"
#include "comm/communicator.h"
#include "engine/plan_runner.h"

#include <chrono>
#include <cstring>

namespace kiln::engine {
namespace {

// The header's words.
enum : int { kKind, kTokens, kSeqs, kWidth, kRows, kDecode, kHeaderWords = 8 };
// kOpen: rank 0 opens a runner (a pipeline); kStep: a step of it; kStop:
// the runner ends; kExit: the run ends.
enum : int64_t { kStop = 0, kStep = 1, kExit = 2, kOpen = 3 };

// A follower waits for rank 0's next step as long as rank 0 is alive (a
// dead rank 0 closes its sockets, which ends the wait at once); only a
// rank 0 that hangs for this long is taken for lost.
constexpr std::chrono::hours kIdleTimeout{24};

} // namespace

Status SendTpControl(Communicator &comm, TpControl what) {
  int64_t header[kHeaderWords] = {what == TpControl::kOpen ? kOpen : kExit};
  return comm.Broadcast(header, sizeof(header), 0);
}

StatusOr<TpControl> ReceiveTpControl(Communicator &comm) {
  int64_t h[kHeaderWords] = {};
  KILN_RETURN_IF_ERROR(comm.Broadcast(h, sizeof(h), 0, kIdleTimeout));
  if (h[kKind] == kOpen)
    return TpControl::kOpen;
  if (h[kKind] == kExit)
    return TpControl::kExit;
  return Internal("rank " + std::to_string(comm.rank()) +
                  " expected rank 0 to open a runner or "
                  "end the run, got message kind " +
                  std::to_string(h[kKind]));
}

PlanModelRunner::~PlanModelRunner() {
  if (comm_ && comm_->rank() == 0 && !stopped_)
    (void)StopFollowers();
}

Status PlanModelRunner::StopFollowers() {
  if (!comm_ || comm_->size() == 1 || comm_->rank() != 0 || stopped_)
    return Status::Ok();
  stopped_ = true;
  int64_t header[kHeaderWords] = {kStop};
  return comm_->Broadcast(header, sizeof(header), 0);
}

Status PlanModelRunner::SendStep(int64_t T, int64_t N, bool decode) {
  if (!comm_ || comm_->size() == 1)
    return Status::Ok();
  if (comm_->rank() != 0)
    return Internal("only rank 0 schedules steps");
  int64_t header[kHeaderWords] = {
      kStep, T, N, max_blocks_, static_cast<int64_t>(rows_buf_.size()), decode ? 1 : 0};
  KILN_RETURN_IF_ERROR(comm_->Broadcast(header, sizeof(header), 0));
  std::vector<int64_t> payload;
  for (const std::vector<int64_t> *v :
       {&ids_buf_, &pos_buf_, &slots_buf_, &qstart_buf_, &ctx_buf_, &tables_buf_, &rows_buf_})
    payload.insert(payload.end(), v->begin(), v->end());
  return comm_->Broadcast(payload.data(), payload.size() * sizeof(int64_t), 0);
}

Status PlanModelRunner::ReceiveStep(bool *stop, int64_t *T, int64_t *N, bool *decode) {
  int64_t h[kHeaderWords] = {};
  KILN_RETURN_IF_ERROR(comm_->Broadcast(h, sizeof(h), 0, kIdleTimeout));
  *stop = h[kKind] == kStop;
  if (*stop)
    return Status::Ok();
  // Rank 0 is trusted code, but a mismatched peer (another kiln build)
  // must not size buffers from garbage.
  constexpr int64_t kMax = int64_t{1} << 28;
  if (h[kKind] != kStep || h[kTokens] < 1 || h[kSeqs] < 1 || h[kWidth] < 1 || h[kRows] < 0 ||
      h[kTokens] > kMax || h[kSeqs] > kMax || h[kWidth] > kMax || h[kRows] > kMax ||
      h[kSeqs] * h[kWidth] > kMax)
    return Internal("rank " + std::to_string(comm_->rank()) +
                    " received a malformed step header from rank 0 (are all ranks the same "
                    "kiln build?)");
  *T = h[kTokens];
  *N = h[kSeqs];
  *decode = h[kDecode] != 0;
  max_blocks_ = h[kWidth];
  const int64_t sizes[] = {*T, *T, *T, *N + 1, *N, *N * max_blocks_, h[kRows]};
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  std::vector<int64_t> payload(static_cast<size_t>(total));
  KILN_RETURN_IF_ERROR(comm_->Broadcast(payload.data(), payload.size() * sizeof(int64_t), 0));
  const int64_t *p = payload.data();
  int i = 0;
  for (std::vector<int64_t> *v :
       {&ids_buf_, &pos_buf_, &slots_buf_, &qstart_buf_, &ctx_buf_, &tables_buf_, &rows_buf_}) {
    v->assign(p, p + sizes[i]);
    p += sizes[i++];
  }
  return Status::Ok();
}

Status PlanModelRunner::FollowSteps() {
  if (!comm_ || comm_->rank() == 0)
    return Internal("FollowSteps runs on ranks other than 0");
  for (;;) {
    bool stop = false, decode = false;
    int64_t T = 0, N = 0;
    KILN_RETURN_IF_ERROR(ReceiveStep(&stop, &T, &N, &decode));
    if (stop)
      return Status::Ok();
    const PagedIndices indices{
        slots_buf_.data(), qstart_buf_.data(), ctx_buf_.data(), tables_buf_.data(), T, N,
        max_blocks_};
    Status checked = CheckPagedIndices(indices, num_blocks_, block_size_);
    if (!checked.ok())
      return Internal("rank " + std::to_string(comm_->rank()) +
                      " received a step its KV cache cannot hold: " + checked.message());
    executor_->SetGraphs(decode && graphs_);
    KILN_RETURN_IF_ERROR(BindStep(T, N));
    KILN_RETURN_IF_ERROR(executor_->Run());
  }
}

Status PlanModelRunner::SetNumBlocks(int64_t num_blocks) {
  if (num_blocks < 1)
    return InvalidArgument("the KV cache needs at least one block");
  num_blocks_ = num_blocks;
  return AllocateCaches();
}

} // namespace kiln::engine
