// The op list (core/ops.def, generated from the dialect's .td files) against
// the runtime's tables: every op a plan can hold has a shape rule and a CPU
// kernel (the CPU is the reference backend and runs everything), and no
// table holds an op outside the list. A failure names the op.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/registry.h"
#include "core/op_list.h"
#include "core/shape_table.h"
#include "core/shapes/shape_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kiln {
namespace {

std::vector<std::string> ListedNames() {
  std::vector<std::string> names;
  for (const OpInfo &op : AllOps())
    names.emplace_back(op.name);
  return names;
}

TEST(OpTable, TheListIsSortedUniqueAndFindable) {
  const std::vector<std::string> names = ListedNames();
  ASSERT_GT(names.size(), 50u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "an op listed twice";
  for (const OpInfo &op : AllOps()) {
    const OpInfo *found = FindOp(op.name);
    ASSERT_NE(found, nullptr) << op.name;
    EXPECT_EQ(found->id, op.id) << op.name;
    EXPECT_EQ(GetOp(op.id).name, op.name);
    EXPECT_NE(OpFamilyName(op.family), "?") << op.name;
  }
  for (const char *unknown : {"conv", "", "MatMul", "constant", "kiln.add"})
    EXPECT_EQ(FindOp(unknown), nullptr) << unknown; // plan types are snake case, no prefix
  EXPECT_EQ(FindOp("matmul")->family, OpFamily::kProducts);
  EXPECT_EQ(FindOp("reshape")->half, HalfRule::kNative);
  EXPECT_TRUE(IsEngineKernel("kiln.sample"));
  for (const char *not_engine : {"kiln.", "sample", "add", "kilnsample"})
    EXPECT_FALSE(IsEngineKernel(not_engine)) << not_engine;
}

TEST(OpTable, EveryListedOpHasAShapeRuleAndACpuKernel) {
  for (const OpInfo &op : AllOps()) {
    const ShapeRule *rule = FindShapeRule(op.name);
    EXPECT_NE(rule, nullptr) << "listed op without a shape rule: " << op.name;
    if (rule)
      EXPECT_NE(rule->infer, nullptr) << op.name;
    const KernelDef *kernel = cpu::CpuKernels().Find(op.name);
    EXPECT_NE(kernel, nullptr) << "listed op without a CPU kernel: " << op.name;
    if (kernel)
      EXPECT_NE(kernel->run, nullptr) << op.name;
    EXPECT_EQ(ComputesInF32ForHalf(op.name), op.half == HalfRule::kF32) << op.name;
  }
}

TEST(OpTable, NoTableHoldsAnOpOutsideTheList) {
  for (const std::string &type : ShapeRuleTypes())
    EXPECT_NE(FindOp(type), nullptr) << "a shape rule for an op no plan can hold: " << type;
  EXPECT_EQ(ShapeRuleTypes(), ListedNames());
  for (const std::string &backend : BackendNames()) {
    const KernelTable *table = BackendKernels(backend);
    ASSERT_NE(table, nullptr) << backend;
    for (const std::string &type : table->Types())
      EXPECT_TRUE(FindOp(type) != nullptr || IsEngineKernel(type))
          << "backend " << backend << " has a kernel for an op no plan can hold: " << type;
  }
  EXPECT_EQ(cpu::CpuKernels().Types(), ListedNames());
}

// An op's shape rule and CPU kernel are registered by its family's files
// (core/shapes/<family>*.cpp, backends/cpu/ops_<family>*.cpp), as its line
// in core/ops.def says.
TEST(OpTable, EveryRuleAndCpuKernelIsWhereItsFamilySays) {
  auto check = [](const char *what, const char *type, OpFamily family) {
    const OpInfo *op = FindOp(type);
    ASSERT_NE(op, nullptr) << what << " for an unlisted op: " << type;
    EXPECT_EQ(op->family, family) << what << " of '" << type << "' registered by the "
                                  << OpFamilyName(family) << " family's files; core/ops.def says "
                                  << OpFamilyName(op->family);
  };
  size_t rules = 0, kernels = 0;
  for (const ShapeRuleFamily &f : ShapeRuleFamilies()) {
    std::vector<ShapeRule> added;
    f.add(added);
    EXPECT_FALSE(added.empty()) << OpFamilyName(f.family);
    for (const ShapeRule &r : added)
      check("shape rule", r.type, f.family);
    rules += added.size();
  }
  for (const KernelFamily &f : cpu::CpuKernelFamilies()) {
    std::vector<KernelDef> added;
    f.add(added);
    EXPECT_FALSE(added.empty()) << OpFamilyName(f.family);
    for (const KernelDef &k : added)
      check("CPU kernel", k.type, f.family);
    kernels += added.size();
  }
  EXPECT_EQ(rules, AllOps().size());
  EXPECT_EQ(kernels, AllOps().size());
}

} // namespace
} // namespace kiln
