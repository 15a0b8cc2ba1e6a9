// Unit tests for the build config rules (compiler/driver/BuildConfig.h): each
// rule has a case that must be refused and, where it matters, a near miss
// that must be accepted.
#include "compiler/driver/BuildConfig.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace kiln::compiler {
namespace {

// Parses `text` as the config file "build.json"; returns the error message,
// or "" when the config is accepted (then *out holds it).
std::string Parse(const std::string &text, BuildConfig *out = nullptr) {
  BuildConfigParser p;
  if (llvm::Error e = p.AddJsonText(text, "build.json"))
    return llvm::toString(std::move(e));
  auto config = p.Finish();
  if (!config)
    return llvm::toString(config.takeError());
  if (out)
    *out = *config;
  return "";
}

bool Contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

#define EXPECT_ERROR_HAS(expr, needle)                                                             \
  do {                                                                                             \
    std::string msg_ = (expr);                                                                     \
    EXPECT_TRUE(Contains(msg_, needle)) << "message: '" << msg_ << "' lacks '" << needle << "'";   \
  } while (0)

TEST(BuildConfig, EmptyObjectGivesDefaults) {
  BuildConfig c;
  ASSERT_EQ(Parse("{}", &c), "");
  EXPECT_EQ(c.dtype, "fp32");
  EXPECT_FALSE(c.dtype_explicit);
  EXPECT_EQ(c.tp_size, 1);
  EXPECT_TRUE(c.kernel_inject);
  EXPECT_FALSE(c.require_injection);
  EXPECT_FALSE(c.max_out_tokens.has_value());
  EXPECT_TRUE(c.warnings.empty());
}

TEST(BuildConfig, AcceptsDeepSpeedDefaultsExplicitly) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"dtype": "torch.float32", "tensor_parallel": {"tp_size": 1, "enabled": true},
      "replace_with_kernel_inject": false, "max_out_tokens": 4096, "min_out_tokens": 1,
      "triangular_masking": true, "checkpoint": null, "training_mp_size": 1,
      "save_mp_checkpoint_path": null, "injection_policy": null, "quant": {"enabled": false},
      "enable_cuda_graph": false})",
                  &c),
            "");
  EXPECT_EQ(c.dtype, "fp32");
  EXPECT_TRUE(c.dtype_explicit);
  EXPECT_EQ(c.max_out_tokens.value_or(0), 4096);
}

TEST(BuildConfig, DtypeSpellings) {
  for (const char *s : {"fp32", "float32", "float", "torch.float32", "torch.float"}) {
    BuildConfig c;
    EXPECT_EQ(Parse(std::string(R"({"dtype": ")") + s + "\"}", &c), "") << s;
    EXPECT_EQ(c.dtype, "fp32") << s;
  }
  // DeepSpeed's spellings of half and bfloat16 (init_inference takes torch
  // dtypes; JSON can only carry their names).
  for (const char *s : {"fp16", "float16", "half", "torch.float16", "torch.half"}) {
    BuildConfig c;
    EXPECT_EQ(Parse(std::string(R"({"dtype": ")") + s + "\"}", &c), "") << s;
    EXPECT_EQ(c.dtype, "fp16") << s;
    EXPECT_TRUE(c.dtype_explicit) << s;
  }
  for (const char *s : {"bf16", "bfloat16", "bfloat", "torch.bfloat16"}) {
    BuildConfig c;
    EXPECT_EQ(Parse(std::string(R"({"dtype": ")") + s + "\"}", &c), "") << s;
    EXPECT_EQ(c.dtype, "bf16") << s;
  }
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "int8"})"), "dtype: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "torch.int8"})"), "dtype: not supported yet");
  // Near misses are not guessed at; the message lists what is accepted.
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "fp33"})"), "unknown dtype \"fp33\"");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "float16 "})"), "accepted: fp32, float32");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "torch.bf16"})"), "torch.bfloat16");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "FP16"})"), "unknown dtype \"FP16\"");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": 32})"), "must be a string");
}

TEST(BuildConfig, HalfSpellingsAreOneValue) {
  BuildConfigParser same;
  ASSERT_FALSE(same.AddJsonText(R"({"dtype": "torch.half"})", "build.json"));
  ASSERT_FALSE(same.AddFlag("dtype", "float16", "--dtype"));
  auto c = same.Finish();
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->dtype, "fp16");
  BuildConfigParser differ;
  ASSERT_FALSE(differ.AddJsonText(R"({"dtype": "half"})", "build.json"));
  ASSERT_FALSE(differ.AddFlag("dtype", "bfloat16", "--dtype"));
  auto d = differ.Finish();
  ASSERT_FALSE(static_cast<bool>(d));
  EXPECT_NE(llvm::toString(d.takeError()).find("conflicting values for dtype"), std::string::npos);
}

TEST(BuildConfig, UnknownKeysAreErrors) {
  EXPECT_ERROR_HAS(Parse(R"({"dtyp": "fp32"})"), "unknown key \"dtyp\"");
  EXPECT_ERROR_HAS(Parse(R"({"tensor_parallel": {"size": 1}})"),
                   "unknown key \"tensor_parallel.size\"");
  EXPECT_ERROR_HAS(Parse(R"({"quant": {"enabled": false, "bits": 8}})"),
                   "unknown key \"quant.bits\"");
}

TEST(BuildConfig, SyntaxAndShapeErrors) {
  EXPECT_ERROR_HAS(Parse(R"({"dtype": )"), "build.json: not valid JSON");
  EXPECT_ERROR_HAS(Parse(R"(["dtype"])"), "must be a JSON object");
  EXPECT_ERROR_HAS(Parse(R"({"tp": 2})"), "\"tp\" must be an object");
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "fp32", "dtype": "fp32"})"), "key \"dtype\" appears twice");
}

TEST(BuildConfig, ValuesAreTypeChecked) {
  EXPECT_ERROR_HAS(Parse(R"({"max_tokens": "64"})"), "must be a positive integer");
  EXPECT_ERROR_HAS(Parse(R"({"max_tokens": 0})"), "must be a positive integer");
  EXPECT_ERROR_HAS(Parse(R"({"max_tokens": 64.5})"), "must be a positive integer");
  EXPECT_ERROR_HAS(Parse(R"({"kernel_inject": 0})"), "must be true or false");
  EXPECT_ERROR_HAS(Parse(R"({"tp": {"tp_size": -1}})"), "\"tp.tp_size\" in build.json");
}

TEST(BuildConfig, AliasesResolve) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"max_tokens": 300, "tm": true, "kernel_inject": false,
                      "tp": {"tp_size": 1}, "min_tokens": 1})",
                  &c),
            "");
  EXPECT_EQ(c.max_out_tokens.value_or(0), 300);
}

TEST(BuildConfig, NameAndAliasMustAgree) {
  EXPECT_EQ(Parse(R"({"max_tokens": 300, "max_out_tokens": 300})"), "");
  std::string msg = Parse(R"({"max_tokens": 300, "max_out_tokens": 400})");
  EXPECT_ERROR_HAS(msg, "conflicting values for max_out_tokens");
  EXPECT_ERROR_HAS(msg, "\"max_tokens\"");
  EXPECT_ERROR_HAS(msg, "\"max_out_tokens\"");
  // Same setting, different spellings of the same value: no conflict.
  EXPECT_EQ(Parse(R"({"tp": {"tp_size": 1}, "tensor_parallel": {"tp_size": 1}})"), "");
  EXPECT_ERROR_HAS(Parse(R"({"tm": true, "triangular_masking": false})"),
                   "conflicting values for triangular_masking");
}

TEST(BuildConfig, DeprecatedMpSizeMapsToTpSize) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"mp_size": 1})", &c), "");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(Contains(c.warnings[0], "deprecated"));
  std::string msg = Parse(R"({"mp_size": 1, "tensor_parallel": {"tp_size": 2}})");
  EXPECT_ERROR_HAS(msg, "conflicting values for tensor_parallel.tp_size");
  EXPECT_ERROR_HAS(msg, "\"mp_size\"");
  EXPECT_ERROR_HAS(msg, "\"tensor_parallel.tp_size\"");
  ASSERT_EQ(Parse(R"({"mp_size": 4})", &c), "");
  EXPECT_EQ(c.tp_size, 4);
}

TEST(BuildConfig, TpSizeAndItsAliasesAreAccepted) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"tensor_parallel": {"tp_size": 2}})", &c), "");
  EXPECT_EQ(c.tp_size, 2);
  EXPECT_TRUE(Contains(c.ToJson(), "\"tp_size\": 2"));
  ASSERT_EQ(Parse(R"({"tp": {"tp_size": 4, "enabled": true}})", &c), "");
  EXPECT_EQ(c.tp_size, 4);
  // enabled: false contradicts a tp_size above 1, and agrees with 1.
  EXPECT_ERROR_HAS(Parse(R"({"tp": {"tp_size": 2, "enabled": false}})"),
                   "tensor_parallel.enabled is false but tp_size is 2");
  ASSERT_EQ(Parse(R"({"tp": {"tp_size": 1, "enabled": false}})", &c), "");
  EXPECT_EQ(c.tp_size, 1);
  EXPECT_ERROR_HAS(Parse(R"({"tp": {"tp_size": 0}})"), "must be a positive integer");
}

TEST(BuildConfig, InjectionPolicyNamesRowParallelGlobs) {
  BuildConfig c;
  // tp_size lives under tensor_parallel (or tp); only mp_size is top level.
  EXPECT_ERROR_HAS(Parse(R"({"tp_size": 2})"), "unknown key \"tp_size\"");
  ASSERT_EQ(Parse(R"({"tp": {"tp_size": 2}, "injection_policy":
      {"LlamaDecoderLayer": ["*o_proj*", "*down_proj*"]}})",
                  &c),
            "");
  ASSERT_EQ(c.row_parallel.size(), 2u);
  EXPECT_EQ(c.row_parallel[0].label, "LlamaDecoderLayer");
  EXPECT_EQ(c.row_parallel[1].glob, "*down_proj*");
  EXPECT_TRUE(Contains(c.ToJson(), "\"*o_proj*\""));
  // A bare list (label "*") and DeepSpeed's one-name form.
  ASSERT_EQ(Parse(R"({"tp": {"tp_size": 2}, "injection_dict": ["*o_proj*"]})", &c), "");
  ASSERT_EQ(c.row_parallel.size(), 1u);
  EXPECT_EQ(c.row_parallel[0].label, "*");
  ASSERT_EQ(Parse(R"({"tp": {"tp_size": 2}, "injection_policy": {"Block": "attn.c_proj"}})", &c),
            "");
  EXPECT_EQ(c.row_parallel[0].glob, "attn.c_proj");
  // Near misses: wrong shapes are refused with the accepted forms.
  EXPECT_ERROR_HAS(Parse(R"({"injection_policy": {"Block": [3]}})"), "node-name globs");
  EXPECT_ERROR_HAS(Parse(R"({"injection_policy": {}})"), "node-name globs");
  EXPECT_ERROR_HAS(Parse(R"({"injection_policy": "o_proj"})"), "node-name globs");
  EXPECT_ERROR_HAS(Parse(R"({"injection_policy": {"Block": [""]}})"), "node-name globs");
  // A policy at tp_size 1 does nothing, and says so.
  ASSERT_EQ(Parse(R"({"injection_policy": ["*o_proj*"]})", &c), "");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_TRUE(Contains(c.warnings[0], "nothing is partitioned"));
}

TEST(BuildConfig, KernelInjectIsTriState) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"replace_with_kernel_inject": true})", &c), "");
  EXPECT_TRUE(c.kernel_inject);
  EXPECT_TRUE(c.require_injection);
  EXPECT_TRUE(Contains(c.ToJson(), "\"replace_with_kernel_inject\": true"));
  ASSERT_EQ(Parse(R"({"kernel_inject": false})", &c), "");
  EXPECT_FALSE(c.kernel_inject);
  EXPECT_FALSE(c.require_injection);
  EXPECT_TRUE(Contains(c.ToJson(), "\"replace_with_kernel_inject\": false"));
  ASSERT_EQ(Parse("{}", &c), "");
  EXPECT_TRUE(Contains(c.ToJson(), "\"replace_with_kernel_inject\": null"));
}

TEST(BuildConfig, QuantEnablesInt8WeightsWithF32OneRankPlans) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"quant": {"enabled": true}})", &c), "");
  EXPECT_TRUE(c.quant_enabled);
  EXPECT_EQ(c.quant_activations, "f32");
  EXPECT_TRUE(Contains(c.ToJson(),
                       "\"quant\": {\n    \"activations\": \"f32\",\n    \"enabled\": true\n  }"))
      << c.ToJson();
  ASSERT_EQ(Parse(R"({"quant": {"activations": "int8"}})", &c), "");
  EXPECT_TRUE(c.quant_enabled);
  EXPECT_EQ(c.quant_activations, "int8");
  EXPECT_ERROR_HAS(Parse(R"({"quant": {"enabled": true, "activations": "int4"}})"),
                   "quant.activations: \"int4\" is not one of");
  EXPECT_ERROR_HAS(Parse(R"({"quant": {"enabled": false, "activations": "int8"}})"),
                   "int8 activations need int8 weights");
  // DeepSpeed's quant.enabled defaults to true, so an empty object asks for it.
  ASSERT_EQ(Parse(R"({"quant": {}})", &c), "");
  EXPECT_TRUE(c.quant_enabled);
  ASSERT_EQ(Parse(R"({"quant": {"enabled": true}, "dtype": "fp32"})", &c), "");
  ASSERT_EQ(Parse(R"({"quant": {"enabled": false}, "dtype": "bf16"})", &c), "");
  EXPECT_FALSE(c.quant_enabled);
  EXPECT_ERROR_HAS(Parse(R"({"quant": {"enabled": true}, "dtype": "bf16"})"),
                   "quant.enabled: not supported yet with dtype bf16");
  EXPECT_ERROR_HAS(Parse(R"({"quant": {}, "tensor_parallel": {"tp_size": 2}})"),
                   "quant.enabled: not supported yet with tensor_parallel.tp_size 2");
  // A plan's stored config: an int8 plan is not resharded (its f32 weights
  // are not in it); an fp32 one is.
  auto fine = ReshardConfig(R"({"quant": {"enabled": false}})", 2);
  EXPECT_TRUE(static_cast<bool>(fine));
  if (!fine)
    llvm::consumeError(fine.takeError());
  auto refused = ReshardConfig(R"({"quant": {"enabled": true}})", 1);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_TRUE(Contains(llvm::toString(refused.takeError()), "cannot be resharded"));
}

TEST(BuildConfig, UnsupportedFeaturesAreRefused) {
  EXPECT_ERROR_HAS(Parse(R"({"quant": {"enabled": false, "weight": {"num_bits": 8}}})"),
                   "quant.weight: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"checkpoint": "ckpt.json"})"), "checkpoint: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"save_mp_checkpoint_path": "/tmp/x"})"),
                   "save_mp_checkpoint_path: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"enable_cuda_graph": true})"), "enable_cuda_graph: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"training_mp_size": 2})"), "training_mp_size: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"training_mp_size": 2})"), "kiln reshard");
  EXPECT_ERROR_HAS(Parse(R"({"min_out_tokens": 8})"), "min_out_tokens: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"tm": false})"), "tm: not supported yet");
  EXPECT_ERROR_HAS(Parse(R"({"tp": {"tp_grain_size": 64}})"),
                   "tp.tp_grain_size: not supported yet");
}

TEST(BuildConfig, ConflictIsReportedBeforeUnsupported) {
  // Both values are unsupported, but the user's real mistake is the conflict.
  EXPECT_ERROR_HAS(Parse(R"({"dtype": "fp32", "tp": {"tp_size": 2}, "mp_size": 4})"),
                   "conflicting values");
}

TEST(BuildConfig, FlagsConflictWithTheFile) {
  BuildConfigParser p;
  ASSERT_FALSE(p.AddJsonText(R"({"max_tokens": 300})", "build.json"));
  ASSERT_FALSE(p.AddFlag("max_out_tokens", "500", "--max-tokens"));
  auto c = p.Finish();
  ASSERT_FALSE(c);
  std::string msg = llvm::toString(c.takeError());
  EXPECT_ERROR_HAS(msg, "--max-tokens");
  EXPECT_ERROR_HAS(msg, "\"max_tokens\" in build.json");
}

TEST(BuildConfig, FlagAgreeingWithTheFileIsFine) {
  BuildConfigParser p;
  ASSERT_FALSE(p.AddJsonText(R"({"dtype": "float32"})", "build.json"));
  ASSERT_FALSE(p.AddFlag("dtype", "fp32", "--dtype"));
  auto c = p.Finish();
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->dtype, "fp32");
}

TEST(BuildConfig, FlagValuesAreTypeChecked) {
  BuildConfigParser p;
  ASSERT_FALSE(p.AddFlag("max_out_tokens", "lots", "--max-tokens"));
  auto c = p.Finish();
  ASSERT_FALSE(c);
  EXPECT_ERROR_HAS(llvm::toString(c.takeError()), "--max-tokens: must be a positive integer");
  BuildConfigParser q;
  llvm::Error e = q.AddFlag("no_such_key", "1", "--x");
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_ERROR_HAS(llvm::toString(std::move(e)), "unknown config key");
}

TEST(BuildConfig, TpSizeFlagSetsTpSize) {
  BuildConfigParser p;
  ASSERT_FALSE(p.AddFlag("tensor_parallel.tp_size", "2", "--tp-size"));
  auto c = p.Finish();
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->tp_size, 2);
  // A flag that disagrees with the file is a conflict, naming both.
  BuildConfigParser q;
  ASSERT_FALSE(q.AddJsonText(R"({"tp": {"tp_size": 4}})", "build.json"));
  ASSERT_FALSE(q.AddFlag("tensor_parallel.tp_size", "2", "--tp-size"));
  auto d = q.Finish();
  ASSERT_FALSE(d);
  EXPECT_ERROR_HAS(llvm::toString(d.takeError()), "--tp-size");
}

TEST(BuildConfig, FileErrors) {
  BuildConfigParser p;
  llvm::Error e = p.AddJsonFile("/nonexistent/build.json");
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_ERROR_HAS(llvm::toString(std::move(e)), "cannot open");

  std::string path = ::testing::TempDir() + "kiln_build_config_test.json";
  { std::ofstream(path) << R"({"max_tokens": 77})"; }
  BuildConfigParser q;
  ASSERT_FALSE(q.AddJsonFile(path));
  auto c = q.Finish();
  std::remove(path.c_str());
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->max_out_tokens.value_or(0), 77);
}

TEST(BuildConfig, EffectiveJsonUsesCanonicalNames) {
  BuildConfig c;
  ASSERT_EQ(Parse(R"({"max_tokens": 300, "dtype": "float"})", &c), "");
  std::string j = c.ToJson();
  EXPECT_TRUE(Contains(j, "\"max_out_tokens\": 300")) << j;
  EXPECT_TRUE(Contains(j, "\"dtype\": \"fp32\"")) << j;
  EXPECT_FALSE(Contains(j, "max_tokens\"")) << j;
}

TEST(BuildConfig, EffectiveJsonSaysWhenTheModelKeepsItsTypes) {
  BuildConfig c;
  ASSERT_EQ(Parse("{}", &c), "");
  EXPECT_TRUE(Contains(c.ToJson(), "\"dtype\": \"model\"")) << c.ToJson();
}

} // namespace
} // namespace kiln::compiler
