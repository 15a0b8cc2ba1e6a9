// The injection report's layer grouping: which ONNX node names carry a layer
// index, as the exporters of the architecture fixtures spell them.
#include "passes/InjectReport.h"

#include <gtest/gtest.h>

namespace kiln::inject {
namespace {

TEST(InjectReport, LayerOfExporterNodeNames) {
  EXPECT_EQ(layerOfName("/model/layers.3/self_attn/Softmax"), 3);            // Llama, Optimum
  EXPECT_EQ(layerOfName("/transformer/h.11/attn/Softmax"), 11);              // GPT-2
  EXPECT_EQ(layerOfName("/bert/encoder/layer.0/attention/self/Softmax"), 0); // BERT
  EXPECT_EQ(layerOfName("/gpt_neox/layers.1/mlp/act/Mul"), 1);               // GPT-NeoX
  EXPECT_EQ(layerOfName("/model/decoder/layers.2/fc1/Gemm"), 2);             // OPT
  EXPECT_EQ(layerOfName("/m/transformer/h.0/attn/Softmax"), 0);              // TorchScript
  EXPECT_EQ(layerOfName("blocks_7_attn_Softmax"), 7);
}

TEST(InjectReport, NamesWithoutALayerIndex) {
  EXPECT_EQ(layerOfName("/model/norm/ReduceMean"), -1);
  EXPECT_EQ(layerOfName("node_Softmax_191"), -1); // dynamo
  EXPECT_EQ(layerOfName("/model/layers/Softmax"), -1);
  EXPECT_EQ(layerOfName("/lm_head/MatMul"), -1);
  EXPECT_EQ(layerOfName("/model/shallow.3/x"), -1); // "h" must be a whole segment
  EXPECT_EQ(layerOfName(""), -1);
}

} // namespace
} // namespace kiln::inject
