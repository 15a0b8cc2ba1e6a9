// The build driver in-process (compiler/driver/BuildDriver.h) on a real ONNX
// fixture: phases report, --compile-to prints IR instead of writing, a bad
// model is the input's fault, and a failed build leaves no plan behind.
#include "compiler/driver/BuildDriver.h"
#include "compiler/support/BuildError.h"

#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"
#include "passes/Passes.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <fstream>

namespace kiln::compiler {
namespace {

const std::string kFixture = std::string(KILN_SOURCE_DIR) + "/test/fixtures/gpt2-torch/model.onnx";

class BuildDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    registerKilnPasses(); // the driver finds them by name
    registerKilnPipelines();
    if (!llvm::sys::fs::exists(kFixture))
      GTEST_SKIP() << kFixture << " is missing";
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-pipeline", dir));
    tmp = std::string(dir);
  }
  void TearDown() override {
    if (!tmp.empty())
      llvm::sys::fs::remove_directories(tmp);
  }

  // Runs a build; returns "" or the error, with `internal` set for
  // InternalError.
  std::string run(BuildRequest request, bool *internal = nullptr) {
    out.clear();
    log.clear();
    llvm::raw_string_ostream o(out), l(log);
    std::string message;
    llvm::handleAllErrors(
        runBuild(request, o, l),
        [&](const InternalError &e) {
          message = e.message();
          if (internal)
            *internal = true;
        },
        [&](const llvm::ErrorInfoBase &e) { message = e.message(); });
    return message;
  }

  std::string tmp, out, log;
};

TEST_F(BuildDriverTest, BuildsAPlanTheRuntimeLoads) {
  BuildRequest r;
  r.modelPath = kFixture;
  r.outputPath = tmp + "/gpt2.plan";
  r.compilerVersion = "test";
  r.config.max_out_tokens = 77;
  ASSERT_EQ(run(r), "") << log;
  for (const char *phase :
       {"import", "cleanup", "inject", "ragged", "partition", "quantize", "plan"})
    EXPECT_NE(log.find(phase), std::string::npos) << phase << " missing from:\n" << log;
  EXPECT_TRUE(out.empty());
  auto plan = LoadPlan(r.outputPath);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const fb::Plan &f = (*plan)->fb();
  EXPECT_EQ(f.metadata()->architecture()->str(), "gpt2"); // from config.json beside it
  EXPECT_EQ(f.generation()->max_new_tokens(), 77);        // the build config wins
  EXPECT_NE(f.build_config_json()->str().find("\"max_out_tokens\": 77"), std::string::npos);
  EXPECT_GT(f.tokenizer_json()->size(), 0u);
  EXPECT_EQ(f.decoder()->input_ids(), (*plan)->inputs()[0]);
  EXPECT_FALSE(llvm::sys::fs::exists(r.outputPath + ".tmp"));
}

TEST_F(BuildDriverTest, CompileToPrintsIrAndWritesNothing) {
  BuildRequest r;
  r.modelPath = kFixture;
  r.compileTo = Phase::Plan;
  r.quiet = true;
  ASSERT_EQ(run(r), "") << log;
  EXPECT_NE(out.find("func.func @main"), std::string::npos);
  EXPECT_NE(out.find("kiln.memory_plan"), std::string::npos); // the plan phase ran
  EXPECT_NE(out.find("kiln.host"), std::string::npos);
  EXPECT_TRUE(log.empty()) << log; // quiet

  r.compileTo = Phase::Import;
  ASSERT_EQ(run(r), "") << log;
  EXPECT_EQ(out.find("kiln.memory_plan"), std::string::npos); // stopped before it
}

TEST_F(BuildDriverTest, CorruptModelIsBadInputAndLeavesNoPlan) {
  std::string model = tmp + "/model.onnx";
  std::ofstream(model) << "this is not a protobuf";
  BuildRequest r;
  r.modelPath = model;
  r.outputPath = tmp + "/model.plan";
  bool internal = false;
  std::string error = run(r, &internal);
  EXPECT_NE(error.find("cannot import"), std::string::npos) << error;
  EXPECT_FALSE(internal);
  EXPECT_NE(log.find("error: "), std::string::npos) << log; // the importer's diagnostic
  EXPECT_FALSE(llvm::sys::fs::exists(r.outputPath));
}

// BuildRequest::checkPlan (what `kiln build --target` uses) sees the
// finished plan before it is committed; its error fails the build, keeps its
// kind, and leaves the file that was at the output path untouched.
TEST_F(BuildDriverTest, FailedPlanCheckLeavesTheOldPlan) {
  BuildRequest r;
  r.modelPath = kFixture;
  r.outputPath = tmp + "/gpt2.plan";
  r.quiet = true;
  std::ofstream(r.outputPath) << "the previous plan";
  std::string checked;
  r.checkPlan = [&](const std::string &path) -> llvm::Error {
    checked = path;
    auto plan = LoadPlan(path); // complete and loadable at this point
    if (!plan.ok())
      return internalError("does not load: " + plan.status().message());
    return inputError("the backend lacks 'softmax'");
  };
  bool internal = false;
  EXPECT_EQ(run(r, &internal), "the backend lacks 'softmax'");
  EXPECT_FALSE(internal);
  EXPECT_EQ(checked, r.outputPath + ".tmp");
  EXPECT_FALSE(llvm::sys::fs::exists(checked));
  std::ifstream in(r.outputPath);
  std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(old, "the previous plan");

  r.checkPlan = [](const std::string &) { return internalError("broken"); };
  EXPECT_EQ(run(r, &internal), "broken");
  EXPECT_TRUE(internal);

  r.checkPlan = [](const std::string &) { return llvm::Error::success(); };
  ASSERT_EQ(run(r), "") << log;
  EXPECT_TRUE(LoadPlan(r.outputPath).ok());
}

TEST_F(BuildDriverTest, PhaseNamesRoundTrip) {
  for (const char *name :
       {"import", "cleanup", "inject", "ragged", "partition", "quantize", "plan"}) {
    auto p = parsePhase(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(phaseName(*p), name);
  }
  EXPECT_FALSE(parsePhase("optimize").has_value());
}

} // namespace
} // namespace kiln::compiler
