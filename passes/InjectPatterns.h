//===- InjectPatterns.h - kernel-injection rewrite patterns ------*- C++ -*-===//
//
// The pattern sets of the kiln-inject pass, one file per family. Each
// pattern is rooted at the op that identifies its subgraph (ReduceMean for a
// norm, Softmax for attention, the activation for an MLP) and reports every
// bail-out through notifyMatchFailure at that root, which is where the
// injection report looks for the reason a subgraph stayed unfused.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_INJECTPATTERNS_H
#define KILN_PASSES_INJECTPATTERNS_H

#include "compiler/dialect/ShapeInference.h"

#include "mlir/IR/PatternMatch.h"

namespace kiln::inject {

/// RMSNorm and the LayerNorm decomposition, rooted at ReduceMean.
void populateNormPatterns(mlir::RewritePatternSet &patterns);

/// ONNX's function-expanded LayerNormalization (Flatten, E[x^2] - E[x]^2,
/// Reshape back), rooted at its first ReduceMean.
void populateExpandedLayerNormPatterns(mlir::RewritePatternSet &patterns);

/// Residual Add + norm into add_rms_norm / add_layer_norm.
void populateResidualNormPatterns(mlir::RewritePatternSet &patterns);

/// GELU (erf and tanh forms), rooted at the Erf or Tanh.
void populateGeluPatterns(mlir::RewritePatternSet &patterns);

/// MatMul/Gemm with a constant weight (and a bias Add) to linear; the 2-D
/// reshapes around Gemm exports go when `shapes` proves the round trip.
void populateLinearPatterns(mlir::RewritePatternSet &patterns,
                            const kiln::ShapeInferenceContext *shapes);

/// ReLU, GELU and SiLU folded into the linear that feeds them.
void populateActivationPatterns(mlir::RewritePatternSet &patterns);

/// Gated MLP, rooted at the down projection.
void populateGatedMlpPatterns(mlir::RewritePatternSet &patterns);

/// A mixture-of-experts block (router, top-k, one gated_mlp per expert,
/// the scatter-add of their weighted outputs) into kiln.moe, rooted at the
/// TopK; after the gated-MLP stage.
void populateMoePatterns(mlir::RewritePatternSet &patterns);

/// Sibling projections of one input fused into one linear and a Split.
void populateSiblingPatterns(mlir::RewritePatternSet &patterns);

/// Rotary embedding (rotate-half, full and partial).
void populateRotaryPatterns(mlir::RewritePatternSet &patterns);

/// Attention rooted at Softmax, with the past-KV concat and GQA repeat;
/// `shapes` proves the dynamo exporter's reshaped k^T is a transpose.
void populateAttentionPatterns(mlir::RewritePatternSet &patterns,
                               const kiln::ShapeInferenceContext *shapes);

} // namespace kiln::inject

#endif // KILN_PASSES_INJECTPATTERNS_H
