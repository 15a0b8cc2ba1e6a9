// DeviceBuffer, and the check of a plan against a kernel table.
#include "core/backend.h"

#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"

#include <algorithm>
#include <new>
#include <set>
#include <string>

namespace kiln {

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    Reset();
    backend_ = other.backend_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.backend_ = nullptr;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(Backend &backend, uint64_t bytes,
                                              uint64_t alignment) {
  KILN_ASSIGN_OR_RETURN(void *p, backend.Allocate(bytes, alignment));
  DeviceBuffer b;
  b.backend_ = &backend;
  b.data_ = p;
  b.bytes_ = bytes;
  return b;
}

StatusOr<void *> Backend::AllocateHost(uint64_t bytes) {
  void *p = ::operator new (std::max<uint64_t>(bytes, 1), std::align_val_t{64}, std::nothrow);
  if (p == nullptr)
    return Status(StatusCode::kResourceExhausted,
                  "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return p;
}

void Backend::FreeHost(void *ptr) {
  if (ptr != nullptr)
    ::operator delete (ptr, std::align_val_t{64});
}

void DeviceBuffer::Reset() {
  if (backend_ && data_)
    backend_->Free(data_);
  backend_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

std::vector<std::string> MissingKernels(const Plan &plan, const KernelTable &kernels) {
  std::set<std::string> missing;
  const auto &tensors = plan.tensors();
  if (const auto *ops = plan.graph().ops())
    for (const fb::Op *op : *ops) {
      if (!op->type())
        continue;
      // Host ops (every output a host tensor) run on the host's kernels
      // during Bind, whatever the backend.
      bool host = op->outputs() && op->outputs()->size() > 0;
      if (op->outputs())
        for (int t : *op->outputs())
          host = host && t >= 0 && t < static_cast<int>(tensors.size()) && tensors[t].host;
      if (!host && !kernels.Find(op->type()->string_view()))
        missing.insert(op->type()->str());
    }
  return {missing.begin(), missing.end()};
}

Status CheckPlanRunsOn(const Plan &plan, const KernelTable &kernels, std::string_view backend) {
  std::vector<std::string> missing = MissingKernels(plan, kernels);
  if (missing.empty())
    return Status::Ok();
  std::string list;
  for (const std::string &m : missing)
    list += (list.empty() ? "'" : ", '") + m + "'";
  return InvalidArgument("the " + std::string(backend) + " backend has no kernel for op type" +
                         (missing.size() > 1 ? "s " : " ") + list +
                         " that this plan uses; build the plan with `kiln build --target " +
                         std::string(backend) +
                         "` to see which layers produce them, or run it "
                         "on another backend");
}

} // namespace kiln
