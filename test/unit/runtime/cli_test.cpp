// The kiln tool's run, exec, inspect and tokenize mains, called in-process:
// results, files written, and exit codes (2 for bad input).
#include "backends/registry.h"
#include "cli.h"
#include "kiln/perplexity.h"
#include "kiln/plan.h"
#include "kiln/tensor_proto.h"
#include "test_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

namespace kiln {
namespace {

using cli::EvalMain;
using cli::ExecMain;
using cli::InspectMain;
using cli::RunMain;
using cli::TokenizeMain;
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

struct RunOutput {
  int rc;
  std::string out, err;
};

RunOutput RunCaptured(const std::vector<std::string> &args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = RunMain(args);
  std::string out = testing::internal::GetCapturedStdout();
  return {rc, out, testing::internal::GetCapturedStderr()};
}

TEST(Cli, RunStopsMasksAndPenalizes) {
  // Greedy from {1, 2}: 6, 14, 30, 62; token i reads "<i>"; EOS is 6.
  test::TestPlan p = test::BuildSumDecoder(true, 512);
  p.tokenizer_json = test::AngleTokenizerJson(512);
  p.eos = {6};
  std::string plan = TempPath("cli_stop.plan");
  ASSERT_EQ(p.Write(plan), "");
  const std::vector<std::string> base = {plan, "--prompt-ids", "1,2", "--temperature", "0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCaptured(args);
  };

  RunOutput r = with({"--max-new-tokens", "4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "\n"); // EOS at once; its text is not printed
  EXPECT_NE(r.err.find("finish: eos"), std::string::npos) << r.err;

  r = with({"--max-new-tokens", "4", "--ignore-eos", "--stop", "4><3", "--stop", "zz"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "<6><1\n");
  EXPECT_NE(r.err.find("finish: stop_string"), std::string::npos) << r.err;
  r = with({"--max-new-tokens", "4", "--ignore-eos", "--stop", "4><3", "--no-stream"});
  EXPECT_EQ(r.out, "<6><1\n");

  r = with({"--max-new-tokens", "4", "--ignore-eos", "--stop-token-id", "30"});
  EXPECT_EQ(r.out, "<6><14>\n");
  EXPECT_NE(r.err.find("finish: stop_token"), std::string::npos) << r.err;

  // EOS (6) masked for one token: the tie 5 / 7 goes to 5.
  r = with({"--max-new-tokens", "1", "--min-new-tokens", "1"});
  EXPECT_EQ(r.out, "<5>\n");

  // --logprobs prints one JSON line per token to stderr.
  auto logprobs = [&](std::vector<std::string> extra) {
    RunOutput r = with(extra);
    EXPECT_EQ(r.rc, 0) << r.err;
    std::vector<std::map<int, double>> steps; // token -> logprob, per step
    std::stringstream err(r.err);
    for (std::string line; std::getline(err, line);) {
      if (line.empty() || line[0] != '{')
        continue;
      auto j = nlohmann::json::parse(line);
      steps.emplace_back();
      for (const auto &alt : j["top"])
        steps.back()[alt[0].get<int>()] = alt[1].get<double>();
      EXPECT_EQ(j["logprob"].get<double>(), steps.back()[j["token"].get<int>()]);
    }
    return steps;
  };
  auto steps = logprobs({"--max-new-tokens", "2", "--ignore-eos", "--logprobs", "20"});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].size(), 20u);
  // Step 0 peaks at 6 with logits -|6 - v|: id 2 is 4 nats below.
  EXPECT_NEAR(steps[0][6] - steps[0][2], 4.0, 1e-4);
  // The repetition penalty doubles the prompt ids' negative logits.
  steps = logprobs(
      {"--max-new-tokens", "2", "--ignore-eos", "--logprobs", "20", "--repetition-penalty", "2"});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_NEAR(steps[0][6] - steps[0][2], 8.0, 1e-4);
  EXPECT_NEAR(steps[0][6] - steps[0][1], 10.0, 1e-4);
  // Presence and frequency act on generated ids only: at step 1 (peak 14)
  // id 6, generated once, loses 1 + 0.5 on top of its -8.
  steps = logprobs({"--max-new-tokens", "2", "--ignore-eos", "--logprobs", "20",
                    "--presence-penalty", "1", "--frequency-penalty", "0.5"});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_NEAR(steps[0][6] - steps[0][2], 4.0, 1e-4);
  ASSERT_TRUE(steps[1].count(14) && steps[1].count(6));
  EXPECT_NEAR(steps[1][14] - steps[1][6], 9.5, 1e-4);
}

TEST(Cli, RunRefusesBadSamplingOptions) {
  test::TestPlan p = test::BuildSumDecoder(true, 512);
  std::string plan = TempPath("cli_badopt.plan");
  ASSERT_EQ(p.Write(plan), "");
  auto expect = [&](std::vector<std::string> extra, const std::string &message) {
    std::vector<std::string> args = {plan, "--prompt-ids", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOutput r = RunCaptured(args);
    EXPECT_EQ(r.rc, 2) << extra[0];
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  expect({"--repetition-penalty", "0"}, "repetition_penalty must be a finite number > 0, got 0");
  expect({"--presence-penalty", "3"}, "presence_penalty must be in [-2, 2], got 3");
  expect({"--frequency-penalty", "x"}, "--frequency-penalty expects a number");
  expect({"--min-p", "1.5"}, "min_p must be in [0, 1], got 1.5");
  expect({"--logprobs", "21"}, "--logprobs expects an integer in [0, 20]");
  expect({"--min-new-tokens", "5", "--max-new-tokens", "2"},
         "min_new_tokens (5) must not exceed max_new_tokens (2)");
  expect({"--stop-token-id", "-1"}, "--stop-token-id: '-1' is not a token id");
  expect({"--stop", ""}, "stop string 0 is empty");
  expect({"--stop", "x"}, "stop strings need a tokenizer");

  testing::internal::CaptureStdout();
  EXPECT_EQ(RunMain({"--help"}), 0);
  std::string help = testing::internal::GetCapturedStdout();
  for (const char *option :
       {"--min-p", "--repetition-penalty", "--presence-penalty", "--frequency-penalty", "--stop ",
        "--stop-token-id", "--min-new-tokens", "--logprobs"})
    EXPECT_NE(help.find(option), std::string::npos) << option;
}

} // namespace
} // namespace kiln

namespace kiln {
namespace {

// --device (alias --backend) picks a backend this kiln was built with; any
// other name is bad input (exit 2) whose message lists the built ones.
TEST(Cli, BackendMustBeBuilt) {
  std::string plan = MlpPlan();
  std::string dir = TempPath("cli_backend");
  ::mkdir(dir.c_str(), 0755);
  Tensor x(DType::kF32, {1, 4}, "x");
  ASSERT_TRUE(WriteTensorProtoFile(dir + "/x.pb", x).ok());
  for (const char *flag : {"--backend", "--device"}) {
    testing::internal::CaptureStdout();
    EXPECT_EQ(ExecMain({plan, dir + "/x.pb", flag, "cpu"}), 0);
    EXPECT_NE(testing::internal::GetCapturedStdout().find("y: f32[1, 3]"), std::string::npos);
  }

  std::string built;
  for (const std::string &n : BackendNames())
    built += (built.empty() ? "" : ", ") + n;
  testing::internal::CaptureStderr();
  EXPECT_EQ(ExecMain({plan, dir + "/x.pb", "--backend", "nosuch"}), 2);
  EXPECT_EQ(RunMain({plan, "--prompt-ids", "1", "--device", "tpu:1"}), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kiln exec: --backend: unknown backend 'nosuch'; this kiln was built with: " +
                     built),
            std::string::npos)
      << err;
  EXPECT_NE(
      err.find("kiln run: --device: unknown backend 'tpu'; this kiln was built with: " + built),
      std::string::npos)
      << err;
}

// --device spellings, the alias given twice, and --gpu-memory-utilization's
// range and device are checked before any plan is read.
TEST(Cli, DeviceAndMemoryFractionFlags) {
  std::string plan = MlpPlan();
  const std::string half = TempPath("cli_gpu_half.json"), two = TempPath("cli_gpu_two.json");
  std::ofstream(half) << R"({"gpu_memory_utilization": 0.5})";
  std::ofstream(two) << R"({"gpu_memory_utilization": 2})";
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const std::vector<Case> cases = {
      {{"--device", "cuda:x"}, "--device: device 'cuda:x': the index after ':'"},
      {{"--device", "cpu:0"}, "the cpu backend has no device index"},
      {{"--device", ""}, "has no backend name"},
      {{"--device", "cpu", "--backend", "cpu"}, "give --device or --backend"},
      {{"--device", "cpu", "--gpu-memory-utilization", "0.5"}, "the cpu device has none"},
      {{"--gpu-memory-utilization", "0"}, "expects a fraction in (0, 1], got '0'"},
      {{"--gpu-memory-utilization", "1.5"}, "expects a fraction in (0, 1], got '1.5'"},
      {{"--gpu-memory-utilization", "half"}, "expects a fraction in (0, 1], got 'half'"},
      {{"--device", "cpu", "--engine-config", half}, "the cpu device has none"},
      {{"--engine-config", two}, "\"gpu_memory_utilization\" must be a number in (0, 1]"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> args = {plan, "--prompt-ids", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    testing::internal::CaptureStderr();
    EXPECT_EQ(RunMain(args), 2) << c.message;
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
  testing::internal::CaptureStdout();
  EXPECT_EQ(RunMain({"--help"}), 0);
  std::string help = testing::internal::GetCapturedStdout();
  for (const char *option : {"--device DEV", "--backend DEV", "--gpu-memory-utilization F"})
    EXPECT_NE(help.find(option), std::string::npos) << option;
}

// kiln inspect says, per built backend, whether it has every op's kernel.
TEST(Cli, InspectSaysWhichBackendsRunThePlan) {
  std::string plan = MlpPlan();
  testing::internal::CaptureStdout();
  ASSERT_EQ(InspectMain({plan, "--json"}), 0);
  auto j = nlohmann::json::parse(testing::internal::GetCapturedStdout());
  ASSERT_EQ(j["backends"].size(), BackendNames().size());
  EXPECT_EQ(j["backends"][0]["name"], "cpu");
  EXPECT_EQ(j["backends"][0]["runs"], true);
  EXPECT_TRUE(j["backends"][0]["missing_ops"].empty());
  testing::internal::CaptureStdout();
  ASSERT_EQ(InspectMain({plan}), 0);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("backends    runs on cpu"), std::string::npos) << out;
  for (size_t i = 1; i < BackendNames().size(); ++i) {
    const nlohmann::json &b = j["backends"][i];
    const std::string name = b["name"];
    if (b["runs"])
      EXPECT_NE(out.find("runs on " + name), std::string::npos) << out;
    else
      EXPECT_NE(out.find("not on " + name + ": missing op"), std::string::npos) << out;
  }
}

RunOutput TokenizeCaptured(const std::vector<std::string> &args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = TokenizeMain(args);
  std::string out = testing::internal::GetCapturedStdout();
  return {rc, out, testing::internal::GetCapturedStderr()};
}

std::string TokenizerFixture(const std::string &name) {
  return std::string(KILN_TOKENIZER_TESTDATA) + "/" + name;
}

std::string WriteTemp(const std::string &name, const std::string &bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A plan carrying test/tokenizer/llama3.json (BOS from its post-processor).
std::string Llama3TokenizerPlan() {
  test::Mlp m;
  test::TestPlan p = m.Build();
  p.tokenizer_json = ReadFile(TokenizerFixture("llama3.json"));
  const std::string path = TempPath("cli_tok.plan");
  EXPECT_EQ(p.Write(path), "");
  return path;
}

// The ids are Hugging Face tokenizers' for the same text
// (test/tokenizer/refs_llama3.json, corpus lines 12 and 529), from a plan
// and from the tokenizer.json alike; BOS only with special tokens added.
TEST(Cli, TokenizeGivesHuggingFaceIds) {
  const std::string plan = Llama3TokenizerPlan();
  const std::string llama3 = TokenizerFixture("llama3.json");
  const std::string text = WriteTemp("cli_tok_lines.txt", "new\n\nlines\n\n\n");
  RunOutput r = TokenizeCaptured({plan, "--text-file", text});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "[2503,1767,282,1168,282,198]\n");
  r = TokenizeCaptured(
      {"--tokenizer", llama3, "--text-file", text, "--add-special-tokens", "false"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "[1767,282,1168,282,198]\n");
  r = TokenizeCaptured({"--tokenizer", llama3, "--text-file", text, "--add-special-tokens=true"});
  EXPECT_EQ(r.out, "[2503,1767,282,1168,282,198]\n");

  r = TokenizeCaptured({plan, "--text", "new\n", "--tokens"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u) << r.out;
  EXPECT_EQ(j[0],
            nlohmann::json({{"id", 2503}, {"token", "<|begin_of_text|>"}, {"special", true}}));
  EXPECT_EQ(j[2]["id"], 198);
  EXPECT_EQ(j[2]["token"], "\u010a"); // byte-level BPE's newline, as convert_ids_to_tokens
  EXPECT_EQ(j[2]["special"], false);

  // 2510 is <|eot_id|>, a special token.
  const std::string ids = "1708,366,68,136,223,138,102,2510,67,262,891,58,50,54,60";
  r = TokenizeCaptured({plan, "--decode", ids});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Helloe\u0301\u03a9<|eot_id|>don't[SW]\n"); // e and a combining acute
  r = TokenizeCaptured(
      {"--tokenizer", llama3, "--decode", "[" + ids + "]", "--skip-special-tokens"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Helloe\u0301\u03a9don't[SW]\n");
  r = TokenizeCaptured({plan, "--decode", " [2510, 1708] ", "--tokens"});
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["token"], "<|eot_id|>");
  EXPECT_EQ(j[0]["special"], true);
  EXPECT_EQ(j[1]["token"], "Hel");
}

// decode(encode(text)) == text through the command line, for a byte-level
// BPE tokenizer: spaces, newlines, CJK, emoji, accents, a special token.
TEST(Cli, TokenizeRoundTripsByteLevelText) {
  const std::string gpt2 = TokenizerFixture("gpt2.json");
  const std::vector<std::string> texts = {"Hello<|endoftext|>world",
                                          "  two leading spaces, then\r\nCRLF\n\n\n",
                                          "\u4e2d\u6587 and \xf0\x9f\x98\x80 emoji\ttab",
                                          "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m ", "x"};
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string file = WriteTemp("cli_tok_rt" + std::to_string(i) + ".txt", texts[i]);
    RunOutput enc = TokenizeCaptured({"--tokenizer", gpt2, "--text-file", file});
    ASSERT_EQ(enc.rc, 0) << enc.err;
    ASSERT_GT(nlohmann::json::parse(enc.out).size(), 0u);
    RunOutput dec = TokenizeCaptured({"--tokenizer", gpt2, "--decode", enc.out});
    ASSERT_EQ(dec.rc, 0) << dec.err;
    EXPECT_EQ(dec.out, texts[i] + "\n") << "text " << i << " encoded as " << enc.out;
  }
}

TEST(Cli, TokenizeBadInputExitsTwo) {
  const std::string plan = Llama3TokenizerPlan();
  const std::string llama3 = TokenizerFixture("llama3.json");
  std::string corrupt_bytes = ReadFile(plan);
  corrupt_bytes[100] ^= 1;
  const std::string corrupt = WriteTemp("cli_tok_corrupt.plan", corrupt_bytes);
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const std::vector<Case> cases = {
      {{MlpPlan(), "--text", "hi"}, "has no tokenizer"},
      {{TempPath("cli_tok_missing.plan"), "--text", "hi"}, "cli_tok_missing.plan"},
      {{corrupt, "--text", "hi"}, "checksum"},
      {{plan, "--decode", "1708,2511"}, "2511 is not an id of the tokenizer (its ids are 0..2510)"},
      {{plan, "--decode", "1,x"}, "'x' is not a token id"},
      {{plan, "--decode", "-3"}, "'-3' is not a token id"},
      {{plan, "--decode", "[1,2"}, "does not close it"},
      {{plan, "--decode", ""}, "at least one token id"},
      {{plan, "--text", "bad \xff byte"}, "UTF-8"},
      {{plan, "--text-file", TempPath("cli_tok_no_such.txt")}, "cannot open --text-file"},
      {{"--tokenizer", KILN_TOKENIZER_TESTDATA, "--text", "a"}, "cannot read --tokenizer"},
      {{"--tokenizer", TokenizerFixture("corpus.jsonl"), "--text", "a"}, "--tokenizer '"},
      {{plan, "--tokenizer", llama3, "--text", "a"}, "not both"},
      {{"--text", "a"}, "expected one plan file"},
      {{plan, "--text", "a", "--decode", "1"}, "exactly one of"},
      {{plan}, "exactly one of"},
      {{plan, "--text", "a", "--add-special-tokens", "yes"}, "true or false"},
      {{plan, "--decode", "1", "--add-special-tokens", "true"}, "goes with encoding"},
      {{plan, "--text", "a", "--skip-special-tokens"}, "goes with --decode"},
      {{plan, "--text", "a", "--bogus"}, "unknown option --bogus"},
  };
  for (const Case &c : cases) {
    RunOutput r = TokenizeCaptured(c.args);
    EXPECT_EQ(r.rc, 2) << c.message << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.message; // nothing half-printed
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  RunOutput help = TokenizeCaptured({"--help"});
  EXPECT_EQ(help.rc, 0);
  for (const char *option : {"--tokenizer FILE", "--text-file FILE", "--add-special-tokens BOOL",
                             "--tokens", "--decode IDS", "--skip-special-tokens"})
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
}

RunOutput EvalCaptured(const std::vector<std::string> &args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = EvalMain(args);
  std::string out = testing::internal::GetCapturedStdout();
  return {rc, out, testing::internal::GetCapturedStderr()};
}

// A bigram decoder over the letters a..g, with their tokenizer (no BOS).
std::string LetterBigramPlan() {
  constexpr int kVocab = 7;
  std::vector<float> table(kVocab * kVocab);
  for (int i = 0; i < kVocab * kVocab; ++i)
    table[i] = std::sin(1.3f * i) * 2.0f;
  test::TestPlan p = test::BuildBigramDecoder(table, kVocab);
  p.tokenizer_json = test::LetterTokenizerJson(kVocab);
  p.context_length = 16;
  const std::string path = TempPath("cli_eval_bigram.plan");
  EXPECT_EQ(p.Write(path), "");
  return path;
}

// kiln eval ppl prints what TextPerplexity computes (perplexity_test.cpp
// checks that against the closed form), as JSON or as a line.
TEST(Cli, EvalPplPrintsThePerplexity) {
  const std::string plan = LetterBigramPlan();
  const std::string text = "abcdefgfedcbaabbccddeeffggcafebead"; // 34 letters, 34 tokens
  const std::string file = WriteTemp("cli_eval.txt", text);
  RunOutput r = EvalCaptured({"ppl", plan, "--text", file, "--stride", "5", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, ""); // no progress line: stderr is not a terminal
  auto j = nlohmann::json::parse(r.out);
  auto loaded = LoadPlan(plan);
  ASSERT_TRUE(loaded.ok());
  PerplexityOptions o;
  o.stride = 5;
  auto want = TextPerplexity(**loaded, text, o);
  ASSERT_TRUE(want.ok()) << want.status().message();
  EXPECT_EQ(j["perplexity"].get<double>(), want->perplexity);
  EXPECT_EQ(j["nll_per_token"].get<double>(), want->nll_per_token);
  EXPECT_EQ(j["tokens"], 34);
  EXPECT_EQ(j["scored"], 33);
  EXPECT_EQ(j["window"], 16); // the plan's context length
  EXPECT_EQ(j["stride"], 5);
  EXPECT_EQ(j["windows"], 5); // [0,16) [5,21) [10,26) [15,31) [20,34)
  EXPECT_GE(j["seconds"].get<double>(), 0);
  EXPECT_GT(want->perplexity, 1);

  r = EvalCaptured({"ppl", plan, "--text", file, "--window", "4", "--max-tokens", "9"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("over 8 scored of 9 tokens; 4 windows of 4, stride 2"), std::string::npos)
      << r.out;
}

TEST(Cli, EvalPplBadInputExitsTwo) {
  const std::string plan = LetterBigramPlan();
  const std::string text = WriteTemp("cli_eval_ok.txt", "abcabc");
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const std::vector<Case> cases = {
      {{"ppl", MlpPlan(), "--text", text}, "has no tokenizer"},
      {{"ppl", Llama3TokenizerPlan(), "--text", text}, "no logits output (an encoder"},
      {{"ppl", plan}, "--text FILE is required"},
      {{"ppl", plan, "--text", WriteTemp("cli_eval_empty.txt", "")}, "the text is empty"},
      {{"ppl", plan, "--text", WriteTemp("cli_eval_one.txt", "a")}, "the text is 1 token(s)"},
      {{"ppl", plan, "--text", WriteTemp("cli_eval_bad.txt", "ab\xff")}, "UTF-8"},
      {{"ppl", plan, "--text", TempPath("cli_eval_no_such.txt")}, "cannot open --text"},
      {{"ppl", plan, "--text", text, "--window", "1"}, "--window expects an integer in [2,"},
      {{"ppl", plan, "--text", text, "--window", "17"},
       "longer than the plan's context length, 16"},
      {{"ppl", plan, "--text", text, "--stride", "0"}, "--stride expects an integer in [1,"},
      {{"ppl", plan, "--text", text, "--window", "8", "--stride", "9"}, "longer than --window 8"},
      {{"ppl", plan, "--text", text, "--stride", "17"}, "stride must be in [1, window = 16]"},
      {{"ppl", plan, "--text", text, "--max-tokens", "1"}, "--max-tokens expects"},
      {{"ppl", plan, "--text", text, "--device", "tpu"}, "unknown backend 'tpu'"},
      {{"ppl", plan, "--text", text, "--bogus"}, "unknown option --bogus"},
      {{"ppl", TempPath("cli_eval_missing.plan"), "--text", text}, "cli_eval_missing.plan"},
      {{"ppl"}, "expected one plan file"},
      {{"perplexity", plan}, "unknown evaluation 'perplexity'"},
      {{}, "expected an evaluation: ppl"},
  };
  for (const Case &c : cases) {
    RunOutput r = EvalCaptured(c.args);
    EXPECT_EQ(r.rc, 2) << c.message << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  RunOutput help = EvalCaptured({"--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("ppl"), std::string::npos);
  help = EvalCaptured({"ppl", "--help"});
  EXPECT_EQ(help.rc, 0);
  for (const char *option : {"--text FILE", "--window N", "--stride N", "--max-tokens N",
                             "--threads N", "--device DEV", "--json"})
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
}

} // namespace
} // namespace kiln
