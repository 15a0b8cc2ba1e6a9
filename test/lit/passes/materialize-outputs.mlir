// RUN: kiln-opt %s --kiln-materialize-outputs --split-input-file | FileCheck %s

// A returned argument, a returned constant and a value returned twice each
// get a copy of their own; the first return of %a does not.

// CHECK-LABEL: func.func @aliases
func.func @aliases(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>) {
  %c = kiln.constant dense<[3, 4]> : tensor<2xi64>
  %a = kiln.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  // CHECK: %[[A:.*]] = kiln.relu
  // CHECK: %[[X:.*]] = kiln.identity %arg0
  // CHECK: %[[A2:.*]] = kiln.identity %[[A]]
  // CHECK: %[[C:.*]] = kiln.identity %{{.*}} : (tensor<2xi64>) -> tensor<2xi64>
  // CHECK: return %[[A]], %[[X]], %[[A2]], %[[C]]
  return %a, %x, %a, %c : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
}

// -----

// Near miss: outputs computed by ops, each returned once, stay as they are.

// CHECK-LABEL: func.func @plain
func.func @plain(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = kiln.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  %b = kiln.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  // CHECK-NOT: kiln.identity
  // CHECK: return %{{.*}}, %{{.*}} :
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
