// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the reductions, with and without the axes operand.

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<?x?x768xf32>, %axes: tensor<1xi64>) -> (tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?x?x768xf32>) {
  // CHECK: kiln.reduce_mean %{{.*}}, %{{.*}} {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>
  %0 = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>
  // CHECK: kiln.reduce_sum %{{.*}}, %{{.*}} {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %1 = kiln.reduce_sum %x, %axes {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  // CHECK: kiln.reduce_max %{{.*}} {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<f32>
  %2 = kiln.reduce_max %x {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<f32>
  // CHECK: kiln.reduce_min %{{.*}} {keepdims = 1 : i64, noop_with_empty_axes = 1 : i64} : (tensor<?x?x768xf32>) -> tensor<?x?x768xf32>
  %3 = kiln.reduce_min %x {keepdims = 1 : i64, noop_with_empty_axes = 1 : i64} : (tensor<?x?x768xf32>) -> tensor<?x?x768xf32>
  return %0, %1, %2, %3 : tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<f32>, tensor<?x?x768xf32>
}

// CHECK-LABEL: func @cumsum
func.func @cumsum(%m: tensor<?x?xi64>, %axis: tensor<i64>) -> tensor<?x?xi64> {
  // CHECK: kiln.cumsum %{{.*}}, %{{.*}} {exclusive = 1 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %0 = kiln.cumsum %m, %axis {exclusive = 1 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  return %0 : tensor<?x?xi64>
}
