// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s
// The kiln op folders and canonicalization patterns.

// CHECK-LABEL: func @neutral
func.func @neutral(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = kiln.constant dense<0.0> : tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %a = kiln.add %x, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = kiln.mul %one, %a : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %c = kiln.div %b, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %d = kiln.identity %c : (tensor<4xf32>) -> tensor<4xf32>
  %e = kiln.transpose %d {perm = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: return %arg0
  return %e : tensor<4xf32>
}

// -----

// Near miss: x + 0 with broadcasting changes the type, so it stays.
// CHECK-LABEL: func @neutral_broadcast
func.func @neutral_broadcast(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %zero = kiln.constant dense<0.0> : tensor<2x4xf32>
  // CHECK: kiln.add
  %a = kiln.add %x, %zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a : tensor<2x4xf32>
}

// -----

// The attention scale 1 / sqrt(16) folds to 0.25.
// CHECK-LABEL: func @float_math
func.func @float_math() -> tensor<1xf32> {
  %c = kiln.constant dense<16.0> : tensor<1xf32>
  %one = kiln.constant dense<1.0> : tensor<1xf32>
  %s = kiln.sqrt %c : (tensor<1xf32>) -> tensor<1xf32>
  %r = kiln.div %one, %s : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  // CHECK-NEXT: %[[C:.*]] = kiln.constant dense<2.500000e-01> : tensor<1xf32>
  // CHECK-NEXT: return %[[C]]
  return %r : tensor<1xf32>
}

// -----

// CHECK-LABEL: func @shape_gather_concat_slice
func.func @shape_gather_concat_slice(%x: tensor<2x3x4xf32>) -> (tensor<2xi64>, tensor<3xi64>, tensor<1xi64>) {
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %idx = kiln.constant dense<[2, 0]> : tensor<2xi64>
  %g = kiln.gather %s, %idx {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %one = kiln.constant dense<9> : tensor<1xi64>
  %c = kiln.concat %one, %g {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %st = kiln.constant dense<-1> : tensor<1xi64>
  %en = kiln.constant dense<100> : tensor<1xi64>
  %sl = kiln.slice %s, %st, %en : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  // CHECK-DAG: %[[G:.*]] = kiln.constant dense<[4, 2]> : tensor<2xi64>
  // CHECK-DAG: %[[C:.*]] = kiln.constant dense<[9, 4, 2]> : tensor<3xi64>
  // CHECK-DAG: %[[S:.*]] = kiln.constant dense<4> : tensor<1xi64>
  // CHECK: return %[[G]], %[[C]], %[[S]]
  return %g, %c, %sl : tensor<2xi64>, tensor<3xi64>, tensor<1xi64>
}

// -----

// CHECK-LABEL: func @reshapes
func.func @reshapes(%x: tensor<2x6xf32>, %s: tensor<2xi64>) -> (tensor<3x4xf32>, tensor<?x?xf32>, tensor<2xi64>) {
  // Constants are hoisted to the top; the unsqueeze/squeeze of one folded.
  // CHECK-DAG: %[[C:.*]] = kiln.constant dense<[5, 6]> : tensor<2xi64>
  %a = kiln.constant dense<[4, 3]> : tensor<2xi64>
  %b = kiln.constant dense<[3, 4]> : tensor<2xi64>
  // Reshape of a reshape reads the original input.
  // CHECK: %[[R:.*]] = kiln.reshape %arg0, %{{.*}} {allowzero = 0 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  %r1 = kiln.reshape %x, %a {allowzero = 0 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  %r2 = kiln.reshape %r1, %b {allowzero = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  // Near miss: a shape that may copy a dim (0 entries) of the inner reshape.
  // CHECK: %[[I:.*]] = kiln.reshape %arg0, %arg1
  // CHECK: kiln.reshape %[[I]], %arg1
  %r3 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %r4 = kiln.reshape %r3, %s {allowzero = 0 : i64} : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // Unsqueeze of a constant.
  %c = kiln.constant dense<[5, 6]> : tensor<2xi64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %u = kiln.unsqueeze %c, %ax : (tensor<2xi64>, tensor<1xi64>) -> tensor<1x2xi64>
  %sq = kiln.squeeze %u, %ax : (tensor<1x2xi64>, tensor<1xi64>) -> tensor<2xi64>
  // CHECK: return %[[R]], %{{.*}}, %[[C]]
  return %r2, %r4, %sq : tensor<3x4xf32>, tensor<?x?xf32>, tensor<2xi64>
}

// -----

// Near miss: integer division by zero is left for the runtime to report.
// CHECK-LABEL: func @div_by_zero
func.func @div_by_zero() -> tensor<i64> {
  %a = kiln.constant dense<7> : tensor<i64>
  %z = kiln.constant dense<0> : tensor<i64>
  // CHECK: kiln.div
  %d = kiln.div %a, %z : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %d : tensor<i64>
}
