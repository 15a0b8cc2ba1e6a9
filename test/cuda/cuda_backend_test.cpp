// The CUDA backend itself, on a real device: memory and copies, the weight
// upload (staged through pinned buffers, tied weights shared), the op
// scratch, memory queries. Every test skips, saying why, where no CUDA
// device is visible; the ones that need none run everywhere.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_util.h"
#include "backends/registry.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "test_models.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

namespace kiln {
namespace {

using test::TempPath;

#define KILN_SKIP_WITHOUT_GPU()                                                                    \
  do {                                                                                             \
    if (cuda::CudaDeviceCount() == 0)                                                              \
      GTEST_SKIP() << "no CUDA device visible (the GPU tests run with `make test-gpu`)";           \
  } while (0)

std::unique_ptr<Backend> Cuda() {
  auto b = CreateBackend("cuda");
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(*b) : nullptr;
}

TEST(CudaBackend, AllocateAndCopyRoundTrip) {
  KILN_SKIP_WITHOUT_GPU();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  EXPECT_STREQ(cuda->name(), "cuda");
  EXPECT_EQ(cuda->memory_space(), MemorySpace::kDevice);
  for (uint64_t alignment : {64ull, 256ull, 4096ull}) {
    const uint64_t n = (3u << 20) + 13; // odd, several MiB
    std::vector<uint8_t> in(n), out(n, 0);
    for (uint64_t i = 0; i < n; ++i)
      in[i] = static_cast<uint8_t>(i * 131 + 7);
    auto buf = DeviceBuffer::Allocate(*cuda, n, alignment);
    ASSERT_TRUE(buf.ok()) << buf.status().message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % alignment, 0u);
    ASSERT_TRUE(cuda->CopyFromHost(buf->data(), in.data(), n).ok());
    // The host buffer may change at once: the copy took its bytes.
    std::fill(in.begin(), in.begin() + 16, 0);
    Status st = cuda->CopyToHost(out.data(), buf->data(), n);
    ASSERT_TRUE(st.ok()) << st.message();
    for (uint64_t i = 0; i < 16; ++i)
      EXPECT_EQ(out[i], static_cast<uint8_t>(i * 131 + 7)) << i;
    EXPECT_TRUE(std::equal(in.begin() + 16, in.end(), out.begin() + 16));
  }
  EXPECT_TRUE(cuda->Synchronize().ok());
  EXPECT_TRUE(cuda->CopyToHost(nullptr, nullptr, 0).ok());
}

TEST(CudaBackend, TimingMarksMeasureTheStreamInOrder) {
  KILN_SKIP_WITHOUT_GPU();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  // Mark 0, a copy of 256 MiB, mark 1, nothing, mark 2: the copy lies
  // between marks 0 and 1 and takes time; marks never go backwards.
  const uint64_t n = 256ull << 20;
  auto a = DeviceBuffer::Allocate(*cuda, n);
  auto b = DeviceBuffer::Allocate(*cuda, n);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(cuda->Mark(0).ok());
  ASSERT_EQ(cudaMemcpyAsync(b->data(), a->data(), n, cudaMemcpyDeviceToDevice,
                            static_cast<cudaStream_t>(cuda->context().stream)),
            cudaSuccess);
  ASSERT_TRUE(cuda->Mark(1).ok());
  ASSERT_TRUE(cuda->Mark(2).ok());
  auto at = cuda->MarkSeconds(3);
  ASSERT_TRUE(at.ok()) << at.status().message();
  ASSERT_EQ(at->size(), 3u);
  EXPECT_EQ((*at)[0], 0.0);
  EXPECT_GT((*at)[1], 0.0);
  EXPECT_GE((*at)[2], (*at)[1]);
  EXPECT_FALSE(cuda->MarkSeconds(4).ok()); // only 3 were recorded
  EXPECT_FALSE(cuda->Mark(-1).ok());
}

TEST(CudaBackend, ProfiledExecutorTimesOpsOnTheDevice) {
  KILN_SKIP_WITHOUT_GPU();
  test::Mlp m;
  const std::string path = TempPath("cuda_profile.plan");
  ASSERT_EQ(m.Build().Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  auto exec = Executor::Create(**plan, *cuda);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  (*exec)->SetProfiling(true);
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0, 2};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE((*exec)->Bind({TensorView{DType::kF32, {2, 4}, x.data()}}).ok());
    Status st = (*exec)->Run();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::vector<float> y(6);
  ASSERT_TRUE((*exec)->CopyOutputToHost(0, y.data()).ok());
  for (int r = 0; r < 2; ++r) {
    const std::vector<float> want = m.Reference(&x[r * 4]);
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(y[r * 3 + j], want[j], 1e-5f);
  }
  const Executor::Profile p = (*exec)->profile();
  EXPECT_TRUE(p.device_timing);
  EXPECT_EQ(p.runs, 2);
  ASSERT_EQ(p.ops.size(), 3u); // matmul, add, softmax
  for (const Executor::OpTime &t : p.ops) {
    EXPECT_EQ(t.calls, 2) << t.type;
    EXPECT_GE(t.seconds, 0) << t.type;
  }
  EXPECT_NE((*exec)->ProfileTable().find("ops timed on the device"), std::string::npos);
}

TEST(CudaBackend, TooLargeAnAllocationIsResourceExhausted) {
  KILN_SKIP_WITHOUT_GPU();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  auto huge = cuda->Allocate(uint64_t{1} << 52, 256);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted) << huge.status().message();
  // The failure left no error behind for the next call.
  auto small = DeviceBuffer::Allocate(*cuda, 1024);
  EXPECT_TRUE(small.ok()) << small.status().message();
  EXPECT_TRUE(cuda->Synchronize().ok());
}

TEST(CudaBackend, MemoryInfo) {
  KILN_SKIP_WITHOUT_GPU();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  auto before = cuda->MemoryInfo();
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_GT(before->total_bytes, 0u);
  EXPECT_LE(before->free_bytes, before->total_bytes);
  auto buf = DeviceBuffer::Allocate(*cuda, 256ull << 20);
  ASSERT_TRUE(buf.ok());
  auto after = cuda->MemoryInfo();
  ASSERT_TRUE(after.ok());
  EXPECT_LE(after->free_bytes + (255ull << 20), before->free_bytes);
}

// Weights of odd sizes, one larger than all the staging buffers together
// (so buffers are reused), and two weights on the same bytes.
TEST(CudaBackend, UploadWeightsCopiesEveryWeightOnce) {
  KILN_SKIP_WITHOUT_GPU();
  test::TestPlan p;
  std::vector<float> small(13), one(1), big((100u << 20) / 4 + 7);
  std::iota(small.begin(), small.end(), 1.0f);
  one[0] = -2.5f;
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i % 9973) * 0.5f;
  int x = p.Input("x", DType::kF32, {1});
  int a = p.Weight("a", DType::kF32, {13}, small);
  int b = p.Weight("b", DType::kF32, {1}, one);
  int c = p.Weight("c", DType::kF32, {static_cast<int>(big.size())}, big);
  int y = p.Act("y", DType::kF32, {1});
  p.Op("add", {x, b}, {y});
  p.Output(y);
  (void)a;
  (void)c;
  const std::string path = TempPath("cuda_upload.plan");
  ASSERT_EQ(p.Write(path), "");
  auto plan = LoadPlan(path);
  ASSERT_TRUE(plan.ok()) << plan.status().message();

  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  std::vector<void *> data;
  UploadStats stats;
  Status st = cuda->UploadWeights(**plan, {}, data, stats);
  ASSERT_TRUE(st.ok()) << st.message();
  const auto &tensors = (*plan)->tensors();
  ASSERT_EQ(data.size(), tensors.size());
  uint64_t weight_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].kind != TensorKind::kWeight) {
      EXPECT_EQ(data[i], nullptr);
      continue;
    }
    weight_bytes += tensors[i].size;
    ASSERT_NE(data[i], nullptr) << tensors[i].name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data[i]) % 256, 0u) << tensors[i].name;
    std::vector<uint8_t> back(tensors[i].size);
    ASSERT_TRUE(cuda->CopyToHost(back.data(), data[i], back.size()).ok());
    EXPECT_EQ(std::memcmp(back.data(), tensors[i].data, back.size()), 0) << tensors[i].name;
  }
  EXPECT_GE(stats.device_bytes, weight_bytes);
  EXPECT_LT(stats.device_bytes, weight_bytes + 3 * 256);
}

// OpScratch: one buffer, kept while large enough, grown when asked for
// more, and usable on the backend's stream after growing.
TEST(CudaBackend, OpScratchGrows) {
  KILN_SKIP_WITHOUT_GPU();
  auto cuda = Cuda();
  ASSERT_TRUE(cuda);
  ExecContext &ctx = cuda->context();
  ASSERT_NE(ctx.stream, nullptr);
  ASSERT_NE(ctx.blas, nullptr);
  EXPECT_EQ(ctx.workspace.bytes, cuda::kCublasWorkspaceBytes);
  auto first = cuda::OpScratch(ctx, 1000);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_NE(*first, nullptr);
  auto again = cuda::OpScratch(ctx, 10);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  const uint64_t big = (64ull << 20) + 5;
  auto grown = cuda::OpScratch(ctx, big);
  ASSERT_TRUE(grown.ok()) << grown.status().message();
  ASSERT_NE(*grown, nullptr);
  auto *owner = dynamic_cast<cuda::ScratchOwner *>(cuda.get());
  ASSERT_NE(owner, nullptr);
  EXPECT_GE(owner->scratch_bytes(), big);
  // The whole grown buffer is writable on the stream.
  ASSERT_EQ(cudaMemsetAsync(*grown, 0x5a, big, cuda::Stream(ctx)), cudaSuccess);
  uint8_t last = 0;
  ASSERT_TRUE(cuda->CopyToHost(&last, static_cast<uint8_t *>(*grown) + big - 1, 1).ok());
  EXPECT_EQ(last, 0x5a);
  auto smaller = cuda::OpScratch(ctx, big / 2);
  ASSERT_TRUE(smaller.ok());
  EXPECT_EQ(*smaller, *grown);
}

TEST(CudaBackend, OpScratchRefusesAnotherBackendsContext) {
  auto cpu = CreateBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  auto scratch = cuda::OpScratch((*cpu)->context(), 64);
  ASSERT_FALSE(scratch.ok());
  EXPECT_EQ(scratch.status().code(), StatusCode::kInternal);
  EXPECT_NE(scratch.status().message().find("'cpu'"), std::string::npos)
      << scratch.status().message();
}

TEST(CudaBackend, ErrorsNameTheCallAndThePlace) {
  Status st = cuda::CudaError(cudaErrorInvalidValue, "cudaMemcpy(a, b)", "/x/y/file.cpp", 12);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("cudaErrorInvalidValue"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("cudaMemcpy(a, b) at file.cpp:12"), std::string::npos)
      << st.message();
  st = cuda::CublasError(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul", "m.cpp", 3);
  EXPECT_NE(st.message().find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << st.message();
}

} // namespace
} // namespace kiln
