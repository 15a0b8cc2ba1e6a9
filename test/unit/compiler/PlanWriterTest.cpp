// The plan writer end to end without the importer: kiln IR (as text) goes
// through the plan-phase passes and the writer, then the runtime's own loader
// reads the file back (it verifies checksums, slots, op types) and, for one
// graph, the CPU executor runs it. What the runtime accepts is the contract.
#include "compiler/plan/PlanWriter.h"
#include "compiler/dialect/KilnDialect.h"
#include "compiler/plan/DecoderIO.h"
#include "compiler/plan/ModelFiles.h"
#include "compiler/plan/PlanSerializer.h"
#include "passes/Passes.h"

#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln_schema/plan_generated.h"
#include "plan_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

namespace kiln::plan {
namespace {

class PlanWriterTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<KilnDialect, mlir::func::FuncDialect>();
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-plan-writer", dir));
    tmp = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(tmp); }

  std::string path(const char *name) { return tmp + "/" + name; }

  // Parses `ir`, runs kiln-mark-host and kiln-memory-plan, writes the plan.
  llvm::Expected<PlanSummary> build(const std::string &ir, const std::string &out,
                                    const PlanExtras &extras = {}) {
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
    if (!module)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "bad test IR");
    mlir::PassManager pm(&context);
    pm.addNestedPass<mlir::func::FuncOp>(createKilnShapeInference());
    pm.addNestedPass<mlir::func::FuncOp>(createKilnMarkHost());
    pm.addNestedPass<mlir::func::FuncOp>(createKilnMemoryPlan());
    if (mlir::failed(pm.run(*module)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "passes failed");
    return writePlan(*module, extras, out);
  }

  std::unique_ptr<Plan> load(const std::string &file) {
    auto plan = LoadPlan(file);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    return plan.ok() ? std::move(plan.value()) : nullptr;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string tmp;
};

const fb::Op *findOp(const Plan &plan, const std::string &type) {
  for (const fb::Op *op : *plan.fb().ops())
    if (op->type()->str() == type)
      return op;
  return nullptr;
}

// A one-layer toy decoder: embedding, KV concat, layer norm without bias, a
// bool mask, a projection to logits and a host-evaluated shape chain.
const char kDecoder[] = R"mlir(
module attributes {kiln.opset = 17 : i64, kiln.producer_name = "pytorch", kiln.producer_version = "2.1"} {
  func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                  %past: tensor<?x?x4xf32> {kiln.name = "past_key_values.0.key", kiln.dims = ["batch", "past", ""]})
      -> (tensor<?x?x5xf32> {kiln.name = "logits"}, tensor<?x?x4xf32> {kiln.name = "present.0.key"}) {
    %wte = kiln.constant {name = "wte"} dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0]]> : tensor<5x4xf32>
    %h = kiln.gather %wte, %ids {axis = 0 : i64} : (tensor<5x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32> loc("embed")
    %present = kiln.concat %past, %h {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> loc("kv_concat")
    %scale = kiln.constant {name = "ln.weight"} dense<1.0> : tensor<4xf32>
    %n = kiln.layer_normalization %h, %scale {axis = -1 : i64, epsilon = 1.0e-05 : f32, stash_type = 1 : i64} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32> loc("ln")
    %mask = kiln.constant {name = "mask"} dense<[true, false, true, true]> : tensor<4xi1>
    %zero = kiln.constant dense<0.0> : tensor<f32>
    %m = kiln.where %mask, %n, %zero : (tensor<4xi1>, tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32> loc("masked")
    %w = kiln.constant {name = "lm_head"} dense<0.5> : tensor<4x5xf32>
    %l = kiln.matmul %m, %w : (tensor<?x?x4xf32>, tensor<4x5xf32>) -> tensor<?x?x5xf32> loc("lm_head_mm")
    %s = kiln.shape %l {end = 3 : i64, start = 0 : i64} : (tensor<?x?x5xf32>) -> tensor<3xi64> loc("shape")
    %r = kiln.reshape %l, %s {allowzero = 0 : i64} : (tensor<?x?x5xf32>, tensor<3xi64>) -> tensor<?x?x5xf32> loc("view")
    return %r, %present : tensor<?x?x5xf32>, tensor<?x?x4xf32>
  }
}
)mlir";

TEST_F(PlanWriterTest, DecoderGraphLoadsInTheRuntime) {
  PlanExtras extras;
  extras.producer = "pytorch 2.1";
  extras.opset = 17;
  extras.compilerVersion = "test";
  auto summary = build(kDecoder, path("decoder.plan"), extras);
  ASSERT_TRUE(static_cast<bool>(summary)) << llvm::toString(summary.takeError());
  EXPECT_EQ(summary->numOps, 7u);
  EXPECT_EQ(summary->numWeights, 5u);
  auto plan = load(path("decoder.plan"));
  ASSERT_TRUE(plan);
  const fb::Plan &f = plan->fb();

  // Graph inputs and outputs by their ONNX names, with symbolic dims.
  ASSERT_EQ(plan->inputs().size(), 2u);
  const PlanTensor &ids = plan->tensors()[plan->inputs()[0]];
  EXPECT_EQ(ids.name, "input_ids");
  ASSERT_EQ(ids.dims.size(), 2u);
  EXPECT_EQ(ids.dims[0].symbol, "batch");
  EXPECT_EQ(ids.dims[1].symbol, "seq");
  ASSERT_EQ(plan->outputs().size(), 2u);
  const PlanTensor &logits = plan->tensors()[plan->outputs()[0]];
  EXPECT_EQ(logits.name, "logits");
  ASSERT_EQ(logits.dims.size(), 3u);
  EXPECT_EQ(logits.dims[0].symbol, "batch"); // propagated by shape inference
  EXPECT_EQ(logits.dims[2].value, 5);
  EXPECT_EQ(plan->tensors()[plan->outputs()[1]].dims[1].symbol, "past + seq");

  // Ops in order, named by node, typed without the dialect prefix.
  ASSERT_EQ(plan->num_ops(), 7);
  EXPECT_EQ(f.ops()->Get(0)->type()->str(), "gather");
  EXPECT_EQ(f.ops()->Get(0)->name()->str(), "embed");
  // The omitted LayerNormalization bias is -1, in its ONNX position.
  const fb::Op *ln = findOp(*plan, "layer_normalization");
  ASSERT_TRUE(ln);
  ASSERT_EQ(ln->inputs()->size(), 3u);
  EXPECT_EQ(ln->inputs()->Get(2), -1);
  // Attributes sorted by name, typed.
  ASSERT_EQ(ln->attrs()->size(), 3u);
  EXPECT_EQ(ln->attrs()->Get(0)->name()->str(), "axis");
  EXPECT_EQ(ln->attrs()->Get(0)->i(), -1);
  const fb::Attr *eps = ln->attrs()->LookupByKey("epsilon");
  ASSERT_TRUE(eps);
  EXPECT_EQ(eps->kind(), fb::AttrKind::Float);
  EXPECT_FLOAT_EQ(eps->f(), 1e-5f);

  // Shape arithmetic is host; everything else has a slot.
  const fb::Op *shape = findOp(*plan, "shape");
  ASSERT_TRUE(shape);
  EXPECT_TRUE(plan->tensors()[shape->outputs()->Get(0)].host);
  EXPECT_EQ(plan->tensors()[shape->outputs()->Get(0)].slot, -1);
  EXPECT_FALSE(logits.host);
  EXPECT_GE(logits.slot, 0);

  // Weights: raw row-major floats, a splat expanded, bools one byte each.
  int wte = plan->FindTensor("wte"), lnw = plan->FindTensor("ln.weight"),
      mask = plan->FindTensor("mask");
  ASSERT_GE(wte, 0);
  ASSERT_GE(lnw, 0);
  ASSERT_GE(mask, 0);
  const float *wteData = static_cast<const float *>(plan->tensors()[wte].data);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(wteData[i], static_cast<float>(i));
  const float *lnData = static_cast<const float *>(plan->tensors()[lnw].data);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(lnData[i], 1.0f);
  ASSERT_EQ(plan->tensors()[mask].size, 4u);
  const uint8_t *maskData = static_cast<const uint8_t *>(plan->tensors()[mask].data);
  EXPECT_EQ(std::vector<uint8_t>(maskData, maskData + 4), (std::vector<uint8_t>{1, 0, 1, 1}));

  // Decoder roles by name.
  const fb::DecoderIO *d = f.decoder();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->input_ids(), plan->inputs()[0]);
  EXPECT_EQ(d->logits(), plan->outputs()[0]);
  EXPECT_EQ(d->attention_mask(), -1);
  ASSERT_EQ(d->kv()->size(), 1u);
  EXPECT_EQ(d->kv()->Get(0)->past(), plan->inputs()[1]);
  EXPECT_EQ(d->kv()->Get(0)->present(), plan->outputs()[1]);

  EXPECT_EQ(f.metadata()->producer()->str(), "pytorch 2.1");
  EXPECT_EQ(f.metadata()->opset(), 17);
  EXPECT_EQ(f.compiler_version()->str(), "test");
  EXPECT_GT(f.memory_plan()->num_slots(), 0);
}

// Inputs and results of a small MLP, and what the CPU executor computes.
const char kMlp[] = R"mlir(
module {
  func.func @main(%x: tensor<?x2xf32> {kiln.name = "x", kiln.dims = ["n", ""]}) -> (tensor<?x3xf32> {kiln.name = "y"}) {
    %w = kiln.constant dense<[[1.0, -1.0, 2.0], [0.5, 1.0, -3.0]]> : tensor<2x3xf32>
    %b = kiln.constant dense<[0.0, 1.0, 10.0]> : tensor<3xf32>
    %mm = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32> loc("mm")
    %add = kiln.add %mm, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32> loc("bias")
    %r = kiln.relu %add : (tensor<?x3xf32>) -> tensor<?x3xf32> loc("act")
    %s = kiln.shape %r {end = 2 : i64, start = 0 : i64} : (tensor<?x3xf32>) -> tensor<2xi64> loc("shape")
    %y = kiln.reshape %r, %s {allowzero = 0 : i64} : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x3xf32> loc("view")
    return %y : tensor<?x3xf32>
  }
}
)mlir";

TEST_F(PlanWriterTest, ExecutesOnTheCpuBackend) {
  auto summary = build(kMlp, path("mlp.plan"));
  ASSERT_TRUE(static_cast<bool>(summary)) << llvm::toString(summary.takeError());
  auto plan = load(path("mlp.plan"));
  ASSERT_TRUE(plan);
  auto exec = Executor::Create(*plan);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  std::vector<float> x = {1, 2, -1, 0.5};
  TensorView in;
  in.dtype = DType::kF32;
  in.shape = {2, 2};
  in.data = x.data();
  Status s = (*exec)->Bind({in});
  ASSERT_TRUE(s.ok()) << s.message();
  s = (*exec)->Run();
  ASSERT_TRUE(s.ok()) << s.message();
  const TensorView &y = (*exec)->output(0);
  ASSERT_EQ(y.shape, (Shape{2, 3}));
  // relu(x @ w + b), by hand.
  std::vector<float> expected = {2.0f, 2.0f, 6.0f, 0.0f, 2.5f, 6.5f};
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y.as<float>()[i], expected[i]) << i;
}

TEST_F(PlanWriterTest, SegmentedOptionalOperandsAndAttrKinds) {
  const char ir[] = R"mlir(
module {
  func.func @main(%x: tensor<4x6xf32> {kiln.name = "x"}) -> (tensor<3x2xf32> {kiln.name = "y"}, tensor<6x4xi64> {kiln.name = "z"}) {
    %s = kiln.constant dense<[0]> : tensor<1xi64>
    %e = kiln.constant dense<[2]> : tensor<1xi64>
    %sl = kiln.slice %x, %s, %e : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x6xf32> loc("slice")
    %w = kiln.constant dense<1.0> : tensor<3x2xf32>
    %g = kiln.gemm %sl, %w {alpha = 2.0 : f32, beta = 1.0 : f32, transA = 1 : i64, transB = 1 : i64} : (tensor<2x6xf32>, tensor<3x2xf32>) -> tensor<6x3xf32> loc("gemm")
    %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32> loc("t")
    %c = kiln.cast %t {to = 8 : i64} : (tensor<6x4xf32>) -> tensor<6x4xi64> loc("cast")
    %sh = kiln.constant dense<[3, 2]> : tensor<2xi64>
    %one = kiln.constant dense<[1]> : tensor<1xi64>
    %sl2 = kiln.slice %g, %s, %e axes %s steps %one : (tensor<6x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3xf32> loc("slice2")
    %y = kiln.reshape %sl2, %sh {allowzero = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32> loc("view")
    return %y, %c : tensor<3x2xf32>, tensor<6x4xi64>
  }
}
)mlir";
  auto summary = build(ir, path("attrs.plan"));
  ASSERT_TRUE(static_cast<bool>(summary)) << llvm::toString(summary.takeError());
  auto plan = load(path("attrs.plan"));
  ASSERT_TRUE(plan);
  const fb::Op *slice = plan->fb().ops()->Get(0);
  ASSERT_EQ(slice->type()->str(), "slice");
  ASSERT_EQ(slice->inputs()->size(), 5u); // data, starts, ends, axes=-1, steps=-1
  EXPECT_EQ(slice->inputs()->Get(3), -1);
  EXPECT_EQ(slice->inputs()->Get(4), -1);
  EXPECT_FALSE(slice->attrs() && slice->attrs()->LookupByKey("operandSegmentSizes"));
  const fb::Op *slice2 = plan->fb().ops()->Get(4);
  ASSERT_EQ(slice2->type()->str(), "slice");
  EXPECT_EQ(slice2->inputs()->size(), 5u);
  EXPECT_NE(slice2->inputs()->Get(3), -1);

  const fb::Op *gemm = findOp(*plan, "gemm");
  ASSERT_TRUE(gemm);
  ASSERT_EQ(gemm->inputs()->size(), 3u);
  EXPECT_EQ(gemm->inputs()->Get(2), -1); // C omitted: padded to the full arity
  EXPECT_EQ(gemm->attrs()->LookupByKey("alpha")->kind(), fb::AttrKind::Float);
  EXPECT_FLOAT_EQ(gemm->attrs()->LookupByKey("alpha")->f(), 2.0f);
  EXPECT_EQ(gemm->attrs()->LookupByKey("transB")->i(), 1);
  const fb::Op *t = findOp(*plan, "transpose");
  ASSERT_TRUE(t);
  const fb::Attr *perm = t->attrs()->LookupByKey("perm");
  ASSERT_TRUE(perm);
  EXPECT_EQ(perm->kind(), fb::AttrKind::Ints);
  EXPECT_EQ(std::vector<int64_t>(perm->ints()->begin(), perm->ints()->end()),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(findOp(*plan, "cast")->attrs()->LookupByKey("to")->i(), 8); // kiln DType I64
}

TEST_F(PlanWriterTest, ModelFilesAreEmbedded) {
  std::ofstream(path("config.json")) << R"({"model_type": "gpt2", "_name_or_path": "tiny",
      "vocab_size": 5, "n_positions": 64, "n_layer": 1, "n_embd": 4, "bos_token_id": 0,
      "eos_token_id": 4})";
  std::ofstream(path("generation_config.json"))
      << R"({"do_sample": true, "temperature": 0.7, "top_p": 0.9, "eos_token_id": [3, 4]})";
  std::ofstream(path("tokenizer.json")) << R"({"model": {"type": "BPE"}})";
  std::ofstream(path("tokenizer_config.json"))
      << R"({"chat_template": [{"name": "tool", "template": "T"}, {"name": "default", "template": "D"}]})";
  auto info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_EQ(info->filesUsed.size(), 4u);
  PlanExtras extras;
  extras.model = *info;
  extras.buildConfigJson = R"({"dtype": "fp32"})";
  auto summary = build(kDecoder, path("meta.plan"), extras);
  ASSERT_TRUE(static_cast<bool>(summary)) << llvm::toString(summary.takeError());
  auto plan = load(path("meta.plan"));
  ASSERT_TRUE(plan);
  const fb::Plan &f = plan->fb();
  EXPECT_EQ(f.metadata()->architecture()->str(), "gpt2");
  EXPECT_EQ(f.metadata()->model_name()->str(), "tiny");
  EXPECT_EQ(f.metadata()->context_length(), 64);
  EXPECT_EQ(f.metadata()->num_layers(), 1);
  EXPECT_EQ(f.metadata()->hidden_size(), 4);
  EXPECT_EQ(f.metadata()->bos_token_id(), 0);
  // generation_config.json's eos list wins over config.json's single id.
  EXPECT_EQ(std::vector<int64_t>(f.metadata()->eos_token_ids()->begin(),
                                 f.metadata()->eos_token_ids()->end()),
            (std::vector<int64_t>{3, 4}));
  EXPECT_FLOAT_EQ(f.generation()->temperature(), 0.7f);
  EXPECT_FLOAT_EQ(f.generation()->top_p(), 0.9f);
  EXPECT_EQ(f.generation()->top_k(), 50);          // Hugging Face's sampling default
  EXPECT_EQ(f.generation()->max_new_tokens(), 64); // the context, not a cut
  EXPECT_EQ(f.tokenizer_json()->str(), R"({"model": {"type": "BPE"}})");
  EXPECT_EQ(f.chat_template()->str(), "D");
  EXPECT_EQ(f.build_config_json()->str(), R"({"dtype": "fp32"})");
}

// The chat template is compiled by the runtime's renderer at build time: a
// Jinja feature outside its subset fails the build, naming the construct and
// its position, unless the build asks to store it anyway.
TEST_F(PlanWriterTest, ChatTemplateOutsideTheSubsetFailsTheBuild) {
  std::ofstream(path("tokenizer_config.json"))
      << R"({"chat_template": "{% for m in messages %}\n{% filter upper %}{{ m.content }}{% endfilter %}{% endfor %}"})";
  auto info = readModelFiles(tmp, "");
  ASSERT_FALSE(static_cast<bool>(info));
  std::string message = llvm::toString(info.takeError());
  EXPECT_NE(message.find("2:4"), std::string::npos) << message;
  EXPECT_NE(message.find("'{% filter %}'"), std::string::npos) << message;
  EXPECT_NE(message.find("--allow-unsupported-template"), std::string::npos) << message;

  auto allowed = readModelFiles(tmp, "", /*allowUnsupportedTemplate=*/true);
  ASSERT_TRUE(static_cast<bool>(allowed)) << llvm::toString(allowed.takeError());
  ASSERT_EQ(allowed->warnings.size(), 1u);
  EXPECT_NE(allowed->warnings[0].find("filter"), std::string::npos);
  EXPECT_NE(allowed->chatTemplate.find("filter upper"), std::string::npos);

  // The near miss: the same template with a filter expression compiles.
  std::ofstream(path("tokenizer_config.json"))
      << R"({"chat_template": "{% for m in messages %}{{ m.content | upper }}{% endfor %}"})";
  auto ok = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(ok)) << llvm::toString(ok.takeError());
  EXPECT_TRUE(ok->warnings.empty());
}

TEST_F(PlanWriterTest, ProvenanceRoundTrips) {
  PlanExtras extras;
  ProvenanceDesc &p = extras.provenance;
  p.present = true;
  p.kilnVersion = "9.8.7";
  p.sourceCommit = "0123456789abcdef0123456789abcdef01234567";
  p.buildHost = "builder-1";
  p.buildTime = "2026-12-03T07:37:41Z";
  p.buildConfigJson = R"({"config": {"dtype": "model"}})";
  p.model = {"model.onnx", 1234, std::string(64, 'a')};
  p.externalData = {{"model.onnx_data", 1ull << 33, std::string(64, 'b')},
                    {"sub/more.bin", 7, std::string(64, 'c')}};
  auto summary = build(kDecoder, path("prov.plan"), extras);
  ASSERT_TRUE(static_cast<bool>(summary)) << llvm::toString(summary.takeError());
  auto plan = load(path("prov.plan"));
  ASSERT_TRUE(plan);
  PlanProvenance got;
  ASSERT_TRUE(plan->provenance(&got));
  EXPECT_EQ(got.kiln_version, "9.8.7");
  EXPECT_EQ(got.source_commit, p.sourceCommit);
  EXPECT_EQ(got.build_host, "builder-1");
  EXPECT_EQ(got.build_time, "2026-12-03T07:37:41Z");
  EXPECT_EQ(got.build_config_json, p.buildConfigJson);
  EXPECT_EQ(got.model.path, "model.onnx");
  EXPECT_EQ(got.model.size, 1234u);
  EXPECT_EQ(got.model.sha256, std::string(64, 'a'));
  ASSERT_EQ(got.external_data.size(), 2u);
  EXPECT_EQ(got.external_data[0].size, 1ull << 33);
  EXPECT_EQ(got.external_data[1].path, "sub/more.bin");
  EXPECT_EQ(got.external_data[1].sha256, std::string(64, 'c'));

  // Without provenance (e.g. a plan from an older kiln), the accessor says so.
  ASSERT_TRUE(static_cast<bool>(build(kDecoder, path("plain.plan"))));
  auto plain = load(path("plain.plan"));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->provenance(&got));
}

TEST_F(PlanWriterTest, GreedyUnlessDoSample) {
  // Without do_sample, Hugging Face searches greedily whatever temperature
  // says; the repetition penalty still applies.
  std::ofstream(path("generation_config.json"))
      << R"({"temperature": 0.6, "top_k": 5, "repetition_penalty": 1.3})";
  auto info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_EQ(info->temperature, 0.0f);
  EXPECT_EQ(info->topK, 0);
  EXPECT_FLOAT_EQ(info->repetitionPenalty, 1.3f);
  EXPECT_FALSE(info->maxNewTokens.has_value());
}

TEST_F(PlanWriterTest, BrokenSideFilesAreErrors) {
  std::ofstream(path("config.json")) << R"({"vocab_size": "many"})";
  auto info = readModelFiles(tmp, "");
  ASSERT_FALSE(info);
  EXPECT_NE(llvm::toString(info.takeError()).find("\"vocab_size\" must be an integer"),
            std::string::npos);
  llvm::sys::fs::remove(path("config.json"));
  std::ofstream(path("tokenizer.json")) << "{not json";
  info = readModelFiles(tmp, "");
  ASSERT_FALSE(info);
  llvm::consumeError(info.takeError());
  // An explicit --tokenizer must exist.
  info = readModelFiles(tmp, path("missing/tokenizer.json"));
  ASSERT_FALSE(info);
  EXPECT_NE(llvm::toString(info.takeError()).find("not found"), std::string::npos);
}

// A sentence-transformers export's pooling reaches the plan; a Normalize
// module sets normalize, and a module kiln embed does not apply is a warning.
TEST_F(PlanWriterTest, PoolingConfigIsStored) {
  std::ofstream(path("modules.json"))
      << R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            {"idx": 3, "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  llvm::sys::fs::create_directory(path("1_Pooling"));
  std::ofstream(path("1_Pooling/config.json"))
      << R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})";
  auto info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_EQ(info->poolingMode, "cls");
  EXPECT_TRUE(info->poolingNormalize);
  ASSERT_EQ(info->warnings.size(), 1u);
  EXPECT_NE(info->warnings[0].find("models.Dense"), std::string::npos) << info->warnings[0];
  PlanExtras extras;
  extras.model = *info;
  ASSERT_TRUE(static_cast<bool>(build(kDecoder, path("pool.plan"), extras)));
  auto plan = load(path("pool.plan"));
  ASSERT_TRUE(plan);
  ASSERT_NE(plan->fb().pooling(), nullptr);
  EXPECT_EQ(plan->fb().pooling()->mode()->str(), "cls");
  EXPECT_TRUE(plan->fb().pooling()->normalize());
  EXPECT_EQ(plan->fb().format_minor(), kPlanFormatMinor);

  // Two modes at once (sentence-transformers concatenates them): stored, warned.
  std::ofstream(path("1_Pooling/config.json"))
      << R"({"pooling_mode_cls_token": true, "pooling_mode_max_tokens": true})";
  info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_EQ(info->poolingMode, "cls+max");
  EXPECT_NE(info->warnings.back().find("'cls+max'"), std::string::npos);
}

TEST_F(PlanWriterTest, NoPoolingConfigNoPoolingTable) {
  auto info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info));
  EXPECT_TRUE(info->poolingMode.empty());
  PlanExtras extras;
  extras.model = *info;
  ASSERT_TRUE(static_cast<bool>(build(kDecoder, path("nopool.plan"), extras)));
  auto plan = load(path("nopool.plan"));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->fb().pooling(), nullptr);
}

TEST_F(PlanWriterTest, BrokenPoolingFilesAreErrors) {
  const std::pair<const char *, const char *> cases[] = {
      {R"({"not": "a list"})", "not a JSON list"},
      {R"([{"path": "x"}])", "\"type\""},
      {R"([{"type": "sentence_transformers.models.Pooling"}])", "\"path\""},
      {R"([{"type": "sentence_transformers.models.Pooling", "path": "nowhere"}])", "not found"},
  };
  for (const auto &[modules, needle] : cases) {
    std::ofstream(path("modules.json")) << modules;
    auto info = readModelFiles(tmp, "");
    ASSERT_FALSE(info) << modules;
    const std::string message = llvm::toString(info.takeError());
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
  std::ofstream(path("modules.json"))
      << R"([{"type": "sentence_transformers.models.Pooling", "path": "p"}])";
  llvm::sys::fs::create_directory(path("p"));
  for (const char *config :
       {R"({"pooling_mode_mean_tokens": false})", R"({"pooling_mode_mean_tokens": "yes"})"}) {
    std::ofstream(path("p/config.json")) << config;
    auto info = readModelFiles(tmp, "");
    ASSERT_FALSE(info) << config;
    EXPECT_NE(llvm::toString(info.takeError()).find("p/config.json"), std::string::npos);
  }
}

// The build loads the tokenizer with the runtime's own code and warns, naming
// the unsupported feature, when it cannot run; a supported one gives no warning.
TEST_F(PlanWriterTest, TokenizerTheRuntimeCannotRunIsAWarning) {
  std::ofstream(path("tokenizer.json"))
      << R"({"model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}})";
  auto info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  ASSERT_EQ(info->warnings.size(), 1u);
  EXPECT_NE(info->warnings[0].find("'WordLevel'"), std::string::npos) << info->warnings[0];
  EXPECT_FALSE(info->tokenizerJson.empty()); // still stored
  // A Unigram model (T5, XLM-R) runs since issue 31.
  std::ofstream(path("tokenizer.json"))
      << R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}})";
  info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_TRUE(info->warnings.empty()) << info->warnings[0];
  std::ofstream(path("tokenizer.json"))
      << R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}},
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true}})";
  info = readModelFiles(tmp, "");
  ASSERT_TRUE(static_cast<bool>(info)) << llvm::toString(info.takeError());
  EXPECT_TRUE(info->warnings.empty()) << info->warnings[0];
}

TEST_F(PlanWriterTest, MaxNewTokensPrecedence) {
  PlanExtras x;
  EXPECT_EQ(effectiveMaxNewTokens(x), 128);
  x.model.contextLength = 2048;
  EXPECT_EQ(effectiveMaxNewTokens(x), 2048);
  x.model.maxNewTokens = 256;
  EXPECT_EQ(effectiveMaxNewTokens(x), 256);
  x.maxOutTokens = 4096;
  EXPECT_EQ(effectiveMaxNewTokens(x), 4096);
}

TEST_F(PlanWriterTest, FailureLeavesNoFile) {
  const char ir[] = R"mlir(
module {
  func.func @main(%x: tensor<*xf32> {kiln.name = "x"}) -> (tensor<*xf32> {kiln.name = "y"}) {
    %y = kiln.relu %x : (tensor<*xf32>) -> tensor<*xf32> loc("act")
    return %y : tensor<*xf32>
  }
}
)mlir";
  auto summary = build(ir, path("unranked.plan"));
  ASSERT_FALSE(summary);
  EXPECT_NE(llvm::toString(summary.takeError()).find("unknown rank"), std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(path("unranked.plan")));
  EXPECT_FALSE(llvm::sys::fs::exists(path("unranked.plan.tmp")));

  summary = build(kMlp, path("no/such/dir/mlp.plan"));
  ASSERT_FALSE(summary);
  EXPECT_NE(llvm::toString(summary.takeError()).find("cannot open"), std::string::npos);
}

TEST(DecoderIO, UnpairedPastIsAnError) {
  GraphDesc g;
  g.tensors.resize(3);
  g.tensors[0].name = "past_key_values.0.key";
  g.tensors[1].name = "past_key_values.0.value";
  g.tensors[2].name = "present.0.key";
  g.inputs = {0, 1};
  g.outputs = {2};
  auto d = detectDecoderIO(g);
  ASSERT_FALSE(d);
  EXPECT_NE(llvm::toString(d.takeError()).find("past_key_values.0.value has no matching"),
            std::string::npos);
  // Without any past input, present outputs are just outputs.
  g.inputs = {};
  auto e = detectDecoderIO(g);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_TRUE(e->kv.empty());
}

} // namespace
} // namespace kiln::plan
