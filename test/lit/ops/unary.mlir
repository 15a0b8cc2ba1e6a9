// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the unary elementwise ops, is_nan and the softmax family.

// CHECK-LABEL: func @float_unary
func.func @float_unary(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK: kiln.sqrt %{{.*}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %0 = kiln.sqrt %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.reciprocal
  %1 = kiln.reciprocal %0 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.exp
  %2 = kiln.exp %1 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.log
  %3 = kiln.log %2 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.erf
  %4 = kiln.erf %3 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.tanh
  %5 = kiln.tanh %4 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.sigmoid
  %6 = kiln.sigmoid %5 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.floor
  %7 = kiln.floor %6 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.ceil
  %8 = kiln.ceil %7 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.cos
  %9 = kiln.cos %8 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.sin
  %10 = kiln.sin %9 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %10 : tensor<?x8xf32>
}

// CHECK-LABEL: func @signed_unary
func.func @signed_unary(%x: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK: kiln.neg %{{.*}} : (tensor<4xi32>) -> tensor<4xi32>
  %0 = kiln.neg %x : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: kiln.relu
  %1 = kiln.relu %0 : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: kiln.abs
  %2 = kiln.abs %1 : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: kiln.identity
  %3 = kiln.identity %2 : (tensor<4xi32>) -> tensor<4xi32>
  return %3 : tensor<4xi32>
}

// A refined result type (static from dynamic) round-trips.
// CHECK-LABEL: func @not_and_is_nan
func.func @not_and_is_nan(%b: tensor<?xi1>, %f: tensor<2x?xbf16>) -> (tensor<3xi1>, tensor<2x?xi1>) {
  // CHECK: kiln.not %{{.*}} : (tensor<?xi1>) -> tensor<3xi1>
  %0 = kiln.not %b : (tensor<?xi1>) -> tensor<3xi1>
  // CHECK: kiln.is_nan %{{.*}} : (tensor<2x?xbf16>) -> tensor<2x?xi1>
  %1 = kiln.is_nan %f : (tensor<2x?xbf16>) -> tensor<2x?xi1>
  return %0, %1 : tensor<3xi1>, tensor<2x?xi1>
}

// CHECK-LABEL: func @softmax
func.func @softmax(%x: tensor<?x12x?x?xf16>) -> tensor<?x12x?x?xf16> {
  // CHECK: kiln.softmax %{{.*}} {axis = -1 : i64} : (tensor<?x12x?x?xf16>) -> tensor<?x12x?x?xf16>
  %0 = kiln.softmax %x {axis = -1 : i64} : (tensor<?x12x?x?xf16>) -> tensor<?x12x?x?xf16>
  // CHECK: kiln.log_softmax %{{.*}} {axis = 3 : i64}
  %1 = kiln.log_softmax %0 {axis = 3 : i64} : (tensor<?x12x?x?xf16>) -> tensor<?x12x?x?xf16>
  return %1 : tensor<?x12x?x?xf16>
}
