// RUN: kiln-opt %s -split-input-file -kiln-inject | FileCheck %s
// RMSNorm, the LayerNorm decomposition and residual add + norm, in the forms
// Optimum/TorchScript exports emit, and near-misses that must stay unfused.

// Llama (Optimum, opsets 14 and 18): Pow / ReduceMean / Add / Sqrt / Div(1, .)
// / Mul, with Casts around, then the scale Mul; the residual Add before it
// becomes add_rms_norm.
// CHECK: kiln.injection_report = "kernel injection: 0 of 0 layers fully injected
// CHECK-LABEL: func @rms_llama
// CHECK: %[[SUM:.*]], %[[Y:.*]] = kiln.add_rms_norm %arg0, %arg1, %{{.*}} {epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: kiln.reduce_mean
// CHECK: return %[[Y]], %[[SUM]]
func.func @rms_llama(%a: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %x = kiln.add %a, %b : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %xc = kiln.cast %x {to = 1 : i64} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %sq = kiln.pow %xc, %two : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>
  %e = kiln.add %m, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = kiln.sqrt %e : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %inv = kiln.div %one, %s : (tensor<f32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = kiln.mul %xc, %inv : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  %nc = kiln.cast %n {to = 1 : i64} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %y = kiln.mul %w, %nc : (tensor<4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %y, %x : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// Reciprocal and x * x spellings; Gemma's `* (1 + w)` becomes a new weight.
// CHECK-LABEL: func @rms_reciprocal_gemma
// CHECK: %[[W:.*]] = kiln.constant {name = "gemma.norm.plus_offset"} dense_resource
// CHECK: kiln.rms_norm %arg0, %[[W]] {epsilon = 9.99999997E-7 : f32}
func.func @rms_reciprocal_gemma(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant {name = "gemma.norm"} dense<[0.5, 0.0, -0.5, 1.0]> : tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %axes = kiln.constant dense<[1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.mul %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %e = kiln.add %eps, %m : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %inv = kiln.reciprocal %s : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = kiln.mul %x, %inv : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %w1 = kiln.add %w, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = kiln.mul %n, %w1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Near-miss: epsilon added after the square root is not RMSNorm.
// CHECK: layer 0: norm not fused (/model/layers.0/input_layernorm/ReduceMean: RMSNorm: epsilon is added after the square root (sqrt(mean) + eps), not inside it)
// CHECK-LABEL: func @rms_eps_outside_sqrt
// CHECK-NOT: kiln.rms_norm
// CHECK: kiln.reduce_mean
func.func @rms_eps_outside_sqrt(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %m = kiln.reduce_mean %sq, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("/model/layers.0/input_layernorm/ReduceMean")
  %s = kiln.sqrt %m : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = kiln.add %s, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %n = kiln.div %x, %e : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %y = kiln.mul %n, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Near-miss: a mean over a dim other than the last.
// CHECK: RMSNorm: the mean is not over the last dim only
// CHECK-LABEL: func @rms_wrong_axis
// CHECK-NOT: kiln.rms_norm
func.func @rms_wrong_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
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

// LayerNorm as exported before opset 17 (TorchScript opset 14): Sub of the
// mean, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul scale, Add bias.
// CHECK-LABEL: func @layer_norm_decomposed
// CHECK: kiln.layer_normalization %arg0, %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64}
// CHECK-NOT: kiln.reduce_mean
func.func @layer_norm_decomposed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
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

// Near-miss: the variance is of x, not of x - mean.
// CHECK: (/h.0/ln_1/ReduceMean: LayerNorm: no mean of (x - mean)^2)
// CHECK-LABEL: func @layer_norm_wrong_variance
// CHECK-NOT: kiln.layer_normalization
// CHECK-NOT: kiln.rms_norm
func.func @layer_norm_wrong_variance(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %axes = kiln.constant dense<[-1]> : tensor<1xi64>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %mu = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32> loc("/h.0/ln_1/ReduceMean")
  %d = kiln.sub %x, %mu : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %s = kiln.sqrt %mu : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = kiln.div %d, %s : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  return %n : tensor<?x4xf32>
}

// -----

// ONNX's function-expanded LayerNormalization (the *_expanded node tests):
// Flatten, var = E[x^2] - E[x]^2, Flatten(W, 0), Reshape back. The mean and
// the inverse std stay: they are the Mean and InvStdDev outputs.
// CHECK-LABEL: func @layer_norm_expanded
// CHECK: %[[Y:.*]] = kiln.layer_normalization %arg0, %arg1, %arg2 {axis = 1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64} : (tensor<2x3x4x5xf32>, tensor<3x4x5xf32>, tensor<3x4x5xf32>) -> tensor<2x3x4x5xf32>
// CHECK: return %[[Y]],
func.func @layer_norm_expanded(%X: tensor<2x3x4x5xf32>, %W: tensor<3x4x5xf32>, %B: tensor<3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>) {
  %s1 = kiln.constant dense<[2, 1, 1, 1]> : tensor<4xi64>
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %sx = kiln.constant dense<[2, 3, 4, 5]> : tensor<4xi64>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %x2 = kiln.flatten %X {axis = 1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  %m = kiln.reduce_mean %x2, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x60xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %sq = kiln.mul %x2, %x2 : (tensor<2x60xf32>, tensor<2x60xf32>) -> tensor<2x60xf32>
  %msq = kiln.reduce_mean %sq, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x60xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %mm = kiln.mul %m, %m : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %var = kiln.sub %msq, %mm : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %ve = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = kiln.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %dev = kiln.sub %x2, %m : (tensor<2x60xf32>, tensor<2x1xf32>) -> tensor<2x60xf32>
  %n = kiln.div %dev, %sd : (tensor<2x60xf32>, tensor<2x1xf32>) -> tensor<2x60xf32>
  %w2 = kiln.flatten %W {axis = 0 : i64} : (tensor<3x4x5xf32>) -> tensor<1x60xf32>
  %sc = kiln.mul %n, %w2 : (tensor<2x60xf32>, tensor<1x60xf32>) -> tensor<2x60xf32>
  %b2 = kiln.flatten %B {axis = 0 : i64} : (tensor<3x4x5xf32>) -> tensor<1x60xf32>
  %bi = kiln.add %sc, %b2 : (tensor<2x60xf32>, tensor<1x60xf32>) -> tensor<2x60xf32>
  %y = kiln.reshape %bi, %sx {allowzero = 0 : i64} : (tensor<2x60xf32>, tensor<4xi64>) -> tensor<2x3x4x5xf32>
  %inv = kiln.reciprocal %sd : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %mean = kiln.reshape %m, %s1 {allowzero = 0 : i64} : (tensor<2x1xf32>, tensor<4xi64>) -> tensor<2x1x1x1xf32>
  %istd = kiln.reshape %inv, %s1 {allowzero = 0 : i64} : (tensor<2x1xf32>, tensor<4xi64>) -> tensor<2x1x1x1xf32>
  return %y, %mean, %istd : tensor<2x3x4x5xf32>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>
}

// -----

// Near-miss: the scale is a per-row tensor, not Flatten(W, 0) over the
// normalized dims; normalizing and scaling per row is not LayerNorm's scale.
// CHECK: expanded LayerNorm: the normalized value is not multiplied by Flatten(scale, 0)
// CHECK-LABEL: func @layer_norm_expanded_row_scale
// CHECK-NOT: kiln.layer_normalization
func.func @layer_norm_expanded_row_scale(%x2: tensor<2x60xf32>, %r: tensor<2x1xf32>) -> tensor<2x60xf32> {
  %ax = kiln.constant dense<1> : tensor<1xi64>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %m = kiln.reduce_mean %x2, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x60xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("/h.0/ln/ReduceMean")
  %sq = kiln.mul %x2, %x2 : (tensor<2x60xf32>, tensor<2x60xf32>) -> tensor<2x60xf32>
  %msq = kiln.reduce_mean %sq, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x60xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %mm = kiln.mul %m, %m : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %var = kiln.sub %msq, %mm : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %ve = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = kiln.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %dev = kiln.sub %x2, %m : (tensor<2x60xf32>, tensor<2x1xf32>) -> tensor<2x60xf32>
  %n = kiln.div %dev, %sd : (tensor<2x60xf32>, tensor<2x1xf32>) -> tensor<2x60xf32>
  %y = kiln.mul %n, %r : (tensor<2x60xf32>, tensor<2x1xf32>) -> tensor<2x60xf32>
  return %y : tensor<2x60xf32>
}
