// The backend seam: the executor runs a plan on a backend with memory of
// its own (test/support/simulated_device.h) exactly as it runs on the CPU,
// with every weight, activation and staged input in that backend's memory,
// host ops on the host, and outputs read back through the backend; a plan
// that uses an op the backend lacks is refused at Create, naming the op.
#include "backends/registry.h"
#include "core/backend.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test/support/simulated_device.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kiln {
namespace {

using test::SimulatedDevice;

std::unique_ptr<Plan> Load(test::TestPlan p, const std::string &name) {
  std::string path = test::TempPath(name);
  EXPECT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

// Runs `plan` on `backend` (the CPU when null) and returns output 0's bytes
// as read back through the executor.
std::vector<float> RunOnce(const Plan &plan, Backend *backend, std::vector<float> &x, Shape shape) {
  auto e = backend ? Executor::Create(plan, *backend) : Executor::Create(plan);
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok())
    return {};
  EXPECT_TRUE((*e)->Bind({TensorView{DType::kF32, shape, x.data()}}).ok());
  Status st = (*e)->Run();
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<float> y((*e)->output(0).numel());
  st = (*e)->CopyOutputToHost(0, y.data());
  EXPECT_TRUE(st.ok()) << st.message();
  return y;
}

TEST(BackendSeam, DeviceRunMatchesCpuWithEveryOperandInDeviceMemory) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_mlp.plan");
  ASSERT_TRUE(plan);
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0, 2, 0.25f, -3, 1, 1};
  SimulatedDevice device;
  std::vector<float> on_device = RunOnce(*plan, &device, x, {3, 4});
  std::vector<float> on_cpu = RunOnce(*plan, nullptr, x, {3, 4});
  ASSERT_EQ(on_device.size(), 9u);
  EXPECT_EQ(on_device, on_cpu);
  EXPECT_EQ(device.errors, "");
  EXPECT_EQ(device.uploaded_weights, 2);                            // W and b
  EXPECT_EQ(device.kernel_calls, 3);                                // matmul, add, softmax
  EXPECT_EQ(device.host_to_device_bytes, (12u + 3u) * 4 + 12u * 4); // W, b, then x staged
  EXPECT_EQ(device.device_to_host_bytes, 9u * 4);
}

TEST(BackendSeam, HostOpsRunOnTheHostAndTheirResultsStayThere) {
  auto plan = Load(test::BuildReshapePlan(), "seam_reshape.plan");
  ASSERT_TRUE(plan);
  std::vector<float> x(2 * 6);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i) - 3.5f;
  SimulatedDevice device;
  std::vector<float> y = RunOnce(*plan, &device, x, {2, 6});
  EXPECT_EQ(y, x); // a reshape keeps the bytes
  EXPECT_EQ(device.errors, "");
  EXPECT_EQ(device.kernel_calls, 1); // only the reshape runs on the device
}

TEST(BackendSeam, ArenaAndInputsGoThroughTheBackendAndGrowWithTheBatch) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_grow.plan");
  ASSERT_TRUE(plan);
  SimulatedDevice device;
  auto e = Executor::Create(*plan, device);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const int weights = device.allocations;
  EXPECT_EQ(weights, 2);
  for (int64_t batch : {1, 64}) {
    std::vector<float> x(batch * 4, 0.5f);
    ASSERT_TRUE((*e)->Bind({TensorView{DType::kF32, {batch, 4}, x.data()}}).ok());
    ASSERT_TRUE((*e)->Run().ok());
    const TensorView &y = (*e)->output(0);
    EXPECT_EQ(y.space, MemorySpace::kDevice);
    EXPECT_TRUE(device.OnDevice(y.data, y.bytes()));
  }
  EXPECT_EQ((*e)->stats().arena_allocations, 2); // the larger batch needed a larger arena
  EXPECT_EQ(device.allocations, weights + 2);
  EXPECT_EQ(device.errors, "");
}

// The arena grows by half again, but when the device cannot hold that (the
// KV cache took most of it), by exactly what the binding needs.
TEST(BackendSeam, ArenaGrowsExactlyWhenHalfAgainDoesNotFit) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_tight.plan");
  ASSERT_TRUE(plan);
  SimulatedDevice device;
  auto e = Executor::Create(*plan, device);
  ASSERT_TRUE(e.ok()) << e.status().message();
  std::vector<float> x(41 * 4, 0.5f);
  ASSERT_TRUE((*e)->Bind({TensorView{DType::kF32, {40, 4}, x.data()}}).ok());
  const uint64_t first = (*e)->stats().arena_capacity;
  device.limit_ = first + first / 4;
  Status st = (*e)->Bind({TensorView{DType::kF32, {41, 4}, x.data()}});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_GT((*e)->stats().arena_bytes, first);
  EXPECT_EQ((*e)->stats().arena_capacity, (*e)->stats().arena_bytes);
  EXPECT_EQ((*e)->stats().arena_allocations, 2);
  ASSERT_TRUE((*e)->Run().ok());
  EXPECT_EQ(device.errors, "");
}

TEST(BackendSeam, InputAlreadyOnTheDeviceIsReadInPlace) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_resident.plan");
  ASSERT_TRUE(plan);
  SimulatedDevice device;
  auto e = Executor::Create(*plan, device);
  ASSERT_TRUE(e.ok());
  std::vector<float> x = {1, 2, 3, 4};
  auto buf = DeviceBuffer::Allocate(device, x.size() * 4);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(device.CopyFromHost(buf->data(), x.data(), 16).ok());
  const uint64_t copied = device.host_to_device_bytes;
  ASSERT_TRUE(
      (*e)->Bind({TensorView{DType::kF32, {1, 4}, buf->data(), MemorySpace::kDevice}}).ok());
  ASSERT_TRUE((*e)->Run().ok());
  EXPECT_EQ(device.host_to_device_bytes, copied); // nothing staged
  std::vector<float> y(3);
  ASSERT_TRUE((*e)->CopyOutputToHost(0, y.data()).ok());
  std::vector<float> want = m.Reference(x.data());
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(y[j], want[j], 1e-6f);
  EXPECT_EQ(device.errors, "");
}

TEST(BackendSeam, DeviceInputOnAHostBackendIsRefused) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_wrong_space.plan");
  ASSERT_TRUE(plan);
  auto e = Executor::Create(*plan);
  ASSERT_TRUE(e.ok());
  std::vector<float> x(4);
  Status st = (*e)->Bind({TensorView{DType::kF32, {1, 4}, x.data(), MemorySpace::kDevice}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("device memory but the cpu backend"), std::string::npos)
      << st.message();
}

TEST(BackendSeam, PlanWithAnOpTheBackendLacksIsRefusedNamingIt) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_missing.plan");
  ASSERT_TRUE(plan);
  SimulatedDevice device("softmax");
  auto e = Executor::Create(*plan, device);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("simulated backend has no kernel for op type 'softmax'"),
            std::string::npos)
      << e.status().message();
  EXPECT_EQ(MissingKernels(*plan, device.kernels()), std::vector<std::string>{"softmax"});
  EXPECT_TRUE(MissingKernels(*plan, *BackendKernels("cpu")).empty());
}

TEST(BackendSeam, HostOpsDoNotCountAsMissingKernels) {
  auto plan = Load(test::BuildReshapePlan(), "seam_host_missing.plan");
  ASSERT_TRUE(plan);
  // gather, unsqueeze, concat and shape run only as host ops here.
  SimulatedDevice device("gather");
  EXPECT_TRUE(MissingKernels(*plan, device.kernels()).empty());
  EXPECT_TRUE(Executor::Create(*plan, device).ok());
}

TEST(BackendSeam, RegistryKnowsTheCpuAndRefusesUnknownNames) {
  EXPECT_EQ(BackendNames().front(), "cpu");
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->memory_space(), MemorySpace::kHost);
  EXPECT_EQ(BackendKernels("nosuch"), nullptr);
  auto bad = CreateBackend("nosuch");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown backend 'nosuch'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("cpu"), std::string::npos);
}

TEST(BackendSeam, AllocationFailureIsAStatusNamingTheArena) {
  test::Mlp m;
  auto plan = Load(m.Build(), "seam_oom.plan");
  ASSERT_TRUE(plan);
  SimulatedDevice device;
  auto e = Executor::Create(*plan, device);
  ASSERT_TRUE(e.ok());
  device.limit_ = 64; // weights are in; no arena fits
  std::vector<float> x(1000 * 4);
  Status st = (*e)->Bind({TensorView{DType::kF32, {1000, 4}, x.data()}});
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("activation arena on the simulated backend"), std::string::npos)
      << st.message();
}

} // namespace
} // namespace kiln
