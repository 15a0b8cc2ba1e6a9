// The CUDA backend's kernels are registered by the files of their family
// (core/ops.def), and its table holds no op outside the list but the
// engine's own kernels. Needs no GPU: building the table touches no device.
#include "backends/cuda/cuda_kernels.h"
#include "backends/registry.h"
#include "core/op_list.h"

#include <gtest/gtest.h>

namespace kiln::cuda {
namespace {

TEST(CudaOpFamilies, EveryKernelIsWhereItsFamilySays) {
  size_t plan_ops = 0;
  for (const KernelFamily &f : CudaKernelFamilies()) {
    std::vector<KernelDef> added;
    f.add(added);
    EXPECT_FALSE(added.empty()) << OpFamilyName(f.family);
    for (const KernelDef &k : added) {
      const OpInfo *op = FindOp(k.type);
      ASSERT_NE(op, nullptr) << "a CUDA kernel for an unlisted op: " << k.type;
      EXPECT_EQ(op->family, f.family)
          << "the CUDA kernel of '" << k.type << "' is registered by the "
          << OpFamilyName(f.family) << " family's files; core/ops.def says "
          << OpFamilyName(op->family);
    }
    plan_ops += added.size();
  }
  const KernelTable *table = BackendKernels("cuda");
  ASSERT_NE(table, nullptr);
  size_t engine = 0;
  for (const std::string &type : table->Types())
    engine += IsEngineKernel(type) ? 1 : 0;
  EXPECT_EQ(engine, 1u) << "kiln.sample";
  EXPECT_EQ(plan_ops + engine, table->Types().size());
}

} // namespace
} // namespace kiln::cuda
