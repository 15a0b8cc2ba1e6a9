// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of matmul, gemm and layer_normalization.

// CHECK-LABEL: func @matmul
func.func @matmul(%x: tensor<?x?x768xf32>, %w: tensor<768x3072xf32>, %v: tensor<768xf32>) -> (tensor<?x?x3072xf32>, tensor<?x?xf32>) {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?x768xf32>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32>
  %0 = kiln.matmul %x, %w : (tensor<?x?x768xf32>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32>
  // A 1-D right operand: its dim is contracted and dropped.
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?xf32>
  %1 = kiln.matmul %x, %v : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?xf32>
  return %0, %1 : tensor<?x?x3072xf32>, tensor<?x?xf32>
}

// CHECK-LABEL: func @gemm
func.func @gemm(%a: tensor<?x768xf32>, %b: tensor<3072x768xf32>, %c: tensor<3072xf32>) -> (tensor<?x3072xf32>, tensor<?x3072xf32>) {
  // CHECK: kiln.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
  %0 = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 0.5 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
  // CHECK: kiln.gemm %{{.*}}, %{{.*}} {alpha
  // CHECK-SAME: (tensor<?x768xf32>, tensor<3072x768xf32>) -> tensor<?x3072xf32>
  %1 = kiln.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<?x768xf32>, tensor<3072x768xf32>) -> tensor<?x3072xf32>
  return %0, %1 : tensor<?x3072xf32>, tensor<?x3072xf32>
}

// CHECK-LABEL: func @layer_norm
func.func @layer_norm(%x: tensor<?x?x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
  // CHECK: kiln.layer_normalization %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64} : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %0 = kiln.layer_normalization %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-5 : f32, stash_type = 1 : i64} : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  // CHECK: kiln.layer_normalization %{{.*}}, %{{.*}} {axis = 2 : i64
  // CHECK-SAME: (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  %1 = kiln.layer_normalization %0, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32, stash_type = 1 : i64} : (tensor<?x?x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
  return %0, %1 : tensor<?x?x768xf32>, tensor<?x?x768xf32>
}
