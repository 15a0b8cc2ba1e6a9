// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-shape-inference{annotate-dims=true}))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cleanup | FileCheck %s --check-prefix=CLEAN
// Shape inference of size, gather_nd and scatter_nd (values included, so
// shape subgraphs built from them fold), and the size folder.

// Size records its value: static, or one symbolic dim times the static ones.
// CHECK-LABEL: func @size_values
func.func @size_values(%x: tensor<?x8xf32> {kiln.dims = ["batch", ""]}) -> tensor<*xi64> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  // CHECK: kiln.size %{{.*}} : (tensor<?x8xf32>) -> tensor<i64>
  %n = kiln.size %x : (tensor<?x8xf32>) -> tensor<*xi64>
  // CHECK: kiln.range {{.*}} {kiln.dims = {{\[\[}}"8*batch"]]} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %r = kiln.range %c0, %n, %c1 : (tensor<i64>, tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  return %r : tensor<*xi64>
}

// -----

// ONNX's function-expanded LayerNormalization computes the rank as
// Size(Shape(X)): with a ranked X it folds to a constant in cleanup.
// CHECK-LABEL: func @size_of_shape
// CLEAN-LABEL: func @size_of_shape
func.func @size_of_shape(%x: tensor<?x?x768xf32>, %s: tensor<2x3x4xf32>) -> (tensor<*xi64>, tensor<*xi64>) {
  // CLEAN-NOT: kiln.size
  // CLEAN-DAG: %[[RANK:.*]] = kiln.constant dense<3> : tensor<i64>
  // CLEAN-DAG: %[[COUNT:.*]] = kiln.constant dense<24> : tensor<i64>
  // CLEAN: return %[[RANK]], %[[COUNT]] : tensor<i64>, tensor<i64>
  %shape = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<*xi64>
  %rank = kiln.size %shape : (tensor<*xi64>) -> tensor<*xi64>
  %count = kiln.size %s : (tensor<2x3x4xf32>) -> tensor<*xi64>
  return %rank, %count : tensor<*xi64>, tensor<*xi64>
}

// -----

// Size of a symbolic shape stays an op in cleanup.
// CLEAN-LABEL: func @size_dynamic
// CLEAN: kiln.size %arg0 : (tensor<?x8xf32>) -> tensor<i64>
func.func @size_dynamic(%x: tensor<?x8xf32>) -> tensor<*xi64> {
  %n = kiln.size %x : (tensor<?x8xf32>) -> tensor<*xi64>
  return %n : tensor<*xi64>
}

// -----

// gather_nd's result is indices.shape[:-1] + data.shape[batch_dims + m:];
// a batch dim the indices do not know comes from data.
// CHECK-LABEL: func @gather_nd_shapes
func.func @gather_nd_shapes(%mask: tensor<?x?xi1> {kiln.dims = ["batch", "seq"]}, %idx: tensor<?x?x2xi64> {kiln.dims = ["batch", "seq", ""]}, %h: tensor<?x?x768xf32> {kiln.dims = ["batch", "seq", ""]}, %bi: tensor<?x1xi64>) -> (tensor<*xi1>, tensor<*xf32>) {
  // CHECK: kiln.gather_nd {{.*}} {batch_dims = 0 : i64, kiln.dims = {{\[\[}}"batch", "seq"]]} : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
  %0 = kiln.gather_nd %mask, %idx {batch_dims = 0 : i64} : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<*xi1>
  // CHECK: kiln.gather_nd {{.*}} {batch_dims = 1 : i64, kiln.dims = {{\[\[}}"batch", ""]]} : (tensor<?x?x768xf32>, tensor<?x1xi64>) -> tensor<?x768xf32>
  %1 = kiln.gather_nd %h, %bi {batch_dims = 1 : i64} : (tensor<?x?x768xf32>, tensor<?x1xi64>) -> tensor<*xf32>
  return %0, %1 : tensor<*xi1>, tensor<*xf32>
}

// -----

// Picking and writing entries of a shape vector keeps their values.
// CHECK-LABEL: func @shape_vector_values
func.func @shape_vector_values(%x: tensor<?x?x6xf32> {kiln.dims = ["batch", "seq", ""]}) -> (tensor<*xf32>, tensor<*xf32>) {
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x6xf32>) -> tensor<3xi64>
  %pick = kiln.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %seq6 = kiln.gather_nd %s, %pick {batch_dims = 0 : i64} : (tensor<3xi64>, tensor<2x1xi64>) -> tensor<*xi64>
  // CHECK: kiln.constant_of_shape {{.*}} {kiln.dims = {{\[\[}}"seq", ""]], value = 0.000000e+00 : f32} : (tensor<2xi64>) -> tensor<?x6xf32>
  %a = kiln.constant_of_shape %seq6 {value = 0.0 : f32} : (tensor<*xi64>) -> tensor<*xf32>
  %base = kiln.constant dense<[1, 0, 4]> : tensor<3xi64>
  %at = kiln.constant dense<[[1]]> : tensor<1x1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %n = kiln.gather_nd %s, %c1 {batch_dims = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<*xi64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %n1 = kiln.unsqueeze %n, %ax : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %shape = kiln.scatter_nd %base, %at, %n1 {reduction = "none"} : (tensor<3xi64>, tensor<1x1xi64>, tensor<*xi64>) -> tensor<*xi64>
  // CHECK: kiln.constant_of_shape {{.*}} {kiln.dims = {{\[\[}}"", "seq", ""]], value = 0.000000e+00 : f32} : (tensor<3xi64>) -> tensor<1x?x4xf32>
  %b = kiln.constant_of_shape %shape {value = 0.0 : f32} : (tensor<*xi64>) -> tensor<*xf32>
  return %a, %b : tensor<*xf32>, tensor<*xf32>
}
