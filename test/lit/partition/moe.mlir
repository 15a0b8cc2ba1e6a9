// RUN: kiln-opt %s -kiln-partition="tp-size=2 rank=1" | FileCheck %s
// RUN: kiln-opt %s -kiln-partition="tp-size=3 rank=0" | FileCheck %s --check-prefix=UNEVEN
// kiln-partition on a mixture of experts: 4 experts of FFN 5 over hidden 8.
// Each rank keeps FFN columns of every expert (rank 1 of 2: [3, 5)) as one
// [E, H, 2 F_r] gate/up weight (two blocks of F: gate columns, then up) and
// one [E, F_r, H] down weight; the router stays whole; the partial result
// is summed across the ranks.

// CHECK-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22ffn_per_rank\22:[3,2],\22kind\22:\22moe\22,\22node\22:\22kiln.moe\22
// CHECK: %[[WR:.*]] = kiln.constant {name = "router"} {{.*}} : tensor<8x4xf32>
// CHECK: %[[GU:.*]] = kiln.constant {kiln.shard = {axis = 2 : i64, full_dim = 5 : i64, full_name = "w_gate_up", groups = 2 : i64, offset = 3 : i64{{.*}} : tensor<4x8x4xf32>
// CHECK: %[[D:.*]] = kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 5 : i64, full_name = "w_down", groups = 1 : i64, offset = 3 : i64{{.*}} : tensor<4x2x8xf32>
// CHECK: %[[P:.*]] = kiln.moe %{{.*}}, %[[WR]], %[[GU]], %[[D]] {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4x8x4xf32>, tensor<4x2x8xf32>) -> tensor<1x?x8xf32>
// CHECK: %[[S:.*]] = kiln.all_reduce %[[P]] {reduction = "sum"}
// CHECK: return %[[S]]

// UNEVEN: kiln.moe {{.*}} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4x8x4xf32>, tensor<4x2x8xf32>) -> tensor<1x?x8xf32>
// UNEVEN: kiln.all_reduce
func.func @main(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %wr = kiln.constant {name = "router"} dense<0.5> : tensor<8x4xf32>
  %wgu = kiln.constant {name = "w_gate_up"} dense<0.25> : tensor<4x8x10xf32>
  %wd = kiln.constant {name = "w_down"} dense<0.125> : tensor<4x5x8xf32>
  %y = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4x8x10xf32>, tensor<4x5x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}
