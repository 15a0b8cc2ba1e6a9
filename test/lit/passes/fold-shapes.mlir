// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-fold-shapes))' -verify-diagnostics | FileCheck %s

// Static dims fold through the whole chain: the reshape's shape becomes a
// constant even though dim 0 is dynamic (only dims 1 and 2 are read).
// CHECK-LABEL: func @partial_static
func.func @partial_static(%x: tensor<?x4x8xf32>) -> tensor<*xf32> {
  %c1 = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x4x8xf32>) -> tensor<3xi64>
  %d1 = kiln.gather %s, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %d2 = kiln.gather %s, %c2 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %prod = kiln.mul %d1, %d2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %p1 = kiln.unsqueeze %prod, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = kiln.concat %m1, %p1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // CHECK: %[[S:.*]] = kiln.constant dense<[-1, 32]> : tensor<2xi64>
  // CHECK-NOT: kiln.shape
  // CHECK-NOT: kiln.gather
  // CHECK: kiln.reshape %{{.*}}, %[[S]] {allowzero = 0 : i64} : (tensor<?x4x8xf32>, tensor<2xi64>) -> tensor<?x32xf32>
  %r = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x4x8xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Cast, Equal/Where (torch's Expand idiom), ConstantOfShape, Range and
// Slice of constants all fold.
// CHECK-LABEL: func @constant_ops
func.func @constant_ops() -> (tensor<*xi64>, tensor<*xf32>, tensor<*xi64>, tensor<*xi64>) {
  %v = kiln.constant dense<[2, -1, 3]> : tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<i64>
  %one = kiln.constant dense<1> : tensor<3xi64>
  %eq = kiln.equal %v, %m1 : (tensor<3xi64>, tensor<i64>) -> tensor<*xi1>
  %w = kiln.where %eq, %one, %v : (tensor<*xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<*xi64>
  %f = kiln.cast %v {to = 1 : i64} : (tensor<3xi64>) -> tensor<*xf32>
  %s2 = kiln.constant dense<[2]> : tensor<1xi64>
  %z = kiln.constant_of_shape %s2 {value = 7.0 : f32} : (tensor<1xi64>) -> tensor<*xi64>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c5 = kiln.constant dense<5> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %r = kiln.range %c0, %c5, %c2 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  // CHECK-DAG: kiln.constant dense<[2, 1, 3]> : tensor<3xi64>
  // CHECK-DAG: kiln.constant dense<[2.000000e+00, -1.000000e+00, 3.000000e+00]> : tensor<3xf32>
  // CHECK-DAG: kiln.constant dense<7> : tensor<2xi64>
  // CHECK-DAG: kiln.constant dense<[0, 2, 4]> : tensor<3xi64>
  // CHECK-NOT: kiln.where
  // CHECK-NOT: kiln.range
  return %w, %f, %z, %r : tensor<*xi64>, tensor<*xf32>, tensor<*xi64>, tensor<*xi64>
}

// -----

// Identity reshape and expand disappear, also when only symbolic dims prove
// it (reshape to [batch, seq, 64] of a [batch, seq, 64] tensor).
// CHECK-LABEL: func @identities
func.func @identities(%x: tensor<?x?x64xf32> {kiln.dims = ["batch", "seq", ""]}) -> tensor<*xf32> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %h = kiln.constant dense<64> : tensor<1xi64>
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %b = kiln.gather %s, %c0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n = kiln.gather %s, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = kiln.unsqueeze %b, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %n1 = kiln.unsqueeze %n, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = kiln.concat %b1, %n1, %h {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<*xf32>
  %e = kiln.expand %r, %shape : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  // CHECK-NOT: kiln.reshape
  // CHECK-NOT: kiln.expand
  // CHECK: %[[E:.*]] = kiln.exp %arg0
  %y = kiln.exp %e : (tensor<*xf32>) -> tensor<*xf32>
  // CHECK: return %[[E]]
  return %y : tensor<*xf32>
}

// -----

// Near miss: a dynamic dim is not folded, and a dim that is only symbolic
// keeps its ops (the runtime computes it).
// CHECK-LABEL: func @dynamic_stays
func.func @dynamic_stays(%x: tensor<?x4xf32> {kiln.dims = ["batch", ""]}) -> tensor<*xi64> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  // CHECK: kiln.shape
  // CHECK: kiln.gather
  %s = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x4xf32>) -> tensor<2xi64>
  %b = kiln.gather %s, %c0 {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<*xi64>
  return %b : tensor<*xi64>
}

// -----

// Near miss: a constant larger than kMaxFoldElements (1024) is not
// materialized, so weights are never duplicated.
// CHECK-LABEL: func @too_big
func.func @too_big() -> tensor<*xf32> {
  %s = kiln.constant dense<[64, 64]> : tensor<2xi64>
  // CHECK: kiln.constant_of_shape {{.*}} -> tensor<64x64xf32>
  %z = kiln.constant_of_shape %s {value = 1.0 : f32} : (tensor<2xi64>) -> tensor<*xf32>
  return %z : tensor<*xf32>
}

// -----

// Folding runs shape inference, so a reshape whose computed shape cannot
// hold its input is reported once the shape is known.
func.func @bad_reshape(%x: tensor<2x8xf32>) -> tensor<*xf32> {
  %a = kiln.constant dense<3> : tensor<1xi64>
  %b = kiln.constant dense<5> : tensor<1xi64>
  %s = kiln.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // expected-error @+1 {{cannot reshape 16 elements into 15}}
  %r = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
