// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// The mixture-of-experts routing ops round-trip (they exist for the importer
// and kiln-inject only) and their verifiers refuse bad attributes.

// CHECK-LABEL: func @routing
// CHECK: kiln.top_k %{{.*}}, %{{.*}} {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: kiln.one_hot %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<?x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x2x8xi64>
// CHECK: kiln.non_zero %{{.*}} : (tensor<?x2x8xi64>) -> tensor<3x?xi64>
// CHECK: kiln.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @routing(%p: tensor<?x8xf32>, %k: tensor<1xi64>, %d: tensor<i64>, %v: tensor<2xi64>, %i: tensor<?x8xi64>) -> (tensor<?x2xf32>, tensor<3x?xi64>, tensor<?x8xf32>) {
  %vals, %idx = kiln.top_k %p, %k {axis = -1 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %oh = kiln.one_hot %idx, %d, %v {axis = -1 : i64} : (tensor<?x2xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x2x8xi64>
  %nz = kiln.non_zero %oh : (tensor<?x2x8xi64>) -> tensor<3x?xi64>
  %s = kiln.scatter_elements %p, %i, %p {axis = 0 : i64, reduction = "none"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %vals, %nz, %s : tensor<?x2xf32>, tensor<3x?xi64>, tensor<?x8xf32>
}

// -----

func.func @top_k_flag(%p: tensor<?x8xf32>, %k: tensor<1xi64>) -> tensor<?x2xf32> {
  // expected-error @+1 {{attribute 'largest' must be 0 or 1, got 2}}
  %vals, %idx = kiln.top_k %p, %k {axis = -1 : i64, largest = 2 : i64, sorted = 1 : i64} : (tensor<?x8xf32>, tensor<1xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  return %vals : tensor<?x2xf32>
}

// -----

func.func @one_hot_values(%i: tensor<?x2xi64>, %d: tensor<i64>, %v: tensor<3xi64>) -> tensor<?x2x8xi64> {
  // expected-error @+1 {{values must hold two elements (off, on)}}
  %oh = kiln.one_hot %i, %d, %v {axis = -1 : i64} : (tensor<?x2xi64>, tensor<i64>, tensor<3xi64>) -> tensor<?x2x8xi64>
  return %oh : tensor<?x2x8xi64>
}

// -----

func.func @scatter_reduction(%p: tensor<?x8xf32>, %i: tensor<?x8xi64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{reduction must be none, add, mul, max or min, got 'sum'}}
  %s = kiln.scatter_elements %p, %i, %p {axis = 0 : i64, reduction = "sum"} : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}
