// The backends the runtime tests run on: "cpu" always, and the device under
// test, named by KILN_TEST_DEVICE (default "cuda"; "cuda:1" picks a GPU).
// Tests are instantiated for two roles whose names are fixed at compile time
// (test discovery runs without the environment): "cpu", and "gpu" for the
// device under test. ctest labels the "gpu" instances `gpu`.
//
// With KILN_TEST_DEVICE unset, a device this runtime was built without, or
// one it cannot open (no GPU visible), makes the "gpu" instances skip,
// saying why. With it set (tools/gpu/test_gpu.sh sets it), the device must
// open: a backend that fails to start fails its tests instead of passing as
// skipped.
#pragma once

#include "backends/registry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace kiln::test {

inline constexpr const char *kCpuRole = "cpu";
inline constexpr const char *kGpuRole = "gpu";

// KILN_TEST_DEVICE, or "cuda".
inline std::string DeviceUnderTest() {
  const char *env = std::getenv("KILN_TEST_DEVICE");
  return env && *env ? env : "cuda";
}

// Whether KILN_TEST_DEVICE asks for the device, so a missing one fails.
inline bool DeviceRequired() {
  const char *env = std::getenv("KILN_TEST_DEVICE");
  return env && *env;
}

// The backend name a role runs on.
inline std::string BackendOfRole(const std::string &role) {
  return role == kGpuRole ? DeviceUnderTest() : role;
}

// Why backend `name` cannot run here, or "" when it can. The answer is
// cached per name: opening a device is not free.
inline std::string WhyBackendCannotRun(const std::string &name) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(name);
  if (it != cache.end())
    return it->second;
  std::string why;
  const std::string base = name.substr(0, name.find(':'));
  std::string built;
  bool found = false;
  for (const std::string &n : BackendNames()) {
    built += (built.empty() ? "" : ", ") + n;
    found = found || n == base;
  }
  if (!found) {
    why = "this runtime was built without the '" + base + "' backend (built: " + built + ")";
  } else {
    auto backend = CreateBackend(name);
    if (!backend.ok())
      why = "backend '" + name + "' cannot run here: " + backend.status().message();
  }
  cache[name] = why;
  return why;
}

// A test parameter: the role that runs it and the plan (a name from
// KILN_TEST_PLANS). Instances are named role_plan (gpu_llama).
struct RoleAndPlan {
  std::string role, plan;
};
inline std::ostream &operator<<(std::ostream &os, const RoleAndPlan &p) {
  return os << p.role << "/" << p.plan;
}
inline std::vector<RoleAndPlan> EveryRoleAndPlan(const std::vector<std::string> &roles,
                                                 const std::vector<std::string> &plans) {
  std::vector<RoleAndPlan> out;
  for (const std::string &role : roles)
    for (const std::string &plan : plans)
      out.push_back({role, plan});
  return out;
}
inline std::string RoleAndPlanName(const testing::TestParamInfo<RoleAndPlan> &info) {
  return info.param.role + "_" + info.param.plan;
}

} // namespace kiln::test

// Skips the test (GTEST_SKIP, with the reason) when the backend of `role`
// cannot run here, or fails it when KILN_TEST_DEVICE asked for that device.
// Use at the top of a test body.
#define KILN_SKIP_UNLESS_ROLE_RUNS(role)                                                           \
  do {                                                                                             \
    const std::string kiln_role_ = (role);                                                         \
    const std::string kiln_why_ =                                                                  \
        ::kiln::test::WhyBackendCannotRun(::kiln::test::BackendOfRole(kiln_role_));                \
    if (!kiln_why_.empty()) {                                                                      \
      if (kiln_role_ == ::kiln::test::kGpuRole && ::kiln::test::DeviceRequired())                  \
        FAIL() << kiln_why_ << " (KILN_TEST_DEVICE is set, so the device must run)";               \
      GTEST_SKIP() << kiln_why_;                                                                   \
    }                                                                                              \
  } while (0)
