// The lazily opened libraries (runtime/src/core/lazy_library.h):
// LazyLibrary on a system library, its errors, and the real cuBLASLt and
// NCCL that this build found. No GPU needed.
#include "backends/cuda/cublaslt_loader.h"
#include "comm/nccl_loader.h"
#include "core/lazy_library.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

using CosFn = double (*)(double);

// A variable of this test's own, so no real setting is touched.
constexpr const char *kEnv = "KILN_TEST_LAZY_LIBRARY";

TEST(LazyLibrary, OpensBySonameAndResolvesEverySymbol) {
  unsetenv(kEnv);
  void *cos_fn = nullptr, *sin_fn = nullptr;
  LazyLibrary lib("libm", kEnv, "libm.so.6", "", {{"cos", &cos_fn}, {"sin", &sin_fn}});
  ASSERT_TRUE(lib.Load().ok()) << lib.Load().message();
  EXPECT_EQ(lib.path(), "libm.so.6");
  ASSERT_NE(cos_fn, nullptr);
  ASSERT_NE(sin_fn, nullptr);
  EXPECT_DOUBLE_EQ(reinterpret_cast<CosFn>(cos_fn)(0.5), std::cos(0.5));
  EXPECT_TRUE(lib.Loaded());
}

TEST(LazyLibrary, AMissingSymbolIsNotFoundAndNamesIt) {
  unsetenv(kEnv);
  void *fn = nullptr, *bad = nullptr;
  LazyLibrary lib("libm", kEnv, "libm.so.6", "", {{"cos", &fn}, {"kiln_no_such_function", &bad}});
  const Status &st = lib.Load();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("kiln_no_such_function"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("libm.so.6"), std::string::npos) << st.message();
  EXPECT_EQ(bad, nullptr);
  EXPECT_TRUE(lib.path().empty());
  EXPECT_FALSE(lib.Loaded());
}

TEST(LazyLibrary, AMissingLibraryNamesWhereItLookedAndTheVariable) {
  unsetenv(kEnv);
  void *fn = nullptr;
  LazyLibrary lib("Nothing", kEnv, "libkiln_not_a_library.so.9", "/kiln/no/such/dir", {{"f", &fn}});
  const Status &st = lib.Load();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  for (const char *part :
       {"Nothing could not be loaded", "libkiln_not_a_library.so.9", "/kiln/no/such/dir", kEnv})
    EXPECT_NE(st.message().find(part), std::string::npos) << part << " in " << st.message();
  // Kept: a second Load does not try again and says the same.
  EXPECT_EQ(&lib.Load(), &st);
  EXPECT_EQ(fn, nullptr);
}

TEST(LazyLibrary, TheVariableAloneDecidesWhenSet) {
  // libm.so.6 is on the loader's path, but the variable names another file,
  // which is all that is tried.
  setenv(kEnv, "/kiln/no/such/libm.so.6", 1);
  void *fn = nullptr;
  LazyLibrary lib("libm", kEnv, "libm.so.6", "", {{"cos", &fn}});
  const Status &st = lib.Load();
  unsetenv(kEnv);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(std::string(kEnv) + " names /kiln/no/such/libm.so.6"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(fn, nullptr);
}

TEST(LazyLibrary, FallsBackToTheBuildsFolder) {
  // A copy of libm under a name the loader cannot find by itself, found in
  // the fallback folder.
  unsetenv(kEnv);
  void *probe = nullptr;
  LazyLibrary libm("libm", kEnv, "libm.so.6", "", {{"cos", &probe}});
  ASSERT_TRUE(libm.Load().ok());
  Dl_info info{};
  ASSERT_NE(dladdr(probe, &info), 0);
  const fs::path dir = fs::temp_directory_path() / ("kiln_lazy_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(info.dli_fname, dir / "libkiln_lazy_copy.so.1",
                fs::copy_options::overwrite_existing);
  void *fn = nullptr;
  LazyLibrary lib("copy", kEnv, "libkiln_lazy_copy.so.1", dir.string(), {{"cos", &fn}});
  const Status &st = lib.Load();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(lib.path(), (dir / "libkiln_lazy_copy.so.1").string());
  ASSERT_NE(fn, nullptr);
  EXPECT_DOUBLE_EQ(reinterpret_cast<CosFn>(fn)(1.0), std::cos(1.0));
  fs::remove_all(dir);
}

// The libraries this build was configured with open, and have every function
// the runtime calls (an older library would fail here, not on a GPU).
TEST(CudaLibraries, CublasLtOpensWithEveryFunction) {
  const Status &st = LoadCublasLt();
  EXPECT_TRUE(st.ok()) << st.message();
}

#ifdef KILN_TEST_HAVE_NCCL
TEST(CudaLibraries, NcclOpensWithEveryFunction) {
  const Status &st = LoadNccl();
  EXPECT_TRUE(st.ok()) << st.message();
}
#endif

} // namespace
} // namespace kiln::cuda
