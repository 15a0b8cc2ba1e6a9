// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the fused ops the inject phase creates (docs/fused-ops.md).

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: kiln.add_rms_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  %1:2 = kiln.add_rms_norm %x, %r, %w {epsilon = 1.0e-6 : f32} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  // CHECK: kiln.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  %2:2 = kiln.add_layer_norm %x, %r, %w, %b {epsilon = 1.0e-5 : f32} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  // CHECK: kiln.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon
  %3:2 = kiln.add_layer_norm %x, %r, %w {epsilon = 1.0e-5 : f32} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  return %0, %1#1, %2#0, %3#1 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func @projections
func.func @projections(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %wgu: tensor<64x256xf32>, %wd: tensor<128x64xf32>, %h: tensor<?x?x64xf16>) -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf16>) {
  // CHECK: kiln.linear %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh"} : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %0 = kiln.linear %x, %w, %b {activation = "gelu_tanh"} : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  // CHECK: kiln.linear %{{.*}}, %{{.*}} {activation = "none"} : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  %1 = kiln.linear %x, %w {activation = "none"} : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  // CHECK: kiln.gated_mlp %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu"} : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  %2 = kiln.gated_mlp %x, %wgu, %wd {activation = "silu"} : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: kiln.gelu %{{.*}} {approximate = "none"} : (tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  %3 = kiln.gelu %h {approximate = "none"} : (tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  return %0, %1, %2, %3 : tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf16>
}

// CHECK-LABEL: func @rotary_attention
func.func @rotary_attention(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>, %cos8: tensor<?x1x?x8xf32>, %mask: tensor<?x1x?x?xi1>, %fmask: tensor<1x1x?x?xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  // CHECK: kiln.rotary %{{.*}}, %{{.*}}, %{{.*}} {interleaved = 0 : i64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %0 = kiln.rotary %q, %cos, %sin {interleaved = 0 : i64, rotary_dim = 16 : i64} : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  // CHECK: kiln.rotary %{{.*}}, %{{.*}}, %{{.*}} {interleaved = 1 : i64, rotary_dim = 8 : i64}
  %1 = kiln.rotary %q, %cos8, %cos8 {interleaved = 1 : i64, rotary_dim = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xi1>) -> tensor<?x4x?x16xf32>
  %2 = kiln.attention %0, %k, %v, %mask {causal = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xi1>) -> tensor<?x4x?x16xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = 1 : i64, scale = 1.250000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  %3 = kiln.attention %1, %k, %v {causal = 1 : i64, scale = 0.125 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// CHECK-LABEL: func @paged_attention
func.func @paged_attention(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>, %kc: tensor<?x2x?x16xf32>, %vc: tensor<?x2x?x16xf32>, %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x4x?x16xf32> {
  // CHECK: kiln.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x16xf32>
  %0 = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {scale = 0.25 : f32} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x16xf32>
  return %0 : tensor<1x4x?x16xf32>
}

// Gemma 2's local layer: a sliding window and a soft-cap; attention's cap.
// CHECK-LABEL: func @paged_attention_window_softcap
func.func @paged_attention_window_softcap(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>, %kc: tensor<?x2x?x16xf32>, %vc: tensor<?x2x?x16xf32>, %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>, %kd: tensor<?x2x?x16xf32>) -> (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) {
  // CHECK: kiln.paged_attention {{.*}} {scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32, window = 4096 : i64}
  %0 = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {scale = 0.25 : f32, softcap = 50.0 : f32, window = 4096 : i64} : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x16xf32>
  // CHECK: kiln.attention {{.*}} {causal = 1 : i64, scale = 2.500000e-01 : f32, softcap = 3.000000e+01 : f32}
  %1 = kiln.attention %q, %kd, %kd {causal = 1 : i64, scale = 0.25 : f32, softcap = 30.0 : f32} : (tensor<1x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<1x4x?x16xf32>
  return %0, %1 : tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>
}

// A half norm or rotary takes f32 parameters (its scale, bias and cos/sin
// tables), as half plans keep them.
// CHECK-LABEL: func @half_with_f32_params
func.func @half_with_f32_params(%x: tensor<?x64xbf16>, %r: tensor<?x64xbf16>, %w: tensor<64xf32>, %q: tensor<1x4x?x16xf16>, %cos: tensor<1x1x?x16xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<1x4x?x16xf16>) {
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {{.*}} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<?x64xbf16>, tensor<64xf32>) -> tensor<?x64xbf16>
  // CHECK: kiln.add_layer_norm {{.*}} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  %1:2 = kiln.add_layer_norm %x, %r, %w, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>)
  // CHECK: kiln.rotary {{.*}} : (tensor<1x4x?x16xf16>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf16>
  %2 = kiln.rotary %q, %cos, %cos {interleaved = 0 : i64, rotary_dim = 16 : i64} : (tensor<1x4x?x16xf16>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf16>
  return %0, %1#1, %2 : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<1x4x?x16xf16>
}

// The token-major layout: q, k_new, v_new and the result are [1, T, H, D].
// CHECK-LABEL: func @paged_attention_bshd
func.func @paged_attention_bshd(%q: tensor<1x?x4x16xf32>, %k: tensor<1x?x2x16xf32>, %v: tensor<1x?x2x16xf32>, %kc: tensor<?x2x?x16xf32>, %vc: tensor<?x2x?x16xf32>, %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x4x16xf32> {
  // CHECK: kiln.paged_attention {{.*}} {layout = "bshd", scale = 2.500000e-01 : f32} : ({{.*}}) -> tensor<1x?x4x16xf32>
  %0 = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.25 : f32} : (tensor<1x?x4x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x16xf32>
  return %0 : tensor<1x?x4x16xf32>
}

// CHECK-LABEL: func @int8_projections
func.func @int8_projections(%x: tensor<?x?x64xf32>, %w: tensor<64x256xi8>, %s: tensor<256xf32>, %b: tensor<256xf32>, %wgu: tensor<64x256xi8>, %wd: tensor<128x64xi8>, %sd: tensor<64xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x64xf32>) {
  // CHECK: kiln.linear_q8 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "relu"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %0 = kiln.linear_q8 %x, %w, %s, %b {activation = "relu"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  // CHECK: kiln.linear_q8 %{{.*}}, %{{.*}}, %{{.*}} {activation = "none", activations = "int8"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %1 = kiln.linear_q8 %x, %w, %s {activation = "none", activations = "int8"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>) -> tensor<?x?x256xf32>
  // CHECK: kiln.gated_mlp_q8 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>, tensor<128x64xi8>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = kiln.gated_mlp_q8 %x, %wgu, %s, %wd, %sd {activation = "silu"} : (tensor<?x?x64xf32>, tensor<64x256xi8>, tensor<256xf32>, tensor<128x64xi8>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %0, %1, %2 : tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func @moe
func.func @moe(%x: tensor<?x64xf32>, %wr: tensor<64x8xf32>, %wgu: tensor<8x64x64xf32>, %wd: tensor<8x32x64xf32>) -> tensor<?x64xf32> {
  // CHECK: kiln.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<?x64xf32>, tensor<64x8xf32>, tensor<8x64x64xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  %0 = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<?x64xf32>, tensor<64x8xf32>, tensor<8x64x64xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
