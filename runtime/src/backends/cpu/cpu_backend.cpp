#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/half_via_f32.h"
#include "backends/cpu/weight_packing.h"
#include "core/shape_table.h"
#include "kernels/cpu/parallel.h"
#include "kiln/plan.h"

#include <cstdlib>
#include <cstring>

namespace kiln::cpu {
namespace {

// Kernels run on the calling thread and use the process-wide pool of
// kernels/cpu/parallel.h for their inner loops; this exposes that pool.
class CpuThreadPool : public ThreadPool {
public:
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn) override {
    kernels::ParallelFor(n, grain, fn);
  }
};

class CpuBackend : public Backend {
public:
  CpuBackend() {
    ctx_.backend = this;
    ctx_.threads = &pool_;
  }
  const char *name() const override { return "cpu"; }
  MemorySpace memory_space() const override { return MemorySpace::kHost; }
  const KernelTable &kernels() const override { return CpuKernels(); }
  ExecContext &context() override { return ctx_; }

  StatusOr<void *> Allocate(uint64_t bytes, uint64_t alignment) override {
    // aligned_alloc wants a multiple of the alignment, and a non-zero size.
    const uint64_t size =
        std::max<uint64_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
    void *p = std::aligned_alloc(alignment, size);
    if (!p)
      return Status(StatusCode::kResourceExhausted,
                    "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    return p;
  }
  void Free(void *ptr) override { std::free(ptr); }

  Status UploadWeights(const Plan &plan, const std::vector<WeightUse> &uses,
                       std::vector<void *> &data, UploadStats &stats) override {
    const auto &tensors = plan.tensors();
    data.assign(tensors.size(), nullptr);
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].kind == TensorKind::kWeight)
        // Kernels take non-const views; weights are only ever operands,
        // never results (the loader checks), so the mapping is never written.
        data[i] = const_cast<void *>(tensors[i].data);
    PackProductWeights(plan, uses, packed_, stats);
    return Status::Ok();
  }

  Status CopyFromHost(void *dst, const void *src, uint64_t bytes) override {
    if (dst != src && bytes > 0)
      std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyToHost(void *dst, const void *src, uint64_t bytes) override {
    return CopyFromHost(dst, src, bytes);
  }
  Status Synchronize() override { return Status::Ok(); }

private:
  CpuThreadPool pool_;
  ExecContext ctx_;
  // Packed copies of product weights, held while the backend lives.
  std::vector<std::shared_ptr<const kernels::PackedMatrix>> packed_;
};

// Every family's kernels, with f16/bf16 operands widened to f32 where the
// kernels compute in f32 (the shape table gives those ops half results).
KernelTable BuildTable() {
  std::vector<KernelDef> defs;
  for (const KernelFamily &f : CpuKernelFamilies())
    f.add(defs);
  for (KernelDef &d : defs)
    if (ComputesInF32ForHalf(d.type))
      d.run = WithHalfViaF32(std::move(d.run), HalfProductOperands(d.type));
  return KernelTable(std::move(defs));
}

} // namespace

const std::vector<KernelFamily> &CpuKernelFamilies() {
  static const std::vector<KernelFamily> families = {
      {OpFamily::kPointwise, AddPointwiseKernels},
      {OpFamily::kPointwise, AddPointwiseBinaryKernels},
      {OpFamily::kMovement, AddMovementKernels},
      {OpFamily::kMovement, AddMovementShapeOpKernels},
      {OpFamily::kGather, AddGatherKernels},
      {OpFamily::kReduce, AddReduceKernels},
      {OpFamily::kNorm, AddNormKernels},
      {OpFamily::kNorm, AddNormFusedKernels},
      {OpFamily::kProducts, AddProductsKernels},
      {OpFamily::kProducts, AddProductsMlpKernels},
      {OpFamily::kProducts, AddProductsQ8Kernels},
      {OpFamily::kAttention, AddAttentionKernels},
      {OpFamily::kAttention, AddAttentionPagedKernels},
      {OpFamily::kCollective, AddCollectiveKernels},
  };
  return families;
}

const KernelTable &CpuKernels() {
  static const KernelTable table = BuildTable();
  return table;
}

std::unique_ptr<Backend> CreateCpuBackend() { return std::make_unique<CpuBackend>(); }

} // namespace kiln::cpu

namespace kiln {


} // namespace kiln
