// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the broadcasting binary ops.

// CHECK-LABEL: func @arith
func.func @arith(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %0 = kiln.add %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.sub
  %1 = kiln.sub %0, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.mul
  %2 = kiln.mul %1, %a : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.div
  %3 = kiln.div %2, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.max
  %4 = kiln.max %3, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.min
  %5 = kiln.min %4, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %5 : tensor<?x8xf32>
}

// CHECK-LABEL: func @pow
func.func @pow(%x: tensor<2x3xf32>, %e: tensor<i32>) -> tensor<2x3xf32> {
  // CHECK: kiln.pow %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
  %0 = kiln.pow %x, %e : (tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func @compare
func.func @compare(%a: tensor<?x8xi64>, %b: tensor<i64>) -> tensor<?x8xi1> {
  // CHECK: kiln.equal %{{.*}}, %{{.*}} : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  %0 = kiln.equal %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  // CHECK: kiln.less
  %1 = kiln.less %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  // CHECK: kiln.greater
  %2 = kiln.greater %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  // CHECK: kiln.less_or_equal
  %3 = kiln.less_or_equal %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  // CHECK: kiln.greater_or_equal
  %4 = kiln.greater_or_equal %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  // CHECK: kiln.and
  %5 = kiln.and %0, %1 : (tensor<?x8xi1>, tensor<?x8xi1>) -> tensor<?x8xi1>
  // CHECK: kiln.or
  %6 = kiln.or %5, %2 : (tensor<?x8xi1>, tensor<?x8xi1>) -> tensor<?x8xi1>
  // CHECK: kiln.xor
  %7 = kiln.xor %6, %3 : (tensor<?x8xi1>, tensor<?x8xi1>) -> tensor<?x8xi1>
  // CHECK: kiln.and
  %8 = kiln.and %7, %4 : (tensor<?x8xi1>, tensor<?x8xi1>) -> tensor<?x8xi1>
  return %8 : tensor<?x8xi1>
}

// CHECK-LABEL: func @where
func.func @where(%c: tensor<1x1x?x?xi1>, %x: tensor<?x12x?x?xf32>, %y: tensor<f32>) -> tensor<?x12x?x?xf32> {
  // CHECK: kiln.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x?x?xi1>, tensor<?x12x?x?xf32>, tensor<f32>) -> tensor<?x12x?x?xf32>
  %0 = kiln.where %c, %x, %y : (tensor<1x1x?x?xi1>, tensor<?x12x?x?xf32>, tensor<f32>) -> tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}
