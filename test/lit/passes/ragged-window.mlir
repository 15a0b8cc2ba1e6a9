// RUN: kiln-opt %s -kiln-ragged='sliding-window=6' | FileCheck %s --check-prefix=MASK
// RUN: kiln-opt %s -kiln-ragged='sliding-window=7 sliding-layers=0,1' | FileCheck %s --check-prefix=LIST
// RUN: kiln-opt %s -kiln-ragged='sliding-window=7' | FileCheck %s --check-prefix=ALL
// RUN: kiln-opt %s -kiln-ragged | FileCheck %s --check-prefix=NONE
// kiln-ragged's sliding windows: a layer whose mask is computed with the
// model's window (here layer 0's `pos > pos - 6`) gets `window`; the other
// (a padding mask and a limit read from a size) does not. When no mask mentions the window, the
// config's layer list decides, else every layer gets it. A soft-cap
// carries over either way.

// MASK: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32, window = 6 : i64}
// MASK: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32}
// LIST: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32}
// LIST: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, window = 7 : i64}
// ALL: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32, window = 7 : i64}
// ALL: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, window = 7 : i64}
// NONE: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32}
// NONE: kiln.paged_attention {{.*}} {scale = 5.000000e-01 : f32}
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask", kiln.dims = ["batch", "total"]},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids", kiln.dims = ["batch", "seq"]},
                %pk0: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %pv0: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.value"},
                %pk1: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.1.key"},
                %pv1: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.1.value"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits", kiln.dims = ["batch", "seq", ""]},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.value"},
        tensor<?x2x?x4xf32> {kiln.name = "present.1.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.1.value"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wq = kiln.constant dense<0.25> : tensor<8x16xf32>
  %wk = kiln.constant dense<0.125> : tensor<8x8xf32>
  %wo = kiln.constant dense<0.25> : tensor<16x8xf32>
  %wh = kiln.constant dense<1.0> : tensor<8x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %shape4 = kiln.constant dense<[1, -1, 4, 4]> : tensor<4xi64>
  %shape3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  %win = kiln.constant dense<6> : tensor<i64>
  // Layer 1's mask: padding only. Layer 0's: also pos > pos - 6.
  %pad = kiln.cast %mask {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %early = kiln.sub %pos, %win : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %recent = kiln.greater %pos, %early : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi1>
  %slide = kiln.and %pad, %recent : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  // Near miss: layer 1's mask reads the size of a tensor computed with 6
  // (as a later layer's mask reads shapes an earlier layer made): not W.
  %t6 = kiln.add %pos, %win : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %n6 = kiln.size %t6 : (tensor<?x?xi64>) -> tensor<i64>
  %lim = kiln.less %pos, %n6 : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %global = kiln.and %pad, %lim : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q1 = kiln.reshape %q0, %shape4 {allowzero = 0 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<1x?x4x4xf32>
  %k1 = kiln.reshape %k0, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %q = kiln.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall0 = kiln.concat %pk0, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall0 = kiln.concat %pv0, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o0 = kiln.attention %q, %kall0, %vall0, %slide {causal = 1 : i64, scale = 0.5 : f32, softcap = 50.0 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi1>) -> tensor<1x4x?x4xf32>
  %kall1 = kiln.concat %pk1, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall1 = kiln.concat %pv1, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o1 = kiln.attention %q, %kall1, %vall1, %global {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi1>) -> tensor<1x4x?x4xf32>
  %o = kiln.add %o0, %o1 : (tensor<1x4x?x4xf32>, tensor<1x4x?x4xf32>) -> tensor<1x4x?x4xf32>
  %ot = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  %o3 = kiln.reshape %ot, %shape3 {allowzero = 0 : i64} : (tensor<1x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %hs = kiln.linear %o3, %wo {activation = "none"} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  %logits = kiln.linear %hs, %wh {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %logits, %kall0, %vall0, %kall1, %vall1 : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}
