// The kiln tool's run, exec and inspect mains, called in-process: results,
// files written, and exit codes (2 for bad input).
#include "cli.h"
#include "kiln/tensor_proto.h"
#include "test_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sys/stat.h>

namespace kiln {
namespace {

using cli::ExecMain;
using cli::InspectMain;
using cli::RunMain;
using test::TempPath;

std::string MlpPlan() {
  test::Mlp m;
  std::string path = TempPath("cli_mlp.plan");
  EXPECT_EQ(m.Build().Write(path), "");
  return path;
}

std::string ReadFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Cli, InspectPrintsJson) {
  std::string plan = MlpPlan();
  testing::internal::CaptureStdout();
  int rc = InspectMain({plan, "--json", "--ops"});
  std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["num_ops"], 3);
  EXPECT_EQ(j["op_counts"]["matmul"], 1);
  EXPECT_EQ(j["inputs"][0]["shape"][0], "batch");
  EXPECT_EQ(j["inputs"][0]["shape"][1], 4);
  EXPECT_EQ(j["memory_plan"]["num_slots"], 2);
  EXPECT_EQ(j["ops"][2]["type"], "softmax");
  EXPECT_EQ(j["sections"][0]["tensors"], 2);
  EXPECT_EQ(j["tokenizer"]["present"], false);

  testing::internal::CaptureStdout();
  rc = InspectMain({plan});
  out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("matmul"), std::string::npos);
  EXPECT_NE(out.find("[batch, 4]"), std::string::npos) << out;
}

TEST(Cli, BadInputExitsTwo) {
  std::string plan = MlpPlan();
  std::string bytes = ReadFile(plan);
  bytes[100] ^= 1;
  std::string corrupt = TempPath("cli_corrupt.plan");
  std::ofstream(corrupt, std::ios::binary) << bytes;
  testing::internal::CaptureStderr();
  EXPECT_EQ(InspectMain({corrupt}), 2);
  EXPECT_EQ(InspectMain({}), 2);
  EXPECT_EQ(InspectMain({plan, "--bogus"}), 2);
  EXPECT_EQ(ExecMain({corrupt}), 2);
  EXPECT_EQ(RunMain({corrupt, "--prompt-ids", "1"}), 2);
  EXPECT_EQ(RunMain({TempPath("cli_missing.plan"), "-p", "hi"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  testing::internal::CaptureStdout();
  EXPECT_EQ(InspectMain({"--help"}), 0);
  EXPECT_EQ(RunMain({"--help"}), 0);
  EXPECT_EQ(ExecMain({"--help"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("--dump-logits"), std::string::npos);
}

TEST(Cli, ExecWritesOutputs) {
  std::string plan = MlpPlan();
  test::Mlp m;
  Tensor x(DType::kF32, {1, 4}, "x");
  for (int i = 0; i < 4; ++i)
    x.data<float>()[i] = 0.5f * i;
  std::string dir = TempPath("cli_exec");
  ::mkdir(dir.c_str(), 0755);
  ASSERT_TRUE(WriteTensorProtoFile(dir + "/input_0.pb", x).ok());
  std::vector<float> want = m.Reference(x.data<float>());

  testing::internal::CaptureStdout();
  std::vector<std::vector<std::string>> forms = {
      {plan, "--input", "x=" + dir + "/input_0.pb", "--output-dir", dir + "/a"},
      {plan, dir + "/input_0.pb", "--output-dir", dir + "/b"},
      {plan, "--input-dir", dir, "--output-dir", dir + "/c"},
  };
  for (const auto &args : forms) {
    ASSERT_EQ(ExecMain(args), 0);
    auto y = ReadTensorProtoFile(args.back() + "/y.pb");
    ASSERT_TRUE(y.ok()) << y.status().message();
    EXPECT_EQ(y->name(), "y");
    ASSERT_EQ(y->shape(), (Shape{1, 3}));
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(y->data<float>()[j], want[j], 1e-5f);
  }
  testing::internal::GetCapturedStdout();

  testing::internal::CaptureStderr();
  EXPECT_EQ(ExecMain({plan, "--input", "nope=" + dir + "/input_0.pb"}), 2);
  EXPECT_EQ(ExecMain({plan, "--input", "x=" + dir + "/missing.pb"}), 2);
  Tensor wrong(DType::kI64, {1, 4}, "x");
  ASSERT_TRUE(WriteTensorProtoFile(dir + "/wrong.pb", wrong).ok());
  EXPECT_EQ(ExecMain({plan, dir + "/wrong.pb"}), 2);
  std::ofstream(dir + "/garbage.pb", std::ios::binary) << "\xff\xff\xff";
  EXPECT_EQ(ExecMain({plan, dir + "/garbage.pb"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not a graph input; the inputs are: x"), std::string::npos) << err;
}

TEST(Cli, RunGeneratesAndDumpsLogits) {
  test::TestPlan p = test::BuildSumDecoder(true, 512);
  std::string plan = TempPath("cli_dec.plan");
  ASSERT_EQ(p.Write(plan), "");
  std::string npy = TempPath("cli_logits.npy");
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = RunMain({plan, "--prompt-ids", "1,2", "--max-new-tokens", "3", "--dump-logits", npy,
                    "--temperature", "0"});
  std::string out = testing::internal::GetCapturedStdout();
  std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(out, "6 14 30 \n"); // no tokenizer: ids
  EXPECT_NE(err.find("tok/s"), std::string::npos);
  std::string data = ReadFile(npy);
  ASSERT_GT(data.size(), 10u);
  EXPECT_EQ(data.substr(1, 5), "NUMPY");
  size_t header = 10 + static_cast<uint8_t>(data[8]) + 256 * static_cast<uint8_t>(data[9]);
  EXPECT_EQ(header % 64, 0u);
  EXPECT_NE(data.find("'shape': (3, 512)"), std::string::npos);
  ASSERT_EQ(data.size(), header + 3 * 512 * 4);
  float first;
  std::memcpy(&first, data.data() + header + 6 * 4, 4); // step 0 peaks at token 6
  EXPECT_EQ(first, 0.0f);

  testing::internal::CaptureStderr();
  EXPECT_EQ(RunMain({plan, "-p", "hello"}), 2); // no tokenizer in this plan
  EXPECT_EQ(RunMain({plan, "--prompt-ids", "1", "--temperature", "-1"}), 2);
  EXPECT_EQ(RunMain({plan, "--prompt-ids", "1", "--top-p", "1.5"}), 2);
  EXPECT_EQ(RunMain({plan, "--prompt-ids", "1,x"}), 2);
  EXPECT_EQ(RunMain({plan, "--prompt-ids", "1", "--max-new-tokens"}), 2);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("use --prompt-ids"), std::string::npos) << err;
  EXPECT_NE(err.find("top_p must be in (0, 1]"), std::string::npos) << err;
}

} // namespace
} // namespace kiln
