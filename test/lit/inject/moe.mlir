// RUN: kiln-opt %s -split-input-file -kiln-inject | FileCheck %s
// A mixture-of-experts block as Hugging Face's sparse MoE exports it (router
// linear, softmax, top-k renormalized, the one-hot expert mask, and per
// expert: NonZero rows, a gated MLP, the weighted output scattered back and
// summed) becomes one kiln.moe with the experts' weights stacked; an export
// that computes only some experts stays unfused, with that reason.

// CHECK-LABEL: func @moe_two_experts
// CHECK: %[[WGU:.*]] = kiln.constant {{.*}} : tensor<2x8x8xf32>
// CHECK: %[[WD:.*]] = kiln.constant {{.*}} : tensor<2x4x8xf32>
// CHECK: %[[Y:.*]] = kiln.moe %arg0, %{{.*}}, %[[WGU]], %[[WD]] {activation = "silu", normalize = 1 : i64, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<8x2xf32>, tensor<2x8x8xf32>, tensor<2x4x8xf32>) -> tensor<?x8xf32>
// CHECK-NOT: kiln.top_k
// CHECK-NOT: kiln.non_zero
// CHECK-NOT: kiln.scatter_elements
// CHECK: return %[[Y]]
func.func @moe_two_experts(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wr = kiln.constant dense<[[0.1, -0.2], [0.3, 0.1], [0.0, 0.2], [-0.1, 0.1], [0.2, 0.2], [0.1, 0.0], [0.0, -0.3], [0.1, 0.1]]> : tensor<8x2xf32>
  %wgu0 = kiln.constant dense<0.1> : tensor<8x8xf32>
  %wd0 = kiln.constant dense<0.2> : tensor<4x8xf32>
  %wgu1 = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wd1 = kiln.constant dense<0.4> : tensor<4x8xf32>
  %k = kiln.constant dense<1> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %depth = kiln.constant dense<2> : tensor<i64>
  %onoff = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %logits = kiln.linear %x, %wr {activation = "none"} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/gate/MatMul")
  %p = kiln.softmax %logits {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/Softmax")
  %v, %i = kiln.top_k %p, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>) loc("/model/layers.0/mlp/TopK")
  %s = kiln.reduce_sum %v, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %w = kiln.div %v, %s : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %oh = kiln.one_hot %i, %depth, %onoff {axis = -1 : i64} : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %m = kiln.transpose %oh {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xs = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %z = kiln.constant_of_shape %xs {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = kiln.constant dense<0> : tensor<i64>
  %m0 = kiln.gather %m, %e0 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = kiln.cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = kiln.non_zero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows0 = kiln.gather %nz0, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr0 = kiln.gather %x, %rows0 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y0 = kiln.gated_mlp %xr0, %wgu0, %wd0 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow0 = kiln.gather %w, %rows0 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = kiln.mul %y0, %wrow0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx0 = kiln.unsqueeze %rows0, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = kiln.shape %yw0 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe0 = kiln.expand %idx0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = kiln.scatter_elements %z, %idxe0, %yw0 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a0 = kiln.add %z, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = kiln.constant dense<1> : tensor<i64>
  %m1 = kiln.gather %m, %e1 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = kiln.cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = kiln.non_zero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows1 = kiln.gather %nz1, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr1 = kiln.gather %x, %rows1 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y1 = kiln.gated_mlp %xr1, %wgu1, %wd1 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow1 = kiln.gather %w, %rows1 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = kiln.mul %y1, %wrow1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx1 = kiln.unsqueeze %rows1, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = kiln.shape %yw1 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe1 = kiln.expand %idx1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = kiln.scatter_elements %z, %idxe1, %yw1 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a1 = kiln.add %a0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a1 : tensor<?x8xf32>
}

// -----

// Near miss: expert 1 is never computed (an export traced over only the
// experts its example input hit).
// CHECK: layer 0: MoE not fused (/model/layers.0/mlp/TopK: moe: the export computes no output for experts 1 of 2
// CHECK-NOT: attention not fused (/model/layers.0/mlp/Softmax
// CHECK-LABEL: func @moe_missing_expert
// CHECK-NOT: kiln.moe
// CHECK: kiln.top_k
func.func @moe_missing_expert(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wr = kiln.constant dense<[[0.1, -0.2], [0.3, 0.1], [0.0, 0.2], [-0.1, 0.1], [0.2, 0.2], [0.1, 0.0], [0.0, -0.3], [0.1, 0.1]]> : tensor<8x2xf32>
  %wgu0 = kiln.constant dense<0.1> : tensor<8x8xf32>
  %wd0 = kiln.constant dense<0.2> : tensor<4x8xf32>
  %wgu1 = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wd1 = kiln.constant dense<0.4> : tensor<4x8xf32>
  %k = kiln.constant dense<1> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %depth = kiln.constant dense<2> : tensor<i64>
  %onoff = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %logits = kiln.linear %x, %wr {activation = "none"} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/gate/MatMul")
  %p = kiln.softmax %logits {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/Softmax")
  %v, %i = kiln.top_k %p, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>) loc("/model/layers.0/mlp/TopK")
  %s = kiln.reduce_sum %v, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %w = kiln.div %v, %s : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %oh = kiln.one_hot %i, %depth, %onoff {axis = -1 : i64} : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %m = kiln.transpose %oh {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xs = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %z = kiln.constant_of_shape %xs {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = kiln.constant dense<0> : tensor<i64>
  %m0 = kiln.gather %m, %e0 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = kiln.cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = kiln.non_zero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows0 = kiln.gather %nz0, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr0 = kiln.gather %x, %rows0 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y0 = kiln.gated_mlp %xr0, %wgu0, %wd0 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow0 = kiln.gather %w, %rows0 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = kiln.mul %y0, %wrow0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx0 = kiln.unsqueeze %rows0, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = kiln.shape %yw0 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe0 = kiln.expand %idx0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = kiln.scatter_elements %z, %idxe0, %yw0 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a0 = kiln.add %z, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a0 : tensor<?x8xf32>
}

// -----

// Near miss: the expert comes from `expert_hit` (which experts the input
// picked), as Mixtral's export in transformers 4.5x loops: refused with
// that reason.
// CHECK: layer 0: MoE not fused (/model/layers.0/mlp/TopK: moe: the export loops over the experts its example input hit
// CHECK-LABEL: func @moe_expert_hit
// CHECK-NOT: kiln.moe
func.func @moe_expert_hit(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wr = kiln.constant dense<[[0.1, -0.2], [0.3, 0.1], [0.0, 0.2], [-0.1, 0.1], [0.2, 0.2], [0.1, 0.0], [0.0, -0.3], [0.1, 0.1]]> : tensor<8x2xf32>
  %wgu0 = kiln.constant dense<0.1> : tensor<8x8xf32>
  %wd0 = kiln.constant dense<0.2> : tensor<4x8xf32>
  %wgu1 = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wd1 = kiln.constant dense<0.4> : tensor<4x8xf32>
  %k = kiln.constant dense<1> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %depth = kiln.constant dense<2> : tensor<i64>
  %onoff = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %logits = kiln.linear %x, %wr {activation = "none"} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/gate/MatMul")
  %p = kiln.softmax %logits {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/Softmax")
  %v, %i = kiln.top_k %p, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>) loc("/model/layers.0/mlp/TopK")
  %s = kiln.reduce_sum %v, %ax {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %w = kiln.div %v, %s : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %oh = kiln.one_hot %i, %depth, %onoff {axis = -1 : i64} : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %m = kiln.transpose %oh {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xs = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %z = kiln.constant_of_shape %xs {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x8xf32>
  %axes = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %hits = kiln.reduce_sum %m, %axes {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x1x?xi64>, tensor<2xi64>) -> tensor<2xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %hit = kiln.greater %hits, %zero : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  %hitnz = kiln.non_zero %hit : (tensor<2xi1>) -> tensor<1x?xi64>
  %first = kiln.constant dense<[0, 0]> : tensor<2xi64>
  %e0 = kiln.gather_nd %hitnz, %first {batch_dims = 0 : i64} : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<i64>
  %m0 = kiln.gather %m, %e0 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = kiln.cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = kiln.non_zero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows0 = kiln.gather %nz0, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr0 = kiln.gather %x, %rows0 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y0 = kiln.gated_mlp %xr0, %wgu0, %wd0 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow0 = kiln.gather %w, %rows0 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = kiln.mul %y0, %wrow0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx0 = kiln.unsqueeze %rows0, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = kiln.shape %yw0 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe0 = kiln.expand %idx0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = kiln.scatter_elements %z, %idxe0, %yw0 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a0 = kiln.add %z, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a0 : tensor<?x8xf32>
}

// -----

// Softmax after the selection (the top 1 of the router's logits, then a
// softmax over the picks): the same op, normalized.
// CHECK-LABEL: func @moe_softmax_after_selection
// CHECK: %[[Y:.*]] = kiln.moe %arg0, %{{.*}}, %{{.*}}, %{{.*}} {activation = "silu", normalize = 1 : i64, top_k = 1 : i64}
// CHECK-NOT: kiln.top_k
// CHECK-NOT: kiln.softmax
// CHECK: return %[[Y]]
func.func @moe_softmax_after_selection(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wr = kiln.constant dense<[[0.1, -0.2], [0.3, 0.1], [0.0, 0.2], [-0.1, 0.1], [0.2, 0.2], [0.1, 0.0], [0.0, -0.3], [0.1, 0.1]]> : tensor<8x2xf32>
  %wgu0 = kiln.constant dense<0.1> : tensor<8x8xf32>
  %wd0 = kiln.constant dense<0.2> : tensor<4x8xf32>
  %wgu1 = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wd1 = kiln.constant dense<0.4> : tensor<4x8xf32>
  %k = kiln.constant dense<1> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %depth = kiln.constant dense<2> : tensor<i64>
  %onoff = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %logits = kiln.linear %x, %wr {activation = "none"} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/gate/MatMul")
  %v0, %i = kiln.top_k %logits, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>) loc("/model/layers.0/mlp/TopK")
  %w = kiln.softmax %v0 {axis = 1 : i64} : (tensor<?x1xf32>) -> tensor<?x1xf32> loc("/model/layers.0/mlp/Softmax")
  %oh = kiln.one_hot %i, %depth, %onoff {axis = -1 : i64} : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %m = kiln.transpose %oh {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xs = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %z = kiln.constant_of_shape %xs {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = kiln.constant dense<0> : tensor<i64>
  %m0 = kiln.gather %m, %e0 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = kiln.cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = kiln.non_zero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows0 = kiln.gather %nz0, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr0 = kiln.gather %x, %rows0 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y0 = kiln.gated_mlp %xr0, %wgu0, %wd0 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow0 = kiln.gather %w, %rows0 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = kiln.mul %y0, %wrow0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx0 = kiln.unsqueeze %rows0, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = kiln.shape %yw0 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe0 = kiln.expand %idx0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = kiln.scatter_elements %z, %idxe0, %yw0 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a0 = kiln.add %z, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = kiln.constant dense<1> : tensor<i64>
  %m1 = kiln.gather %m, %e1 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = kiln.cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = kiln.non_zero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows1 = kiln.gather %nz1, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr1 = kiln.gather %x, %rows1 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y1 = kiln.gated_mlp %xr1, %wgu1, %wd1 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow1 = kiln.gather %w, %rows1 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = kiln.mul %y1, %wrow1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx1 = kiln.unsqueeze %rows1, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = kiln.shape %yw1 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe1 = kiln.expand %idx1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = kiln.scatter_elements %z, %idxe1, %yw1 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a1 = kiln.add %a0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a1 : tensor<?x8xf32>
}

// -----

// Near miss: the picked logits weighted by a sigmoid, not a softmax over
// the picks, stay unfused, and the report says why.
// CHECK: layer 0: MoE not fused (/model/layers.0/mlp/TopK: moe: the top-k of the router's logits is not weighted by a softmax over the picked experts
// CHECK-LABEL: func @moe_after_selection_unweighted
// CHECK: kiln.top_k
// CHECK-NOT: kiln.moe
func.func @moe_after_selection_unweighted(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wr = kiln.constant dense<[[0.1, -0.2], [0.3, 0.1], [0.0, 0.2], [-0.1, 0.1], [0.2, 0.2], [0.1, 0.0], [0.0, -0.3], [0.1, 0.1]]> : tensor<8x2xf32>
  %wgu0 = kiln.constant dense<0.1> : tensor<8x8xf32>
  %wd0 = kiln.constant dense<0.2> : tensor<4x8xf32>
  %wgu1 = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wd1 = kiln.constant dense<0.4> : tensor<4x8xf32>
  %k = kiln.constant dense<1> : tensor<1xi64>
  %ax = kiln.constant dense<[-1]> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %depth = kiln.constant dense<2> : tensor<i64>
  %onoff = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %logits = kiln.linear %x, %wr {activation = "none"} : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/gate/MatMul")
  %v0, %i = kiln.top_k %logits, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>) loc("/model/layers.0/mlp/TopK")
  %w = kiln.sigmoid %v0 : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %oh = kiln.one_hot %i, %depth, %onoff {axis = -1 : i64} : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %m = kiln.transpose %oh {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xs = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %z = kiln.constant_of_shape %xs {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = kiln.constant dense<0> : tensor<i64>
  %m0 = kiln.gather %m, %e0 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = kiln.cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = kiln.non_zero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows0 = kiln.gather %nz0, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr0 = kiln.gather %x, %rows0 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y0 = kiln.gated_mlp %xr0, %wgu0, %wd0 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow0 = kiln.gather %w, %rows0 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = kiln.mul %y0, %wrow0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx0 = kiln.unsqueeze %rows0, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = kiln.shape %yw0 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe0 = kiln.expand %idx0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = kiln.scatter_elements %z, %idxe0, %yw0 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a0 = kiln.add %z, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = kiln.constant dense<1> : tensor<i64>
  %m1 = kiln.gather %m, %e1 {axis = 0 : i64} : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = kiln.cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = kiln.non_zero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %rows1 = kiln.gather %nz1, %one {axis = 0 : i64} : (tensor<2x?xi64>, tensor<i64>) -> tensor<?xi64>
  %xr1 = kiln.gather %x, %rows1 {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y1 = kiln.gated_mlp %xr1, %wgu1, %wd1 {activation = "silu"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %wrow1 = kiln.gather %w, %rows1 {axis = 0 : i64} : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = kiln.mul %y1, %wrow1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %idx1 = kiln.unsqueeze %rows1, %ax : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = kiln.shape %yw1 {end = 2 : i64, start = 0 : i64} : (tensor<?x8xf32>) -> tensor<2xi64>
  %idxe1 = kiln.expand %idx1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = kiln.scatter_elements %z, %idxe1, %yw1 {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %a1 = kiln.add %a0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a1 : tensor<?x8xf32>
}
