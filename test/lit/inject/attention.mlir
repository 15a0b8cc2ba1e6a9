// RUN: kiln-opt %s -split-input-file -kiln-inject | FileCheck %s
// Rotary (rotate-half, full and partial) and attention in the forms Optimum
// (opset 18, SDPA with GQA repeat, Where mask and NaN guard) and TorchScript
// (opset 14/17, Div by sqrt(d)) emit, and near-misses.

// Llama rotary: q * cos + concat(-q[8:], q[:8]) * sin.
// CHECK-LABEL: func @rotary_full
// CHECK: kiln.rotary %arg0, %arg1, %arg2 {interleaved = 0 : i64, rotary_dim = 16 : i64}
// CHECK-NOT: kiln.neg
func.func @rotary_full(%q: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %z = kiln.constant dense<[0]> : tensor<1xi64>
  %h = kiln.constant dense<[8]> : tensor<1xi64>
  %e = kiln.constant dense<[9223372036854775807]> : tensor<1xi64>
  %ax = kiln.constant dense<[3]> : tensor<1xi64>
  %st = kiln.constant dense<[1]> : tensor<1xi64>
  %a = kiln.mul %q, %cos : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %lo = kiln.slice %q, %z, %h axes %ax steps %st : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %hi = kiln.slice %q, %h, %e axes %ax steps %st : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %n = kiln.neg %hi : (tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %r = kiln.concat %n, %lo {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %b = kiln.mul %r, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %y = kiln.add %a, %b : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// GPT-NeoX partial rotary: the first 4 of 16 dims rotate, the rest pass.
// CHECK-LABEL: func @rotary_partial
// CHECK: kiln.rotary %arg0, %arg1, %arg2 {interleaved = 0 : i64, rotary_dim = 4 : i64} : (tensor<1x2x3x16xf32>, tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x16xf32>
// CHECK-NOT: kiln.concat
func.func @rotary_partial(%q: tensor<1x2x3x16xf32>, %cos: tensor<1x1x3x4xf32>, %sin: tensor<1x1x3x4xf32>) -> tensor<1x2x3x16xf32> {
  %z = kiln.constant dense<[0]> : tensor<1xi64>
  %two = kiln.constant dense<[2]> : tensor<1xi64>
  %four = kiln.constant dense<[4]> : tensor<1xi64>
  %end = kiln.constant dense<[16]> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %qr = kiln.slice %q, %z, %four axes %ax : (tensor<1x2x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %qp = kiln.slice %q, %four, %end axes %ax : (tensor<1x2x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x12xf32>
  %a = kiln.mul %qr, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %lo = kiln.slice %qr, %z, %two axes %ax : (tensor<1x2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x2xf32>
  %hi = kiln.slice %qr, %two, %four axes %ax : (tensor<1x2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x2xf32>
  %n = kiln.neg %hi : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %r = kiln.concat %n, %lo {axis = 3 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %b = kiln.mul %sin, %r : (tensor<1x1x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %rot = kiln.add %b, %a : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = kiln.concat %rot, %qp {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x12xf32>) -> tensor<1x2x3x16xf32>
  return %y : tensor<1x2x3x16xf32>
}

// -----

// Near-miss: concat(x1, -x2) is not rotate-half (the halves are swapped).
// CHECK-LABEL: func @rotary_wrong_halves
// CHECK-NOT: kiln.rotary
func.func @rotary_wrong_halves(%q: tensor<1x2x3x4xf32>, %cos: tensor<1x1x3x4xf32>, %sin: tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %z = kiln.constant dense<[0]> : tensor<1xi64>
  %two = kiln.constant dense<[2]> : tensor<1xi64>
  %four = kiln.constant dense<[4]> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %a = kiln.mul %q, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %lo = kiln.slice %q, %z, %two axes %ax : (tensor<1x2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x2xf32>
  %hi = kiln.slice %q, %two, %four axes %ax : (tensor<1x2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x2xf32>
  %n = kiln.neg %lo : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %r = kiln.concat %n, %hi {axis = -1 : i64} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %b = kiln.mul %r, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = kiln.add %a, %b : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// Optimum opset 18 SDPA with GQA: sqrt(scale) on q and k^T, the repeat_kv
// Unsqueeze/Expand/Reshape of the cache, Where(b, 0, -inf) added, and the
// IsNaN guard. Attention reads the 2 KV heads directly, with the i1 mask.
// CHECK-LABEL: func @attention_sdpa_gqa
// CHECK: kiln.attention %arg0, %arg1, %arg2, %arg3 {causal = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xi1>) -> tensor<?x4x?x16xf32>
// CHECK-NOT: kiln.softmax
func.func @attention_sdpa_gqa(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %m: tensor<?x1x?x?xi1>, %s5: tensor<5xi64>, %s4: tensor<4xi64>) -> tensor<?x4x?x16xf32> {
  %two = kiln.constant dense<[2]> : tensor<1xi64>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %zero = kiln.constant dense<0.0> : tensor<1xf32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<1xf32>
  %ku = kiln.unsqueeze %k, %two : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ke = kiln.expand %ku, %s5 : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %kr = kiln.reshape %ke, %s4 {allowzero = 0 : i64} : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vu = kiln.unsqueeze %v, %two : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ve = kiln.expand %vu, %s5 : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %vr = kiln.reshape %ve, %s4 {allowzero = 0 : i64} : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %qs = kiln.mul %q, %half : (tensor<?x4x?x16xf32>, tensor<f32>) -> tensor<?x4x?x16xf32>
  %ks = kiln.mul %kt, %half : (tensor<?x4x16x?xf32>, tensor<f32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %qs, %ks : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %mf = kiln.where %m, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x1x?x?xf32>
  %sm = kiln.add %sc, %mf : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %sm {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %nan = kiln.is_nan %p : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xi1>
  %pg = kiln.where %nan, %zero, %p : (tensor<?x4x?x?xi1>, tensor<1xf32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %pg, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// TorchScript GPT-2 (eager): k^T from a [B, S, H, D] transpose, Div by
// sqrt(d) spelled as Pow(16, 0.5), where(causal, s, min) plus the padding mask.
// CHECK-LABEL: func @attention_gpt2_eager
// CHECK-DAG: %[[KT:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: %[[M:.*]] = kiln.where %arg3, %arg4, %{{.*}} : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
// CHECK: kiln.attention %arg0, %[[KT]], %arg2, %[[M]] {causal = 0 : i64, scale = 2.500000e-01 : f32}
func.func @attention_gpt2_eager(%q: tensor<?x4x?x16xf32>, %k: tensor<?x?x4x16xf32>, %v: tensor<?x4x?x16xf32>, %causal: tensor<1x1x?x?xi1>, %pad: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %d = kiln.constant dense<16.0> : tensor<f32>
  %h = kiln.constant dense<0.5> : tensor<f32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %sq = kiln.pow %d, %h : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %sd = kiln.div %sc, %sq : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %w = kiln.where %causal, %sd, %min : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %sm = kiln.add %w, %pad : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %sm {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Near-miss: the scale is a run-time tensor, not a constant.
// CHECK: attention: the scores are not q @ k^T scaled by a scalar constant
// CHECK-LABEL: func @attention_runtime_scale
// CHECK-NOT: kiln.attention
func.func @attention_runtime_scale(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>, %s: tensor<f32>) -> tensor<1x4x3x16xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %sc = kiln.matmul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %sd = kiln.div %sc, %s : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = kiln.softmax %sd {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Near-miss: a softmax over the query dim is not attention.
// CHECK: attention: the softmax is not over the key (last) dim
// CHECK-LABEL: func @attention_wrong_axis
// CHECK-NOT: kiln.attention
func.func @attention_wrong_axis(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %sc = kiln.matmul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %p = kiln.softmax %sc {axis = 2 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// torch.onnx dynamo (opset 18): k^T built as Reshape([B*H, S, D]) /
// Transpose(0, 2, 1) / Reshape([B, H, D, S]) from k's own Shape; the
// symbolic shapes prove it is k's [0, 1, 3, 2] transpose.
// CHECK-LABEL: func @attention_dynamo_kt
// CHECK: kiln.attention %arg0, %arg1, %arg2 {causal = 0 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: kiln.softmax
func.func @attention_dynamo_kt(%q: tensor<?x4x?x16xf32> {kiln.dims = ["b", "", "s", ""]}, %k: tensor<?x4x?x16xf32> {kiln.dims = ["b", "", "s", ""]}, %v: tensor<?x4x?x16xf32> {kiln.dims = ["b", "", "s", ""]}) -> tensor<?x4x?x16xf32> {
  %m1 = kiln.constant dense<[-1]> : tensor<1xi64>
  %d = kiln.constant dense<[16]> : tensor<1xi64>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %sh = kiln.shape %k {end = 4 : i64, start = 0 : i64} : (tensor<?x4x?x16xf32>) -> tensor<4xi64>
  %s = kiln.slice %sh, %m1, %m1 : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<0xi64>
  %two = kiln.constant dense<[2]> : tensor<1xi64>
  %three = kiln.constant dense<[3]> : tensor<1xi64>
  %zero = kiln.constant dense<[0]> : tensor<1xi64>
  %sdim = kiln.slice %sh, %two, %three : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %bh = kiln.slice %sh, %zero, %two : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %s3 = kiln.concat %m1, %sdim, %d {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = kiln.reshape %k, %s3 {allowzero = 0 : i64} : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %kt3 = kiln.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %s4 = kiln.concat %bh, %d, %sdim {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kt = kiln.reshape %kt3, %s4 {allowzero = 0 : i64} : (tensor<?x16x?xf32>, tensor<4xi64>) -> tensor<?x4x16x?xf32>
  %qs = kiln.mul %q, %half : (tensor<?x4x?x16xf32>, tensor<f32>) -> tensor<?x4x?x16xf32>
  %ks = kiln.mul %kt, %half : (tensor<?x4x16x?xf32>, tensor<f32>) -> tensor<?x4x16x?xf32>
  %sc = kiln.matmul %qs, %ks : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %sc {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Near-miss: the inner reshape merges heads with positions ([B, H*S, D]), so
// the transpose mixes them: not k^T.
// CHECK: attention: k is not transposed
// CHECK-LABEL: func @attention_dynamo_kt_wrong_merge
// CHECK-NOT: kiln.attention
func.func @attention_dynamo_kt_wrong_merge(%q: tensor<2x4x3x16xf32>, %k: tensor<2x4x3x16xf32>, %v: tensor<2x4x3x16xf32>) -> tensor<2x4x3x16xf32> {
  %s3 = kiln.constant dense<[2, 12, 16]> : tensor<3xi64>
  %s4 = kiln.constant dense<[2, 4, 16, 3]> : tensor<4xi64>
  %k3 = kiln.reshape %k, %s3 {allowzero = 0 : i64} : (tensor<2x4x3x16xf32>, tensor<3xi64>) -> tensor<2x12x16xf32>
  %kt3 = kiln.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<2x12x16xf32>) -> tensor<2x16x12xf32>
  %kt = kiln.reshape %kt3, %s4 {allowzero = 0 : i64} : (tensor<2x16x12xf32>, tensor<4xi64>) -> tensor<2x4x16x3xf32>
  %sc = kiln.matmul %q, %kt : (tensor<2x4x3x16xf32>, tensor<2x4x16x3xf32>) -> tensor<2x4x3x3xf32>
  %p = kiln.softmax %sc {axis = -1 : i64} : (tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<2x4x3x3xf32>, tensor<2x4x3x16xf32>) -> tensor<2x4x3x16xf32>
  return %o : tensor<2x4x3x16xf32>
}

// -----

// Gemma 2's soft-capped scores, cap * tanh(s / cap) before the mask: the
// cap moves into the fused attention and its Tanh goes with the Softmax.
// CHECK-LABEL: func @attention_soft_capped
// CHECK: kiln.attention %arg0, %arg1, %arg2, %arg3 {causal = 0 : i64, scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32}
// CHECK-NOT: kiln.tanh
// CHECK-NOT: kiln.softmax
func.func @attention_soft_capped(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x4x3x16xf32> {
  %scale = kiln.constant dense<0.25> : tensor<f32>
  %cap = kiln.constant dense<50.0> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %sc = kiln.matmul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %ss = kiln.mul %sc, %scale : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %sd = kiln.div %ss, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %t = kiln.tanh %sd : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Tanh")
  %tc = kiln.mul %t, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %sm = kiln.add %tc, %mask : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = kiln.softmax %sm {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Near-miss: 30 * tanh(s / 50) is not a soft-cap (its constants are not
// reciprocal): the Softmax names the Tanh as the reason, and the Tanh is
// not reported as an unfused MLP activation.
// CHECK: layer 0: attention not fused (/model/layers.0/self_attn/Softmax: attention: the scores go through a Tanh that is not a soft-cap cap * tanh(scores / cap) with one constant cap)
// CHECK-NOT: MLP not fused (/model/layers.0/self_attn/Tanh
// CHECK-LABEL: func @attention_tanh_not_a_cap
// CHECK-NOT: kiln.attention
func.func @attention_tanh_not_a_cap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x4x3x16xf32> {
  %scale = kiln.constant dense<0.25> : tensor<f32>
  %cap = kiln.constant dense<50.0> : tensor<f32>
  %out = kiln.constant dense<30.0> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %sc = kiln.matmul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %ss = kiln.mul %sc, %scale : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %sd = kiln.div %ss, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %t = kiln.tanh %sd : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Tanh")
  %tc = kiln.mul %t, %out : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %sm = kiln.add %tc, %mask : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = kiln.softmax %sm {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> loc("/model/layers.0/self_attn/Softmax")
  %o = kiln.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}
