// The oracle's path for a backend other than the reference, run on a fake
// device: memory of its own (kDevice), the CPU's kernels behind a check that
// every operand the driver hands them is in that memory unless the case keeps
// it on the host. Every case must then match the CPU, as a real device
// backend's would.
#include "backends/registry.h"
#include "oracle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>

namespace kiln::oracle {
namespace {

class FakeDevice : public Backend {
public:
  explicit FakeDevice(Backend &cpu) : cpu_(cpu), table_(Wrap(cpu.kernels())) {
    ctx_.backend = this;
  }
  ~FakeDevice() override {
    for (void *p : live_)
      std::free(p);
  }
  const char *name() const override { return "fake_device"; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const KernelTable &kernels() const override { return table_; }
  ExecContext &context() override { return ctx_; }
  StatusOr<void *> Allocate(uint64_t bytes, uint64_t alignment) override {
    const uint64_t size = (bytes / alignment + 1) * alignment;
    void *p = std::aligned_alloc(alignment, size);
    live_.insert(p);
    return p;
  }
  void Free(void *ptr) override {
    live_.erase(ptr);
    std::free(ptr);
  }
  Status UploadWeights(const Plan &, const std::vector<WeightUse> &, std::vector<void *> &,
                       UploadStats &) override {
    return Status(StatusCode::kUnimplemented, "the fake device holds no plans");
  }
  Status CopyFromHost(void *dst, const void *src, uint64_t bytes) override {
    if (!live_.count(dst))
      return Status(StatusCode::kInvalidArgument, "CopyFromHost to memory not on the device");
    if (bytes > 0) // empty tensors may have null host data
      std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyToHost(void *dst, const void *src, uint64_t bytes) override {
    if (!live_.count(const_cast<void *>(src)))
      return Status(StatusCode::kInvalidArgument, "CopyToHost from memory not on the device");
    if (bytes > 0) // empty tensors may have null host data
      std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status Synchronize() override { return Status::Ok(); }

private:
  // An operand must be device memory exactly when its view says kDevice.
  Status CheckPlacement(const std::string &op, const TensorView &t, const char *what) const {
    const bool on_device = live_.count(t.data) != 0;
    if (on_device != (t.space == MemorySpace::kDevice))
      return Status(StatusCode::kInternal, op + ": " + what + " placed wrongly");
    return Status::Ok();
  }

  KernelTable Wrap(const KernelTable &cpu) {
    std::vector<KernelDef> defs;
    for (const std::string &type : cpu.Types()) {
      const KernelDef *real = cpu.Find(type);
      defs.push_back({real->type,
                      [this, real](ExecContext &, const OpAttrs &attrs, const Inputs &in,
                                   Outputs &out) -> Status {
                        for (const TensorView *t : in)
                          if (t && t->numel() > 0)
                            KILN_RETURN_IF_ERROR(CheckPlacement(real->type, *t, "an operand"));
                        for (const TensorView &t : out)
                          KILN_RETURN_IF_ERROR(CheckPlacement(real->type, t, "a result"));
                        return real->run(cpu_.context(), attrs, in, out);
                      }});
    }
    return KernelTable(std::move(defs));
  }

  Backend &cpu_; // whose kernels and context do the work
  std::set<void *> live_;
  ExecContext ctx_;
  KernelTable table_;
};

TEST(OpOracleDriver, EveryCaseOnAFakeDeviceMatchesTheCpu) {
  std::string error;
  Backend *cpu = SharedBackend(kReferenceBackend, &error);
  ASSERT_NE(cpu, nullptr) << error;
  FakeDevice device(*cpu);
  for (const OpCase &c : AllCases())
    EXPECT_EQ(CheckCase(device, device.kernels(), c, 1, cpu), "");
}

} // namespace
} // namespace kiln::oracle
