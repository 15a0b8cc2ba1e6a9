// Out-of-range indices on every built backend: a gather, gather_nd or
// scatter_nd that meets one fails with InvalidArgument, either at the op
// (the CPU; any backend whose index operand is a host tensor) or by the
// backend's next Synchronize (a device that checks indices where its kernels
// read them, backends/cuda/index_errors.h), and the failure does not leak
// into the next run.
#include "backends/registry.h"
#include "oracle.h"

#include <gtest/gtest.h>

#include <iostream>

namespace kiln::oracle {
namespace {

struct BadCase {
  OpCase c;
  std::string message; // part of the error
};

std::vector<BadCase> BadCases() {
  const DType F32 = DType::kF32, I32 = DType::kI32, I64 = DType::kI64;
  std::vector<BadCase> cases;
  cases.push_back({MakeCase("gather", F32, {129, 37}, "past_end", Attrs().Int("axis", 0),
                            {Uniform(F32, {129, 37}), Fixed(I64, {3}, {0, 129, 5})}, kExact),
                   "index 129"});
  cases.push_back({MakeCase("gather", F32, {7, 37, 13}, "before_start_i32", Attrs().Int("axis", 1),
                            {Uniform(F32, {7, 37, 13}), Fixed(I32, {2}, {-38, 4})}, kExact),
                   "index -38"});
  cases.push_back({MakeCase("gather_nd", F32, {7, 13}, "second_dim", {},
                            {Uniform(F32, {7, 13}), Fixed(I64, {2, 2}, {1, 2, 3, 13})}, kExact),
                   "index 13"});
  cases.push_back(
      {MakeCase("scatter_nd", F32, {13, 7}, "row", {},
                {Uniform(F32, {13, 7}), Fixed(I64, {2, 1}, {2, -14}), Uniform(F32, {2, 7})},
                kExact),
       "index -14"});
  return cases;
}

// The case's status on `backend`: the op's, else the synchronize's that
// RunOnBackend ends with.
Status RunStatus(Backend &backend, const OpCase &c) {
  return RunOnBackend(backend, backend.kernels(), c, MakeInputs(c, 1)).status();
}

TEST(BadIndex, FailsOnEveryBackendAndDoesNotLeak) {
  for (const std::string &name : BackendNames()) {
    std::string error;
    Backend *backend = SharedBackend(name, &error);
    if (!backend) {
      std::cout << "backend " << name << " skipped: it cannot run here: " << error << "\n";
      continue;
    }
    for (BadCase &bad : BadCases()) {
      if (!backend->kernels().Find(bad.c.op))
        continue;
      for (bool host_indices : {false, true}) {
        bad.c.host_inputs = host_indices ? std::vector<int>{1} : std::vector<int>{};
        const std::string where =
            name + ", " + bad.c.name + (host_indices ? ", host indices" : ", device indices");
        const Status st = RunStatus(*backend, bad.c);
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << where << ": " << st.message();
        EXPECT_NE(st.message().find(bad.message), std::string::npos)
            << where << ": " << st.message();
        EXPECT_NE(st.message().find("out of range"), std::string::npos)
            << where << ": " << st.message();
        // The op's first oracle case then runs clean.
        Backend *reference =
            name == kReferenceBackend ? nullptr : SharedBackend(kReferenceBackend, &error);
        for (const OpCase &good : AllCases())
          if (good.op == bad.c.op) {
            EXPECT_EQ(CheckCase(*backend, backend->kernels(), good, 1, reference), "")
                << "after " << where;
            break;
          }
      }
    }
  }
}

} // namespace
} // namespace kiln::oracle
