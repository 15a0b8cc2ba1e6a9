// The backends this runtime was built with. A new backend adds its name,
// its kernel table and its factory here (docs/architecture.md).
#include "backends/registry.h"

#include "backends/cpu/cpu_backend.h"
#include "core/executor_impl.h"
#ifdef KILN_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

#include <cerrno>
#include <cstdlib>

namespace kiln {

std::vector<std::string> BackendNames() {
#ifdef KILN_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

StatusOr<DeviceSpec> ParseDevice(std::string_view device) {
  DeviceSpec spec;
  const size_t colon = device.find(':');
  spec.backend = std::string(device.substr(0, colon));
  if (spec.backend.empty())
    return InvalidArgument("device '" + std::string(device) +
                           "' has no backend name (e.g. cpu, cuda, cuda:1)");
  if (colon == std::string_view::npos)
    return spec;
  const std::string index(device.substr(colon + 1));
  char *end = nullptr;
  errno = 0;
  const long v = index.empty() ? -1 : std::strtol(index.c_str(), &end, 10);
  if (index.empty() || *end != '\0' || errno != 0 || v < 0 || v > 1023 ||
      !(index[0] >= '0' && index[0] <= '9'))
    return InvalidArgument("device '" + std::string(device) +
                           "': the index after ':' must be a device number such as 0 or 1");
  if (spec.backend == "cpu")
    return InvalidArgument("device '" + std::string(device) +
                           "': the cpu backend has no device index; use 'cpu'");
  spec.index = static_cast<int>(v);
  return spec;
}

const KernelTable *BackendKernels(std::string_view name) {
  const std::string_view backend = name.substr(0, name.find(':'));
  if (backend == "cpu")
    return &cpu::CpuKernels();
#ifdef KILN_HAVE_CUDA
  if (backend == "cuda")
    return &cuda::CudaKernels();
#endif
  return nullptr;
}

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device) {
  KILN_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDevice(device));
  if (spec.backend == "cpu")
    return cpu::CreateCpuBackend();
#ifdef KILN_HAVE_CUDA
  if (spec.backend == "cuda")
    return cuda::CreateCudaBackend(spec.index);
#endif
  std::string known;
  for (const std::string &n : BackendNames())
    known += (known.empty() ? "" : ", ") + n;
  return Status(StatusCode::kNotFound,
                "unknown backend '" + spec.backend + "'; this runtime was built with: " + known);
}

std::string DefaultDevice() {
#ifdef KILN_HAVE_CUDA
  if (cuda::CudaDeviceCount() > 0)
    return "cuda";
#endif
  return "cpu";
}

Status CheckDeviceName(std::string_view device, std::string_view what) {
  StatusOr<DeviceSpec> spec = ParseDevice(device);
  if (!spec.ok())
    return InvalidArgument(std::string(what) + ": " + spec.status().message());
  std::string known;
  for (const std::string &n : BackendNames()) {
    if (n == spec->backend)
      return Status::Ok();
    known += (known.empty() ? "" : ", ") + n;
  }
  return InvalidArgument(std::string(what) + ": unknown backend '" + spec->backend +
                         "'; this kiln was built with: " + known);
}

namespace {

StatusOr<const KernelTable *> KernelsOf(std::string_view backend) {
  const KernelTable *table = BackendKernels(backend);
  if (table != nullptr)
    return table;
  std::string known;
  for (const std::string &name : BackendNames())
    known += (known.empty() ? "" : ", ") + name;
  return NotFound("unknown backend '" + std::string(backend) + "' (this kiln knows: " + known +
                  ")");
}

} // namespace

StatusOr<std::vector<std::string>> MissingKernels(const Plan &plan, std::string_view backend) {
  KILN_ASSIGN_OR_RETURN(const KernelTable *table, KernelsOf(backend));
  return MissingKernels(plan, *table);
}

Status CheckPlanRunsOn(const Plan &plan, std::string_view backend) {
  KILN_ASSIGN_OR_RETURN(const KernelTable *table, KernelsOf(backend));
  return CheckPlanRunsOn(plan, *table, backend);
}

Device::Device(std::string name, std::unique_ptr<Backend> backend)
    : name_(std::move(name)), backend_(std::move(backend)) {}
Device::~Device() = default;

StatusOr<std::unique_ptr<Device>> Device::Open(std::string_view device) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(device));
  return std::unique_ptr<Device>(new Device(std::string(device), std::move(backend)));
}

// Both Executor::Create live here, beside the factories, because core never
// names a backend: host ops run on the CPU's kernels whatever the backend.
StatusOr<std::unique_ptr<Executor>> Executor::Create(const Plan &plan, Backend &backend) {
  return CreateWithHostKernels(plan, backend, cpu::CpuKernels());
}

// Without a backend the executor owns a CPU backend.
StatusOr<std::unique_ptr<Executor>> Executor::Create(const Plan &plan) {
  std::unique_ptr<Backend> cpu = cpu::CreateCpuBackend();
  Backend &backend = *cpu;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e, Create(plan, backend));
  e->impl_->owned_backend = std::move(cpu);
  return e;
}

} // namespace kiln
