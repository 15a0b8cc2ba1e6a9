// RUN: kiln-opt %s --kiln-mark-host --split-input-file | FileCheck %s

// Shape -> Gather -> Concat -> Reshape: the chain that builds the shape is
// host; the reshape itself, its data and the constants are not.

// CHECK-LABEL: func.func @reshape_chain
func.func @reshape_chain(%x: tensor<?x?x8xf32>) -> tensor<?x?xf32> {
  // CHECK: kiln.shape %{{.*}} {end = 3 : i64, kiln.host, start = 0 : i64}
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  // CHECK: kiln.constant dense<0> : tensor<1xi64>{{$}}
  %i = kiln.constant dense<0> : tensor<1xi64>
  // CHECK: kiln.gather {{.*}} {axis = 0 : i64, kiln.host}
  %b = kiln.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m = kiln.constant dense<-1> : tensor<1xi64>
  // CHECK: kiln.concat {{.*}} {axis = 0 : i64, kiln.host}
  %shape = kiln.concat %b, %m {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // CHECK: kiln.reshape {{.*}} {allowzero = 0 : i64} :
  %y = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Near miss: Shape only reads its input's dims, so the matmul it measures
// stays a device op, and so does the softmax that consumes the reshape.

// CHECK-LABEL: func.func @shape_of_compute
func.func @shape_of_compute(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?xf32> {
  // CHECK: kiln.matmul {{.*}} : (
  %h = kiln.matmul %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  // CHECK: kiln.shape {{.*}}kiln.host
  %s = kiln.shape %h {end = 1 : i64, start = 0 : i64} : (tensor<?x4xf32>) -> tensor<1xi64>
  %four = kiln.constant dense<4> : tensor<1xi64>
  // CHECK: kiln.mul {{.*}} {kiln.host}
  %n = kiln.mul %s, %four : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  // CHECK: kiln.reshape {{.*}} {allowzero = 0 : i64} :
  %flat = kiln.reshape %h, %n {allowzero = 0 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?xf32>
  // CHECK: kiln.softmax {{.*}} {axis = -1 : i64} :
  %y = kiln.softmax %flat {axis = -1 : i64} : (tensor<?xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Every shape-like operand is a seed: slice bounds, unsqueeze axes,
// constant_of_shape's shape, range's inputs (here float positions built by
// cast from a dim, which the host may compute), trilu's k.

// CHECK-LABEL: func.func @seeds
func.func @seeds(%x: tensor<?x?xf32>, %ids: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  // CHECK: kiln.shape {{.*}}kiln.host
  %s = kiln.shape %x {end = 2 : i64, start = 1 : i64} : (tensor<?x?xf32>) -> tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  // CHECK: kiln.neg {{.*}} {kiln.host}
  %end = kiln.neg %s : (tensor<1xi64>) -> tensor<1xi64>
  // CHECK: kiln.slice {{.*}} : (
  %sl = kiln.slice %x, %zero, %end : (tensor<?x?xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  %axes = kiln.constant dense<0> : tensor<1xi64>
  // CHECK: kiln.squeeze {{.*}} {kiln.host}
  %d = kiln.squeeze %s, %axes : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  // CHECK: kiln.cast {{.*}} {kiln.host, to = 1 : i64}
  %df = kiln.cast %d {to = 1 : i64} : (tensor<i64>) -> tensor<f32>
  %f0 = kiln.constant dense<0.0> : tensor<f32>
  %f1 = kiln.constant dense<1.0> : tensor<f32>
  // CHECK: kiln.range {{.*}} : (
  %pos = kiln.range %f0, %df, %f1 : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  // CHECK: kiln.shape {{.*}}kiln.host
  %s2 = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x?xf32>) -> tensor<2xi64>
  // CHECK: kiln.constant_of_shape {{.*}} {value = 0.000000e+00 : f32} :
  %z = kiln.constant_of_shape %s2 {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x?xf32>
  // The gather of token ids is data: its output feeds trilu's k, so it is
  // host, but %ids itself is a graph input and ends the walk.
  %one = kiln.constant dense<0> : tensor<i64>
  // CHECK: kiln.gather {{.*}} {axis = 0 : i64, kiln.host}
  %k = kiln.gather %ids, %one {axis = 0 : i64} : (tensor<?xi64>, tensor<i64>) -> tensor<i64>
  // CHECK: kiln.trilu {{.*}} {upper = 1 : i64} :
  %t = kiln.trilu %x, %k {upper = 1 : i64} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  return %sl, %pos, %z, %t : tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
