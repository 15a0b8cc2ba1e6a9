// RUN: kiln-opt %s -split-input-file -kiln-cleanup | FileCheck %s

// The whole cleanup pipeline: shape folding, CSE of the duplicated shape
// computations, dead-op removal and final types.
// CHECK-LABEL: func @cleanup
// CHECK-SAME: -> tensor<2x3x4xf32>
func.func @cleanup(%x: tensor<2x12xf32>, %unused: tensor<5xf32>) -> tensor<*xf32> {
  // CHECK-NEXT: %[[S:.*]] = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  // CHECK-NEXT: %[[R:.*]] = kiln.reshape %arg0, %[[S]] {allowzero = 0 : i64} : (tensor<2x12xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %[[Y:.*]] = kiln.add %[[R]], %[[R]] : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: return %[[Y]]
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c0b = kiln.constant dense<0> : tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %tail = kiln.constant dense<[3, 4]> : tensor<2xi64>
  %s = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<2x12xf32>) -> tensor<*xi64>
  %b = kiln.gather %s, %c0 {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = kiln.unsqueeze %b, %ax : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %shape = kiln.concat %b1, %tail {axis = 0 : i64} : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %r1 = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<2x12xf32>, tensor<*xi64>) -> tensor<*xf32>
  %r2 = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<2x12xf32>, tensor<*xi64>) -> tensor<*xf32>
  %dead = kiln.exp %unused : (tensor<5xf32>) -> tensor<5xf32>
  %y = kiln.add %r1, %r2 : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Near miss: ops with different attributes are not merged by CSE, and a
// result that is returned is not dead.
// CHECK-LABEL: func @no_merge
func.func @no_merge(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: kiln.softmax %arg0 {axis = 0 : i64}
  // CHECK: kiln.softmax %arg0 {axis = 1 : i64}
  %a = kiln.softmax %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = kiln.softmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}
