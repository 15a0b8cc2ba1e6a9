// The op oracle (docs/testing.md#op-oracle): every case on every built
// backend, named backend_case (cpu_rms_norm_f32_37x129). The reference
// backend is checked against the plain references, every other backend
// against the reference backend, on three seeds each.
#include "backends/registry.h"
#include "core/shape_table.h"
#include "oracle.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln::oracle {
namespace {

constexpr uint32_t kSeeds[] = {1, 2, 3};

struct Param {
  std::string backend;
  const OpCase *c;
};

// Every (backend, case) whose op the backend's kernel table has: an op a
// backend lacks makes plans using it unrunnable there (refused at load), so
// there is nothing to check.
std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (const std::string &name : BackendNames()) {
    const KernelTable *kernels = BackendKernels(name);
    for (const OpCase &c : AllCases())
      if (kernels && kernels->Find(c.op))
        params.push_back({name, &c});
  }
  return params;
}

class OpOracle : public testing::TestWithParam<Param> {};

TEST_P(OpOracle, MatchesReference) {
  const Param &p = GetParam();
  std::string error;
  Backend *backend = SharedBackend(p.backend, &error);
  if (!backend) // a device backend built on a machine without its device
    GTEST_SKIP() << "backend " << p.backend << " cannot run here: " << error;
  Backend *reference = nullptr;
  if (p.backend != kReferenceBackend) {
    reference = SharedBackend(kReferenceBackend, &error);
    ASSERT_NE(reference, nullptr) << error;
  }
  for (uint32_t seed : kSeeds) {
    const std::string report = CheckCase(*backend, backend->kernels(), *p.c, seed, reference);
    EXPECT_TRUE(report.empty()) << report;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, OpOracle, testing::ValuesIn(AllParams()),
                         [](const testing::TestParamInfo<Param> &info) {
                           return info.param.backend + "_" + info.param.c->name;
                         });

// A new op in the CPU table fails here until it has a case (and the oracle
// a reference), so no kernel lands without its oracle test.
TEST(OpOracleCoverage, EveryCpuKernelHasACaseAndAReference) {
  const KernelTable *cpu = BackendKernels(kReferenceBackend);
  ASSERT_NE(cpu, nullptr);
  std::set<std::string> with_case;
  for (const OpCase &c : AllCases())
    with_case.insert(c.op);
  // The collectives need several ranks; kiln_comm_tests checks them against
  // plain sums and concatenations across real processes (comm_test.cpp).
  const std::set<std::string> across_ranks = {"all_reduce", "all_gather"};
  for (const std::string &type : cpu->Types()) {
    if (across_ranks.count(type))
      continue;
    EXPECT_TRUE(with_case.count(type)) << "op '" << type << "' has no oracle case (cases_*.cpp)";
    EXPECT_NE(FindReference(type), nullptr) << "op '" << type << "' has no plain reference";
  }
}

TEST(OpOracleCoverage, CasesAreWellFormed) {
  std::set<std::string> names;
  for (const OpCase &c : AllCases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
    EXPECT_EQ(c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"),
              std::string::npos)
        << c.name;
    EXPECT_NE(FindShapeRule(c.op), nullptr) << c.name << ": no shape rule for " << c.op;
  }
}

// A half plan's moe reaches the device with its activations seen as f32 by
// the shape rule but its weights in their own dtype: the rule takes that
// (the kernel checks the weights match x) and still refuses a non-float x.
TEST(ShapeRules, MoeTakesHalfWeightsAndRefusesIntegerRows) {
  const ShapeRule *rule = FindShapeRule("moe");
  ASSERT_NE(rule, nullptr);
  const OpAttrs attrs = Attrs().Int("top_k", 2).Int("normalize", 1).String("activation", "silu");
  TensorView x{DType::kF32, {3, 8}}, wr{DType::kBF16, {8, 4}}, wgu{DType::kBF16, {4, 8, 6}},
      wd{DType::kBF16, {4, 3, 8}};
  Outputs out(1);
  ASSERT_TRUE(rule->infer(attrs, {&x, &wr, &wgu, &wd}, out).ok());
  EXPECT_EQ(out[0].shape, (Shape{3, 8}));
  TensorView ix{DType::kI32, {3, 8}};
  const Status bad = rule->infer(attrs, {&ix, &wr, &wgu, &wd}, out);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("operand 'x' must be f32"), std::string::npos) << bad.message();
}

} // namespace
} // namespace kiln::oracle
