// RUN: kiln-opt %s -kiln-partition="tp-size=2 rank=1 row-parallel=*/mlp/proj/*" | FileCheck %s
// kiln's injection_policy: the named linear is row-parallel (rows, sum),
// the linear feeding it column-parallel; the report says the policy did it.

// CHECK-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22ffn_per_rank\22:[3,3],\22kind\22:\22row_parallel (injection_policy)\22
// CHECK: kiln.linear {{.*}} -> tensor<1x?x3xf32>
// CHECK: kiln.relu {{.*}} -> tensor<1x?x3xf32>
// CHECK: %[[Y:.*]] = kiln.linear {{.*}} : (tensor<1x?x3xf32>, tensor<3x8xf32>) -> tensor<1x?x8xf32>
// CHECK: kiln.all_reduce %[[Y]]
func.func @main(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w1 = kiln.constant {name = "fc"} dense<1.0> : tensor<8x6xf32>
  %w2 = kiln.constant {name = "proj"} dense<1.0> : tensor<6x8xf32>
  %h = kiln.linear %x, %w1 {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x6xf32>) -> tensor<1x?x6xf32> loc("/block/mlp/fc/MatMul")
  %g = kiln.relu %h : (tensor<1x?x6xf32>) -> tensor<1x?x6xf32>
  %y = kiln.linear %g, %w2 {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x8xf32>) -> tensor<1x?x8xf32> loc("/block/mlp/proj/MatMul")
  return %y : tensor<1x?x8xf32>
}

