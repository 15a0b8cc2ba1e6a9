// A backend for tests whose memory is "device" memory: host allocations the
// backend tracks and reports as MemorySpace::kDevice. Its kernels are the
// CPU's, wrapped to check that every operand of a kernel is where the seam
// says it must be: device operands inside the backend's own allocations,
// host operands (shape tensors) outside them, results on the device. Weights
// are copied into device memory at upload, so a kernel that read the plan's
// mapping, or an executor that handed a host pointer to a device kernel,
// fails the check. Counts every allocation and copy, so tests can see that
// the executor, the KV cache and the logits readback went through it.
//
// With `capture` set it captures runs as CUDA graphs do: between
// BeginCapture and EndCapture nothing runs; kernels and host-to-device
// copies are recorded with the operand addresses and views they were given,
// and Replay runs the recording again on those addresses (a copy reads its
// host source anew). A wait, a read-back or an allocation while capturing
// fails the capture, as on a GPU.
#pragma once

#include "backends/cpu/cpu_backend.h"
#include "core/backend.h"
#include "kiln/plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace kiln::test {

class SimulatedDevice : public Backend {
public:
  // `drop` names an op type the device's table leaves out.
  explicit SimulatedDevice(std::string drop = "") : table_(BuildTable(drop)) {
    ctx_.backend = this;
  }
  ~SimulatedDevice() override {
    for (auto &[p, bytes] : live_)
      std::free(p);
  }

  const char *name() const override { return "simulated"; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const KernelTable &kernels() const override { return table_; }
  ExecContext &context() override { return ctx_; }

  StatusOr<void *> Allocate(uint64_t bytes, uint64_t alignment) override {
    if (capturing_)
      return Fail("Allocate");
    if (bytes > limit_)
      return Status(StatusCode::kResourceExhausted, "simulated device: out of memory");
    const uint64_t size =
        std::max<uint64_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
    void *p = std::aligned_alloc(alignment, size);
    if (!p)
      return Status(StatusCode::kResourceExhausted, "simulated device: out of host memory");
    live_[p] = size;
    ++allocations;
    return p;
  }
  void Free(void *p) override {
    if (live_.erase(p))
      std::free(p);
    else
      errors += "Free of a pointer the device never allocated; ";
  }

  Status UploadWeights(const Plan &plan, const std::vector<WeightUse> &, std::vector<void *> &data,
                       UploadStats &stats) override {
    const auto &tensors = plan.tensors();
    data.assign(tensors.size(), nullptr);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].kind != TensorKind::kWeight)
        continue;
      KILN_ASSIGN_OR_RETURN(void *p, Allocate(tensors[i].size, 64));
      KILN_RETURN_IF_ERROR(CopyFromHost(p, tensors[i].data, tensors[i].size));
      data[i] = p;
      stats.device_bytes += tensors[i].size;
      ++uploaded_weights;
    }
    return Status::Ok();
  }

  Status CopyFromHost(void *dst, const void *src, uint64_t bytes) override {
    if (!OnDevice(dst, bytes))
      errors += "CopyFromHost to memory outside the device; ";
    host_to_device_bytes += bytes;
    if (capturing_) {
      recording_->steps.push_back([dst, src, bytes] {
        if (bytes)
          std::memcpy(dst, src, bytes);
        return Status::Ok();
      });
      return Status::Ok();
    }
    if (bytes)
      std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyToHost(void *dst, const void *src, uint64_t bytes) override {
    if (capturing_)
      return Fail("CopyToHost");
    if (!OnDevice(src, bytes))
      errors += "CopyToHost from memory outside the device; ";
    if (bytes)
      std::memcpy(dst, src, bytes);
    device_to_host_bytes += bytes;
    return Status::Ok();
  }
  Status Synchronize() override {
    if (capturing_)
      return Fail("Synchronize");
    ++synchronizations;
    return Status::Ok();
  }

  struct Recording : CapturedRun {
    std::vector<std::function<Status()>> steps;
  };
  bool CanCapture() const override { return capture; }
  Status BeginCapture() override {
    if (!capture || capturing_)
      return Internal("simulated device: BeginCapture without capture, or twice");
    capturing_ = true;
    capture_failed_ = false;
    recording_ = std::make_unique<Recording>();
    return Status::Ok();
  }
  StatusOr<std::unique_ptr<CapturedRun>> EndCapture() override {
    if (!capturing_)
      return Internal("simulated device: EndCapture without BeginCapture");
    capturing_ = false;
    std::unique_ptr<Recording> run = std::move(recording_);
    if (capture_failed_)
      return Internal("simulated device: the capture was invalidated");
    ++captures;
    return std::unique_ptr<CapturedRun>(std::move(run));
  }
  Status Replay(const CapturedRun &run) override {
    const auto *recording = dynamic_cast<const Recording *>(&run);
    if (recording == nullptr || capturing_)
      return Internal("simulated device: Replay of another backend's run, or while capturing");
    for (const auto &step : recording->steps)
      KILN_RETURN_IF_ERROR(step());
    ++replays;
    return Status::Ok();
  }
  // With total_memory set: free is what the live allocations leave of it.
  StatusOr<DeviceMemoryInfo> MemoryInfo() override {
    if (total_memory == 0)
      return Backend::MemoryInfo();
    DeviceMemoryInfo info;
    info.total_bytes = total_memory;
    info.free_bytes = total_memory - std::min(total_memory, live_bytes());
    return info;
  }
  uint64_t live_bytes() const {
    uint64_t sum = 0;
    for (auto &[p, bytes] : live_)
      sum += bytes;
    return sum;
  }

  // Whether [p, p + bytes) lies inside one live allocation.
  bool OnDevice(const void *p, uint64_t bytes) const {
    auto it = live_.upper_bound(const_cast<void *>(p));
    if (it == live_.begin())
      return false;
    --it;
    auto base = static_cast<const char *>(it->first);
    auto q = static_cast<const char *>(p);
    return q >= base && q + bytes <= base + it->second;
  }

  uint64_t limit_ = UINT64_MAX;
  uint64_t total_memory = 0; // what MemoryInfo reports; 0: it reports nothing
  int allocations = 0, uploaded_weights = 0, synchronizations = 0, kernel_calls = 0;
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;
  std::string errors; // placement violations seen by kernels and copies
  bool capture = false;
  int captures = 0, replays = 0;

private:
  Status Fail(const char *what) {
    capture_failed_ = true;
    return Internal(std::string("simulated device: ") + what + " while capturing");
  }

  void CheckOperand(const std::string &what, const TensorView &v) {
    if (v.data == nullptr || v.bytes() == 0)
      return;
    const bool inside = OnDevice(v.data, v.bytes());
    if (v.space == MemorySpace::kDevice && !inside)
      errors += what + " says device but lies outside the device's memory; ";
    if (v.space == MemorySpace::kHost && inside)
      errors += what + " says host but lies in device memory; ";
  }

  KernelTable BuildTable(const std::string &drop) {
    std::vector<KernelDef> defs;
    for (const std::string &type : cpu::CpuKernels().Types()) {
      if (type == drop)
        continue;
      const KernelDef *cpu = cpu::CpuKernels().Find(type);
      defs.push_back(
          {cpu->type,
           [this, cpu](ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
             ++kernel_calls;
             if (ctx.backend != this)
               errors += std::string(cpu->type) + " ran with another context; ";
             for (size_t i = 0; i < in.size(); ++i)
               if (in[i])
                 CheckOperand(std::string(cpu->type) + " operand " + std::to_string(i), *in[i]);
             for (size_t i = 0; i < out.size(); ++i) {
               if (out[i].space != MemorySpace::kDevice)
                 errors += std::string(cpu->type) + " result not on the device; ";
               CheckOperand(std::string(cpu->type) + " result", out[i]);
             }
             if (capturing_) {
               // The views as they are now; replays run on them.
               auto views = std::make_shared<std::vector<TensorView>>();
               for (const TensorView *t : in)
                 views->push_back(t ? *t : TensorView());
               recording_->steps.push_back(
                   [this, cpu, &ctx, attrs, views, present = in, out]() mutable {
                     Inputs operands;
                     for (size_t i = 0; i < present.size(); ++i)
                       operands.push_back(present[i] ? &(*views)[i] : nullptr);
                     ++kernel_calls;
                     return cpu->run(ctx, attrs, operands, out);
                   });
               return Status::Ok();
             }
             return cpu->run(ctx, attrs, in, out);
           }});
    }
    return KernelTable(std::move(defs));
  }

  KernelTable table_;
  ExecContext ctx_;
  std::map<void *, uint64_t> live_;
  bool capturing_ = false, capture_failed_ = false;
  std::unique_ptr<Recording> recording_;
};

} // namespace kiln::test
