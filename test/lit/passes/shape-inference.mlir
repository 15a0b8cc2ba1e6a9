// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-shape-inference{annotate-dims=true}))' -verify-diagnostics | FileCheck %s

// Static dims are derived from static operands, symbolic ones from the
// argument's kiln.dims, and the function type follows.
// CHECK-LABEL: func @refine
// CHECK-SAME: -> tensor<?x?x3072xf32>
func.func @refine(%x: tensor<?x?x768xf32> {kiln.dims = ["batch", "seq", ""]}, %w: tensor<768x3072xf32>) -> tensor<*xf32> {
  // CHECK: kiln.matmul {{.*}} {kiln.dims = {{\[\[}}"batch", "seq", ""]]} : (tensor<?x?x768xf32>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32>
  %0 = kiln.matmul %x, %w : (tensor<?x?x768xf32>, tensor<768x3072xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the reshape learns the
// input's dims symbolically and the -1 statically (768 / 12).
// CHECK-LABEL: func @shape_chain
func.func @shape_chain(%x: tensor<?x?x768xf32> {kiln.dims = ["batch", "seq", ""]}) -> tensor<*xf32> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %ax = kiln.constant dense<0> : tensor<1xi64>
  %tail = kiln.constant dense<[12, -1]> : tensor<2xi64>
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<3xi64>
  %b = kiln.gather %s, %c0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n = kiln.gather %s, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = kiln.unsqueeze %b, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %n1 = kiln.unsqueeze %n, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = kiln.concat %b1, %n1, %tail {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  // CHECK: kiln.reshape {{.*}} {allowzero = 0 : i64, kiln.dims = {{\[\[}}"batch", "seq", "", ""]]} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
  %r = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Past-KV concat adds the symbolic lengths; Range over them is that long.
// CHECK-LABEL: func @kv_concat
func.func @kv_concat(%past: tensor<?x4x?x16xf32> {kiln.dims = ["batch", "", "past", ""]}, %new: tensor<?x4x?x16xf32> {kiln.dims = ["batch", "", "seq", ""]}) -> (tensor<*xf32>, tensor<*xi64>) {
  // CHECK: kiln.concat {{.*}} {axis = 2 : i64, kiln.dims = {{\[\[}}"batch", "", "past + seq", ""]]}
  %kv = kiln.concat %past, %new {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<*xf32>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %two = kiln.constant dense<2> : tensor<i64>
  %s = kiln.shape %kv {end = 4 : i64, start = 0 : i64} : (tensor<*xf32>) -> tensor<*xi64>
  %total = kiln.gather %s, %two {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  // CHECK: kiln.range {{.*}} {kiln.dims = {{\[\[}}"past + seq"]]} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = kiln.range %c0, %total, %c1 : (tensor<i64>, tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  return %kv, %pos : tensor<*xf32>, tensor<*xi64>
}

// -----

// Unnamed result dims get the inferred names; named ones are kept.
// CHECK-LABEL: func @result_dims
// CHECK-SAME: -> (tensor<?x?xf32> {kiln.dims = ["b", "s + 1"]})
func.func @result_dims(%x: tensor<?x?xf32> {kiln.dims = ["b", "s"]}, %y: tensor<?x1xf32> {kiln.dims = ["b", ""]}) -> (tensor<?x?xf32> {kiln.dims = ["b", ""]}) {
  %0 = kiln.concat %x, %y {axis = 1 : i64} : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Near miss: a shape operand that nothing is known about leaves the dims
// `?` (the rank still comes from its static length), and no kiln.dims.
// CHECK-LABEL: func @unknown_shape
func.func @unknown_shape(%x: tensor<?x768xf32>, %shape: tensor<3xi64>) -> tensor<*xf32> {
  // CHECK: kiln.reshape %{{.*}}, %{{.*}} {allowzero = 0 : i64} : (tensor<?x768xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %0 = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<?x768xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A declared static dim is kept where inference knows less.
// CHECK-LABEL: func @keep_declared
func.func @keep_declared(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  // CHECK: kiln.exp %{{.*}} : (tensor<?x8xf32>) -> tensor<4x8xf32>
  %0 = kiln.exp %x : (tensor<?x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A declared type that contradicts the inference is an error at the op.
// (The verifier cannot see it: the result has a dynamic dim.)
func.func @conflict(%x: tensor<2x8xf32>) -> tensor<?x5xf32> {
  %s = kiln.constant dense<[4, 4]> : tensor<2xi64>
  // expected-error @+1 {{inferred result shape has dim 1 = 4 but the type says 5}}
  %0 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

// A reshape whose constant shape cannot hold the input's elements.
func.func @bad_reshape(%x: tensor<2x8xf32>) -> tensor<*xf32> {
  %s = kiln.constant dense<[3, 5]> : tensor<2xi64>
  // expected-error @+1 {{cannot reshape 16 elements into 15}}
  %0 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Run-time axes of static length still fix the result's rank (the dims stay
// unknown); axes of unknown length leave it unranked (the near miss).
// CHECK-LABEL: func @runtime_axes
func.func @runtime_axes(%x: tensor<3x4x5xf32>, %a2: tensor<2xi64>, %a1: tensor<1xi64>, %any: tensor<?xi64>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  // CHECK: kiln.unsqueeze {{.*}} -> tensor<?x?x?x?x?xf32>
  %u = kiln.unsqueeze %x, %a2 : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<*xf32>
  // CHECK: kiln.squeeze {{.*}} -> tensor<?x?xf32>
  %s = kiln.squeeze %x, %a1 : (tensor<3x4x5xf32>, tensor<1xi64>) -> tensor<*xf32>
  // CHECK: kiln.reduce_sum {{.*}} -> tensor<?xf32>
  %r = kiln.reduce_sum %x, %a2 {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<*xf32>
  // CHECK: kiln.unsqueeze {{.*}} -> tensor<*xf32>
  %n = kiln.unsqueeze %x, %any : (tensor<3x4x5xf32>, tensor<?xi64>) -> tensor<*xf32>
  return %u, %s, %r, %n : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}
