// RUN: kiln-opt %s -split-input-file -kiln-cleanup -kiln-inject | FileCheck %s
// Injection must not depend on the values of constants that cleanup folds:
// a norm weight of ones (x * 1), a zero bias (x + 0), an epsilon of 0 and a
// constant attention scale of 1 disappear before kiln-inject runs. Each case
// is written unfolded, as an exporter emits it, and goes through cleanup
// first. Near-misses at the end must stay unfused.

// RMSNorm with a weight of ones (Llama as transformers initializes it), with
// the residual Add before it: cleanup drops the scale Mul, and the norm gets
// a unit scale made as a constant.
// CHECK-LABEL: func @rms_unit_scale
// CHECK: %[[W:.*]] = kiln.constant {name = "/model/layers.0/input_layernorm/ReduceMean.unit_scale"} dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[SUM:.*]], %[[Y:.*]] = kiln.add_rms_norm %arg0, %arg1, %[[W]] {epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: kiln.reduce_mean
// CHECK-NOT: kiln.mul
// CHECK: return %[[Y]], %[[SUM]]
func.func @rms_unit_scale(%a: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %w = kiln.constant {name = "model.layers.0.input_layernorm.weight"} dense<1.0> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %x = kiln.add %a, %b : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %sq = kiln.pow %x, %two : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x?x1xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %e = kiln.add %m, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = kiln.sqrt %e : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %inv = kiln.div %one, %s : (tensor<f32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = kiln.mul %x, %inv : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  %y = kiln.mul %w, %n : (tensor<4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %y, %x : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// An epsilon of 0: cleanup folds `mean + 0`, so the mean goes straight into
// the Sqrt.
// CHECK-LABEL: func @rms_eps_zero
// CHECK: kiln.rms_norm %arg0, %{{.*}} {epsilon = 0.000000e+00 : f32}
// CHECK-NOT: kiln.reduce_mean
func.func @rms_eps_zero(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<0.0> : tensor<f32>
  %sq = kiln.mul %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %e = kiln.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = kiln.div %x, %s : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %y = kiln.mul %n, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Mixed precision (an f16 model computing its norms in f32) with a weight of
// ones: the norm replaces the casts too and keeps the f16 input's type; its
// unit scale is f16.
// CHECK-LABEL: func @rms_unit_scale_f16
// CHECK: %[[W:.*]] = kiln.constant {name = "norm.unit_scale"} dense<1.000000e+00> : tensor<4xf16>
// CHECK: %[[Y:.*]] = kiln.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
// CHECK-NOT: kiln.cast
// CHECK: return %[[Y]]
func.func @rms_unit_scale_f16(%x: tensor<2x4xf16>) -> tensor<2x4xf16> {
  %w = kiln.constant dense<1.0> : tensor<4xf16>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %xc = kiln.cast %x {to = 1 : i64} : (tensor<2x4xf16>) -> tensor<2x4xf32>
  %sq = kiln.pow %xc, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %e = kiln.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = kiln.div %xc, %s : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %nc = kiln.cast %n {to = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf16>
  %y = kiln.mul %w, %nc : (tensor<4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
  return %y : tensor<2x4xf16>
}

// -----

// A scale that broadcasts per channel from a higher rank ([1, 1, 4], as an
// Unsqueezed weight folds) becomes the 1-D weight.
// CHECK-LABEL: func @rms_scale_broadcast
// CHECK: %[[W:.*]] = kiln.constant {name = "w3"} dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: kiln.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
func.func @rms_scale_broadcast(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %w = kiln.constant {name = "w3"} dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>
  %e = kiln.add %m, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = kiln.sqrt %e : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %inv = kiln.reciprocal %s : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = kiln.mul %x, %inv : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  %y = kiln.mul %n, %w : (tensor<?x?x4xf32>, tensor<1x1x4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// Qwen3's per-head q_norm over head_dim on [B, S, H, D], weight of ones,
// then the transpose to [B, H, S, D]: the norm keeps the Transpose after it.
// CHECK-LABEL: func @rms_per_head_unit
// CHECK: %[[W:.*]] = kiln.constant {name = "norm.unit_scale"} dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x2x4xf32>, tensor<4xf32>) -> tensor<?x?x2x4xf32>
// CHECK: kiln.transpose %[[N]]
func.func @rms_per_head_unit(%q: tensor<?x?x2x4xf32>) -> tensor<?x2x?x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %sq = kiln.pow %q, %two : (tensor<?x?x2x4xf32>, tensor<f32>) -> tensor<?x?x2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x2x4xf32>, tensor<1xi64>) -> tensor<?x?x2x1xf32>
  %e = kiln.add %m, %eps : (tensor<?x?x2x1xf32>, tensor<f32>) -> tensor<?x?x2x1xf32>
  %s = kiln.sqrt %e : (tensor<?x?x2x1xf32>) -> tensor<?x?x2x1xf32>
  %inv = kiln.div %one, %s : (tensor<f32>, tensor<?x?x2x1xf32>) -> tensor<?x?x2x1xf32>
  %n = kiln.mul %q, %inv : (tensor<?x?x2x4xf32>, tensor<?x?x2x1xf32>) -> tensor<?x?x2x4xf32>
  %y = kiln.mul %w, %n : (tensor<4xf32>, tensor<?x?x2x4xf32>) -> tensor<?x?x2x4xf32>
  %t = kiln.transpose %y {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x4xf32>) -> tensor<?x2x?x4xf32>
  return %t : tensor<?x2x?x4xf32>
}

// -----

// LayerNorm decomposed (TorchScript before opset 17) with a weight of ones
// and a bias of zeros (GPT-2 and BERT as initialized): both fold away, so
// the norm has a unit scale and no bias.
// CHECK-LABEL: func @layer_norm_unit_zero
// CHECK: %[[W:.*]] = kiln.constant {name = "/h.0/ln_1/ReduceMean.unit_scale"} dense<1.000000e+00> : tensor<4xf32>
// CHECK: kiln.layer_normalization %arg0, %[[W]] {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-NOT: kiln.reduce_mean
func.func @layer_norm_unit_zero(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<4xf32>
  %b = kiln.constant dense<0.0> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %mu = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32> loc("/h.0/ln_1/ReduceMean")
  %d = kiln.sub %x, %mu : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %sq = kiln.pow %d, %two : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %var = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %e = kiln.add %var, %eps : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %s = kiln.sqrt %e : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = kiln.div %d, %s : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %m = kiln.mul %n, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %y = kiln.add %m, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A weight of ones with a real bias: the bias Add follows the normalization
// directly and is taken as the norm's bias.
// CHECK-LABEL: func @layer_norm_unit_scale_bias
// CHECK: %[[B:.*]] = kiln.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
// CHECK: kiln.layer_normalization %arg0, %{{.*}}, %[[B]] {axis = -1 : i64
// CHECK-NOT: kiln.add
func.func @layer_norm_unit_scale_bias(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<4xf32>
  %b = kiln.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %mu = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %d = kiln.sub %x, %mu : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %sq = kiln.pow %d, %two : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %var = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %e = kiln.add %var, %eps : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %s = kiln.sqrt %e : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = kiln.div %d, %s : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %m = kiln.mul %n, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %y = kiln.add %m, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// ONNX's expanded LayerNormalization with W = 1, B = 0 and epsilon 0, as
// an exporter that already flattened its constants writes it ([1, N]
// instead of Flatten(W, 0)): the Mul, the Add and `var + 0` fold away. The
// unit scale takes the normalized dims' shape, [3, 4].
// CHECK-LABEL: func @layer_norm_expanded_folded
// CHECK: %[[W:.*]] = kiln.constant {name = "/ln/ReduceMean.unit_scale"} dense<1.000000e+00> : tensor<3x4xf32>
// CHECK: kiln.layer_normalization %arg0, %[[W]] {axis = 1 : i64, epsilon = 0.000000e+00 : f32, stash_type = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
func.func @layer_norm_expanded_folded(%X: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %w2 = kiln.constant dense<1.0> : tensor<1x12xf32>
  %b2 = kiln.constant dense<0.0> : tensor<1x12xf32>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %sx = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %eps = kiln.constant dense<0.0> : tensor<f32>
  %x2 = kiln.flatten %X {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %m = kiln.reduce_mean %x2, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x12xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("/ln/ReduceMean")
  %sq = kiln.mul %x2, %x2 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %msq = kiln.reduce_mean %sq, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x12xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %mm = kiln.mul %m, %m : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %var = kiln.sub %msq, %mm : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %ve = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = kiln.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %dev = kiln.sub %x2, %m : (tensor<2x12xf32>, tensor<2x1xf32>) -> tensor<2x12xf32>
  %n = kiln.div %dev, %sd : (tensor<2x12xf32>, tensor<2x1xf32>) -> tensor<2x12xf32>
  %sc = kiln.mul %n, %w2 : (tensor<2x12xf32>, tensor<1x12xf32>) -> tensor<2x12xf32>
  %bi = kiln.add %sc, %b2 : (tensor<2x12xf32>, tensor<1x12xf32>) -> tensor<2x12xf32>
  %y = kiln.reshape %bi, %sx {allowzero = 0 : i64} : (tensor<2x12xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// The same with a real scale already flattened to a [1, N] constant: it goes
// back to the normalized dims' [3, 4] shape.
// CHECK-LABEL: func @layer_norm_expanded_const_scale
// CHECK: %[[W:.*]] = kiln.constant {name = "W"} dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [5.000000e+00, {{.*}}> : tensor<3x4xf32>
// CHECK: kiln.layer_normalization %arg0, %[[W]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32
func.func @layer_norm_expanded_const_scale(%X: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %w2 = kiln.constant {name = "W"} dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]]> : tensor<1x12xf32>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %sx = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %x2 = kiln.flatten %X {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %m = kiln.reduce_mean %x2, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x12xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %sq = kiln.mul %x2, %x2 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %msq = kiln.reduce_mean %sq, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x12xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %mm = kiln.mul %m, %m : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %var = kiln.sub %msq, %mm : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %ve = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = kiln.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %dev = kiln.sub %x2, %m : (tensor<2x12xf32>, tensor<2x1xf32>) -> tensor<2x12xf32>
  %n = kiln.div %dev, %sd : (tensor<2x12xf32>, tensor<2x1xf32>) -> tensor<2x12xf32>
  %sc = kiln.mul %n, %w2 : (tensor<2x12xf32>, tensor<1x12xf32>) -> tensor<2x12xf32>
  %y = kiln.reshape %sc, %sx {allowzero = 0 : i64} : (tensor<2x12xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// Attention whose constant scale is 1 (a scale Mul by 1 folds away): no
// scale op is left, and the fused attention has scale 1.
// CHECK-LABEL: func @attention_unit_scale
// CHECK: kiln.attention %arg0, %arg1, %arg2 {causal = 0 : i64, scale = 1.000000e+00 : f32}
// CHECK-NOT: kiln.softmax
func.func @attention_unit_scale(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = kiln.mul %sc, %one : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %ss {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Attention divided by Sqrt(16): cleanup folds the Sqrt of the constant, so
// the Div is by the constant 4.
// CHECK-LABEL: func @attention_folded_sqrt_scale
// CHECK: kiln.attention %arg0, %arg1, %arg2 {causal = 0 : i64, scale = 2.500000e-01 : f32}
func.func @attention_folded_sqrt_scale(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %d = kiln.constant dense<16.0> : tensor<f32>
  %sd = kiln.sqrt %d : (tensor<f32>) -> tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = kiln.div %sc, %sd : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %ss {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// GELU after a linear whose bias is all zeros, with its constants computed
// from others (0.5 as 1 / 2, 1/sqrt(2) as Reciprocal(Sqrt(2))): cleanup
// folds the bias Add away and the constants to their values; the linear has
// no bias and the GELU folds into it.
// CHECK-LABEL: func @gelu_after_zero_bias
// CHECK: %[[Y:.*]] = kiln.linear %arg0, %{{[0-9]+}} {activation = "gelu"} : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
// CHECK-NOT: kiln.erf
// CHECK: return %[[Y]]
func.func @gelu_after_zero_bias(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = kiln.constant dense<0.0> : tensor<2xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.div %one, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %sq2 = kiln.sqrt %two : (tensor<f32>) -> tensor<f32>
  %isq2 = kiln.reciprocal %sq2 : (tensor<f32>) -> tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %h = kiln.add %m, %b : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %d = kiln.mul %h, %isq2 : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %e = kiln.erf %d : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %a = kiln.add %e, %one : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %hx = kiln.mul %h, %half : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %y = kiln.mul %hx, %a : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Sibling projections where only some biases survive cleanup (k's bias is
// all zeros and folds away): they still fuse, with zeros for k's part.
// CHECK-LABEL: func @siblings_zero_bias
// CHECK: %[[B:.*]] = kiln.constant {name = "wq.fused.bias"} dense_resource
// CHECK: %[[L:.*]] = kiln.linear %arg0, %{{.*}}, %[[B]] {activation = "none"} : (tensor<?x2xf32>, tensor<2x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
// CHECK: kiln.split %[[L]]
func.func @siblings_zero_bias(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %wq = kiln.constant {name = "wq"} dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = kiln.constant {name = "wk"} dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wv = kiln.constant {name = "wv"} dense<[[9.0, 1.0], [2.0, 3.0]]> : tensor<2x2xf32>
  %bq = kiln.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %bk = kiln.constant dense<0.0> : tensor<2xf32>
  %bv = kiln.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %q0 = kiln.matmul %x, %wq : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %q = kiln.add %q0, %bq : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %k0 = kiln.matmul %x, %wk : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %k = kiln.add %k0, %bk : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %v0 = kiln.matmul %x, %wv : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %v = kiln.add %v0, %bv : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  return %q, %k, %v : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// The report names the part that failed. A unit-weight RMSNorm whose mean
// is over the wrong dim stays unfused; its `x * inv` product feeds q_proj.
// That product is not a gated MLP and must not be blamed as one: the layer's
// MLP (a real gated MLP) is fused, and the norm is what the report names.
// CHECK: kernel injection: 0 of 1 layers fully injected
// CHECK-SAME: layer 0: norm not fused (/model/layers.0/input_layernorm/ReduceMean: RMSNorm: the mean is not over the last dim only)
// CHECK-NOT: MLP not fused
// CHECK-LABEL: func @report_blames_the_norm
// CHECK: kiln.gated_mlp
func.func @report_blames_the_norm(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[0]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %w = kiln.constant dense<1.0> : tensor<2xf32>
  %wq = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wg = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wu = kiln.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wd = kiln.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %sq = kiln.pow %x, %two : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<1x2xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %e = kiln.add %m, %eps : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
  %s = kiln.sqrt %e : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %inv = kiln.div %one, %s : (tensor<f32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %n = kiln.mul %x, %inv : (tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/input_layernorm/Mul")
  %y = kiln.mul %n, %w : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %q = kiln.matmul %y, %wq : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/self_attn/q_proj/MatMul")
  %g = kiln.matmul %x, %wg : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/gate_proj/MatMul")
  %sg = kiln.sigmoid %g : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/act_fn/Sigmoid")
  %a = kiln.mul %g, %sg : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/act_fn/Mul")
  %u = kiln.matmul %x, %wu : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/up_proj/MatMul")
  %gu = kiln.mul %a, %u : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/Mul")
  %d = kiln.matmul %gu, %wd : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("/model/layers.0/mlp/down_proj/MatMul")
  return %q, %d : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Near-miss: a constant that does not broadcast per channel (one value per
// row) is not a norm's scale; the norm is not fused.
// CHECK: RMSNorm: the normalized value is multiplied by a constant that is not a per-channel scale
// CHECK-LABEL: func @rms_row_scale
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.reduce_mean
func.func @rms_row_scale(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[[2.0], [3.0]]> : tensor<2x1xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %e = kiln.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = kiln.div %x, %s : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %y = kiln.mul %n, %w : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Near-miss: with a unit scale folded away, a mean over the wrong dim is
// still not RMSNorm.
// CHECK: RMSNorm: the mean is not over the last dim only
// CHECK-LABEL: func @rms_unit_scale_wrong_axis
// CHECK-NOT: kiln.rms_norm
func.func @rms_unit_scale_wrong_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[0]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<1x4xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %e = kiln.add %m, %eps : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %s = kiln.sqrt %e : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %n = kiln.div %x, %s : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %y = kiln.mul %n, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Near-miss: with eps 0 folded away, epsilon added after the square root is
// still refused.
// CHECK: RMSNorm: epsilon is added after the square root (sqrt(mean) + eps), not inside it
// CHECK-LABEL: func @rms_eps_after_sqrt_unit
// CHECK-NOT: kiln.rms_norm
func.func @rms_eps_after_sqrt_unit(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %s = kiln.sqrt %m : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = kiln.add %s, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %n = kiln.div %x, %e : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %n : tensor<2x4xf32>
}

// -----

// Near-miss: a bias of the wrong shape (one value per row) is not the
// norm's bias. The unit-scale LayerNorm fuses without it and the Add stays.
// CHECK-LABEL: func @layer_norm_row_bias
// CHECK: %[[N:.*]] = kiln.layer_normalization %arg0, %{{.*}} {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: kiln.add %[[N]], %{{.*}} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
func.func @layer_norm_row_bias(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %b = kiln.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %mu = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %d = kiln.sub %x, %mu : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %sq = kiln.pow %d, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %var = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %e = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = kiln.div %d, %s : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %y = kiln.add %n, %b : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Near-miss: a per-head scale that is a constant but not a scalar ([1, 4,
// 1, 1], different per head) is not attention's scale.
// CHECK: attention: the scores are not q @ k^T scaled by a scalar constant
// CHECK-LABEL: func @attention_per_head_scale
// CHECK-NOT: kiln.attention
func.func @attention_per_head_scale(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c = kiln.constant dense<[[[[0.25]], [[0.5]], [[0.25]], [[0.5]]]]> : tensor<1x4x1x1xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = kiln.mul %sc, %c : (tensor<?x4x?x?xf32>, tensor<1x4x1x1xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %ss {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}
