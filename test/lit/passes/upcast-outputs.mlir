// RUN: kiln-opt %s -split-input-file -kiln-upcast-outputs | FileCheck %s
// kiln-upcast-outputs: half outputs become f32, except the KV cache's.

// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<?x8xf32> {kiln.name = "logits"}, tensor<1x2x?x4xf16> {kiln.name = "present.0.key"}, tensor<?x8xf32> {kiln.name = "hidden"})
// CHECK: %[[L:.*]] = kiln.cast %arg0 {to = 1 : i64} : (tensor<?x8xf16>) -> tensor<?x8xf32>
// CHECK: %[[H:.*]] = kiln.cast %arg2 {to = 1 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xf32>
// CHECK: return %[[L]], %arg1, %[[H]]
func.func @main(%l: tensor<?x8xf16>, %k: tensor<1x2x?x4xf16>, %h: tensor<?x8xbf16>)
    -> (tensor<?x8xf16> {kiln.name = "logits"}, tensor<1x2x?x4xf16> {kiln.name = "present.0.key"},
        tensor<?x8xbf16> {kiln.name = "hidden"}) {
  return %l, %k, %h : tensor<?x8xf16>, tensor<1x2x?x4xf16>, tensor<?x8xbf16>
}

// -----

// Near-miss: f32 and integer outputs are left alone.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: kiln.cast
// CHECK: return %arg0, %arg1 : tensor<?x8xf32>, tensor<?xi64>
func.func @plain(%l: tensor<?x8xf32>, %i: tensor<?xi64>) -> (tensor<?x8xf32>, tensor<?xi64>) {
  return %l, %i : tensor<?x8xf32>, tensor<?xi64>
}
