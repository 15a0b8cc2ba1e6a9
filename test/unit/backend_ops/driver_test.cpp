// The oracle's driver must be able to fail: wrong kernels, put in a
// test-only kernel table in place of the backend's, are caught and reported
// with the op, case, seed and the worst element.
#include "backends/registry.h"
#include "oracle.h"

#include <gtest/gtest.h>

namespace kiln::oracle {
namespace {

const OpCase &FindCase(const std::string &name) {
  for (const OpCase &c : AllCases())
    if (c.name == name)
      return c;
  ADD_FAILURE() << "no case " << name;
  return AllCases().front();
}

Backend &Cpu() {
  std::string error;
  Backend *cpu = SharedBackend(kReferenceBackend, &error);
  EXPECT_NE(cpu, nullptr) << error;
  return *cpu;
}

// The CPU's kernel for `type`, then `corrupt` on its results (host memory).
KernelTable Corrupted(const std::string &type, std::function<void(Outputs &)> corrupt) {
  const KernelDef *real = BackendKernels(kReferenceBackend)->Find(type);
  EXPECT_NE(real, nullptr);
  KernelFn run = [real, corrupt](ExecContext &ctx, const OpAttrs &attrs, const Inputs &in,
                                 Outputs &out) {
    KILN_RETURN_IF_ERROR(real->run(ctx, attrs, in, out));
    corrupt(out);
    return Status::Ok();
  };
  return KernelTable({{real->type, run}});
}

TEST(OpOracleDriver, PassesTheRealKernel) {
  const OpCase &c = FindCase("add_f32_37x129");
  EXPECT_EQ(CheckCase(Cpu(), Cpu().kernels(), c, 1, nullptr), "");
  EXPECT_EQ(CheckCase(Cpu(), Cpu().kernels(), c, 1, &Cpu()), "");
}

TEST(OpOracleDriver, CatchesAnOffByOneAdd) {
  const OpCase &c = FindCase("add_f32_37x129");
  const KernelTable bad = Corrupted("add", [](Outputs &out) { out[0].as<float>()[40] += 1; });
  for (Backend *reference : {static_cast<Backend *>(nullptr), &Cpu()}) {
    const std::string report = CheckCase(Cpu(), bad, c, 7, reference);
    EXPECT_NE(report.find("op add, case add_f32_37x129, backend cpu, seed 7"), std::string::npos)
        << report;
    EXPECT_NE(report.find("at element 40 [0, 40]"), std::string::npos) << report;
    EXPECT_NE(report.find("f32[37, 129], f32[37, 129]"), std::string::npos) << report;
  }
}

// One element off by 1e-3 of the tensor's scale: the mean error (nmse) stays
// small over 4773 elements, the worst-element bound still fails it.
TEST(OpOracleDriver, CatchesOneSlightlyWrongElementInALargeTensor) {
  const OpCase &c = FindCase("rms_norm_f32_37x129");
  const KernelTable bad = Corrupted("rms_norm", [](Outputs &out) {
    float *y = out[0].as<float>();
    y[out[0].numel() - 1] += 2e-3f;
  });
  const std::string report = CheckCase(Cpu(), bad, c, 1, nullptr);
  EXPECT_NE(report.find("at element 4772 [36, 128]"), std::string::npos) << report;
}

TEST(OpOracleDriver, CatchesAKernelThatWritesNothing) {
  const OpCase &c = FindCase("transpose_f32_7x13x37_perm_2_0_1");
  auto nothing = [](ExecContext &, const OpAttrs &, const Inputs &, Outputs &) {
    return Status::Ok();
  };
  const KernelTable bad({{"transpose", nothing}});
  const std::string report = CheckCase(Cpu(), bad, c, 1, nullptr);
  EXPECT_NE(report.find("got nan, want "), std::string::npos) << report;
}

TEST(OpOracleDriver, CatchesACacheUpdateThatIsLost) {
  // The kernel writes its caches into copies, as a half-precision widening
  // would: the result may still be right, the in-place operands are not.
  const OpCase &c = FindCase("paged_attention_f32_1x6x21x16_mixed_gqa");
  const KernelDef *real = BackendKernels(kReferenceBackend)->Find("paged_attention");
  ASSERT_NE(real, nullptr);
  auto lost = [real](ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
    std::vector<std::vector<uint8_t>> copies;
    std::vector<TensorView> views;
    views.reserve(in.size());
    Inputs moved = in;
    for (int i : {3, 4}) {
      const uint8_t *p = static_cast<const uint8_t *>(in[i]->data);
      copies.emplace_back(p, p + in[i]->bytes());
      views.push_back(*in[i]);
      views.back().data = copies.back().data();
      moved[i] = &views.back();
    }
    return real->run(ctx, attrs, moved, out);
  };
  const KernelTable bad({{"paged_attention", lost}});
  const std::string report = CheckCase(Cpu(), bad, c, 1, nullptr);
  EXPECT_NE(report.find("in-place operand 3"), std::string::npos) << report;
  EXPECT_NE(report.find("in-place operand 4"), std::string::npos) << report;
}

TEST(OpOracleDriver, ReportsABackendWithoutTheKernel) {
  const OpCase &c = FindCase("add_f32_37x129");
  const KernelTable empty({});
  const std::string report = CheckCase(Cpu(), empty, c, 1, nullptr);
  EXPECT_NE(report.find("has no kernel for 'add'"), std::string::npos) << report;
}

} // namespace
} // namespace kiln::oracle
