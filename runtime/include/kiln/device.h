// Where a plan runs: the devices this runtime was built for, how they are
// spelled ("cpu", "cuda", "cuda:N"), and an open device to create executors
// and pipelines on. What `kiln run --device` (alias --backend) takes.
#pragma once

#include "kiln/status.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Backend; // runtime/src/core/backend.h: the kernels and memory of one device
class Plan;    // kiln/plan.h

// The backends this runtime was built with, by name ("cpu" first, then
// "cuda" when built with -DKILN_CUDA).
std::vector<std::string> BackendNames();

// A device spelling split: "cpu" -> {"cpu", 0}, "cuda" -> {"cuda", 0},
// "cuda:1" -> {"cuda", 1}. InvalidArgument for an empty name, a bad index
// ("cuda:", "cuda:x", "cuda:-1") or an index on a backend that has none
// ("cpu:0"); the name itself is not checked against BackendNames().
struct DeviceSpec {
  std::string backend;
  int index = 0;
};
StatusOr<DeviceSpec> ParseDevice(std::string_view device);

// "cuda" when this runtime was built with it and a CUDA device is visible,
// else "cpu": the default of --device.
std::string DefaultDevice();

// `device` checked as a user typed it: its spelling (ParseDevice) and its
// backend against BackendNames(); InvalidArgument naming `what` (e.g.
// "--device") and listing the built backends. Whether device N exists is
// for Device::Open to say.
Status CheckDeviceName(std::string_view device, std::string_view what);

// The op types of `plan` that `backend` ("cpu", "cuda", "cuda:N") has no
// kernel for, sorted, each once, host ops not counted; the backend is not
// created, so a machine without its hardware can check a plan. NotFound
// listing BackendNames() for an unknown or unbuilt backend.
StatusOr<std::vector<std::string>> MissingKernels(const Plan &plan, std::string_view backend);
// InvalidArgument naming the missing op types and the backend, or Ok.
Status CheckPlanRunsOn(const Plan &plan, std::string_view backend);

// One open device: its backend, for Executor::Create(plan, device.backend()).
class Device {
public:
  // NotFound listing BackendNames() for an unknown or unbuilt backend, or
  // the backend's own error when its hardware is missing.
  static StatusOr<std::unique_ptr<Device>> Open(std::string_view device);
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  const std::string &name() const { return name_; }
  Backend &backend() const { return *backend_; }

private:
  Device(std::string name, std::unique_ptr<Backend> backend);
  std::string name_;
  std::unique_ptr<Backend> backend_;
};

} // namespace kiln
