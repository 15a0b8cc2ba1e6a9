// The CPU's communicator: gloo's collectives over its TCP transport, its
// full mesh set up through the run's FileStore. gloo reports failures by
// throwing (a peer's closed socket, a timeout); every call here catches and
// turns them into a Status naming the collective, so nothing escapes into
// the kernels. Half-precision sums run in f32 (gloo has no bf16), which is
// also the more accurate way to add partial products.
#include "comm/gloo_communicator.h"

#include "comm/store.h"
#include "kernels/cpu/pointwise_cast.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <exception>

namespace kiln::comm {
namespace {

// gloo's store interface over the run's rendezvous store; gloo expects a
// throw on a failure.
class StoreAdapter : public gloo::rendezvous::Store {
public:
  StoreAdapter(kiln::comm::Store &store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    Status st = store_.Set(key, data);
    if (!st.ok())
      throw std::runtime_error(st.message());
  }
  std::vector<char> get(const std::string &key) override {
    StatusOr<std::vector<char>> v = store_.Get(key, timeout_);
    if (!v.ok())
      throw std::runtime_error(v.status().message());
    return std::move(*v);
  }
  void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &t) override {
    for (const std::string &k : keys) {
      StatusOr<std::vector<char>> v = store_.Get(k, t);
      if (!v.ok())
        throw std::runtime_error(v.status().message());
    }
  }

private:
  kiln::comm::Store &store_;
  std::chrono::milliseconds timeout_;
};

class GlooCommunicator : public Communicator {
public:
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> ctx,
                   std::shared_ptr<gloo::transport::Device> dev, std::chrono::milliseconds timeout)
      : ctx_(std::move(ctx)), dev_(std::move(dev)), timeout_(timeout) {}

  const char *name() const override { return "gloo"; }
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }

  Status AllReduceSum(void *data, int64_t count, DType dtype, void *) override {
    if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16)
      return InvalidArgument(std::string("all_reduce sums f32, f16 or bf16, not ") +
                             DTypeName(dtype));
    if (count <= 0)
      return Guard("all_reduce", [] {}); // still collective: every rank calls it
    float *sum = static_cast<float *>(data);
    if (dtype != DType::kF32) {
      widened_.resize(static_cast<size_t>(count));
      const auto *h = static_cast<const uint16_t *>(data);
      for (int64_t i = 0; i < count; ++i)
        widened_[i] =
            dtype == DType::kF16 ? kernels::HalfToFloat(h[i]) : kernels::BFloat16ToFloat(h[i]);
      sum = widened_.data();
    }
    KILN_RETURN_IF_ERROR(Guard("all_reduce", [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setOutput(sum, static_cast<size_t>(count));
      opts.setReduceFunction(
          static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    }));
    if (dtype != DType::kF32) {
      auto *h = static_cast<uint16_t *>(data);
      for (int64_t i = 0; i < count; ++i)
        h[i] =
            dtype == DType::kF16 ? kernels::FloatToHalf(sum[i]) : kernels::FloatToBFloat16(sum[i]);
    }
    return Status::Ok();
  }

  Status AllGather(const void *in, void *out, const std::vector<int64_t> &counts, DType dtype,
                   void *) override {
    if (static_cast<int>(counts.size()) != size())
      return InvalidArgument("all_gather: " + std::to_string(counts.size()) + " counts for " +
                             std::to_string(size()) + " ranks");
    // Bytes, so any dtype gathers; gloo wants a non-null buffer even when
    // this rank sends nothing.
    const uint64_t elem = DTypeSize(dtype);
    std::vector<size_t> bytes;
    for (int64_t c : counts) {
      if (c < 0)
        return InvalidArgument("all_gather: a negative count");
      bytes.push_back(static_cast<size_t>(c) * elem);
    }
    static char empty = 0;
    return Guard("all_gather", [&] {
      gloo::AllgathervOptions opts(ctx_);
      void *src = bytes[rank()] ? const_cast<void *>(in) : &empty;
      opts.setInput(static_cast<char *>(src), bytes[rank()]);
      opts.setOutput(static_cast<char *>(out ? out : &empty), bytes);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::allgatherv(opts);
    });
  }

  Status Broadcast(void *data, uint64_t bytes, int root,
                   std::chrono::milliseconds timeout) override {
    if (root < 0 || root >= size())
      return InvalidArgument("broadcast: root " + std::to_string(root) + " is not a rank");
    if (bytes == 0)
      return Status::Ok();
    return Guard("broadcast", [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(static_cast<char *>(data), static_cast<size_t>(bytes));
      opts.setRoot(root);
      opts.setTag(NextTag());
      opts.setTimeout(timeout.count() > 0 ? timeout : timeout_);
      gloo::broadcast(opts);
    });
  }

  Status Barrier() override {
    return Guard("barrier", [&] {
      gloo::BarrierOptions opts(ctx_);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  void Abort() override {
    aborted_ = true;
    try {
      ctx_->closeConnections();
    } catch (...) {
    }
  }

private:
  uint32_t NextTag() { return tag_++; }

  template <typename Fn> Status Guard(const char *what, Fn &&fn) {
    if (aborted_)
      return Internal(std::string("tensor parallel: ") + what +
                      " after the communicator was aborted (an earlier collective failed)");
    try {
      fn();
      return Status::Ok();
    } catch (const std::exception &e) {
      aborted_ = true;
      return Internal("tensor parallel: rank " + std::to_string(rank()) + "'s " + what +
                      " failed (a peer rank exited or stalled past the " +
                      std::to_string(timeout_.count()) + " ms timeout): " + e.what());
    }
  }

  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  std::shared_ptr<gloo::transport::Device> dev_;
  std::chrono::milliseconds timeout_;
  std::vector<float> widened_;
  uint32_t tag_ = 1;
  bool aborted_ = false;
};

} // namespace

StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const RendezvousConfig &config) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size)
    return InvalidArgument("rank " + std::to_string(config.rank) + " of world size " +
                           std::to_string(config.world_size));
  if (config.store_dir.empty())
    return InvalidArgument("the gloo communicator needs a rendezvous directory or address");
  // gloo's TCP pairs write to peers with plain writes: a peer that died
  // would raise SIGPIPE and kill this rank silently, instead of the write
  // failing and this rank reporting it.
  std::signal(SIGPIPE, SIG_IGN);
  auto files = OpenStore(config.store_dir, config.rank, config.timeout);
  if (!files.ok())
    return files.status().WithContext("tensor parallel: rank " + std::to_string(config.rank));
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = config.host;
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(config.rank, config.world_size);
    ctx->setTimeout(config.timeout);
    StoreAdapter store(**files, config.timeout);
    ctx->connectFullMesh(store, dev);
    return std::unique_ptr<Communicator>(new GlooCommunicator(ctx, dev, config.timeout));
  } catch (const std::exception &e) {
    return Internal("tensor parallel: rank " + std::to_string(config.rank) + " of " +
                    std::to_string(config.world_size) + " could not connect to its peers through " +
                    config.store_dir + " within " + std::to_string(config.timeout.count()) +
                    " ms: " + e.what());
  }
}

} // namespace kiln::comm
