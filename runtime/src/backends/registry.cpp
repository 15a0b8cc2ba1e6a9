// The backends this runtime was built with. A new backend adds its name,
// its kernel table and its factory here (docs/architecture.md).
#include "backends/registry.h"

#include "backends/cpu/cpu_backend.h"
#include "core/executor_impl.h"

namespace kiln {

std::vector<std::string> BackendNames() { return {"cpu"}; }

const KernelTable *BackendKernels(std::string_view name) {
  if (name == "cpu")
    return &cpu::CpuKernels();
  return nullptr;
}

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name) {
  if (name == "cpu")
    return cpu::CreateCpuBackend();
  std::string known;
  for (const std::string &n : BackendNames())
    known += (known.empty() ? "" : ", ") + n;
  return Status(StatusCode::kNotFound, "unknown backend '" + std::string(name) +
                                           "'; this runtime was built with: " + known);
}

// Executor::Create without a backend: the executor owns a CPU backend. It
// lives here, beside the factories, because core never names a backend.
StatusOr<std::unique_ptr<Executor>> Executor::Create(const Plan &plan) {
  std::unique_ptr<Backend> cpu = cpu::CreateCpuBackend();
  Backend &backend = *cpu;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e, Create(plan, backend));
  e->impl_->owned_backend = std::move(cpu);
  return e;
}

} // namespace kiln
