// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of shape, size, constant_of_shape, range and constant.

// CHECK-LABEL: func @shape_ops
func.func @shape_ops(%x: tensor<?x?x768xf32>, %s: tensor<2xi64>, %a: tensor<i64>, %b: tensor<f32>) -> (tensor<3xi64>, tensor<1xi64>, tensor<?x?xi64>, tensor<?xi64>, tensor<?xf32>) {
  // CHECK: kiln.shape %{{.*}} {end = 3 : i64, start = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<3xi64>
  %0 = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x768xf32>) -> tensor<3xi64>
  // CHECK: kiln.shape %{{.*}} {end = 9223372036854775807 : i64, start = -1 : i64} : (tensor<?x?x768xf32>) -> tensor<1xi64>
  %1 = kiln.shape %x {end = 9223372036854775807 : i64, start = -1 : i64} : (tensor<?x?x768xf32>) -> tensor<1xi64>
  // CHECK: kiln.constant_of_shape %{{.*}} {value = 0.000000e+00 : f32} : (tensor<2xi64>) -> tensor<?x?xi64>
  %2 = kiln.constant_of_shape %s {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?x?xi64>
  // CHECK: kiln.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %3 = kiln.range %a, %a, %a : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: kiln.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  %4 = kiln.range %b, %b, %b : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<1xi64>, tensor<?x?xi64>, tensor<?xi64>, tensor<?xf32>
}

// CHECK-LABEL: func @size
func.func @size(%x: tensor<?x?x768xf32>, %y: tensor<*xi1>) -> (tensor<i64>, tensor<i64>) {
  // CHECK: kiln.size %{{.*}} : (tensor<?x?x768xf32>) -> tensor<i64>
  %0 = kiln.size %x : (tensor<?x?x768xf32>) -> tensor<i64>
  // CHECK: kiln.size %{{.*}} : (tensor<*xi1>) -> tensor<i64>
  %1 = kiln.size %y : (tensor<*xi1>) -> tensor<i64>
  return %0, %1 : tensor<i64>, tensor<i64>
}

// CHECK-LABEL: func @constants
func.func @constants() -> (tensor<1xi64>, tensor<2x2xf32>, tensor<3xi1>) {
  // CHECK: kiln.constant dense<-1> : tensor<1xi64>
  %0 = kiln.constant dense<[-1]> : tensor<1xi64>
  // CHECK: kiln.constant {name = "lm_head.weight"} dense_resource<lm_head.weight> : tensor<2x2xf32>
  %1 = kiln.constant {name = "lm_head.weight"} dense_resource<lm_head.weight> : tensor<2x2xf32>
  // CHECK: kiln.constant dense<[true, false, true]> : tensor<3xi1>
  %2 = kiln.constant dense<[true, false, true]> : tensor<3xi1>
  return %0, %1, %2 : tensor<1xi64>, tensor<2x2xf32>, tensor<3xi1>
}

// The blob survives the round trip byte for byte.
// CHECK: lm_head.weight: "0x040000000000803F000000400000404000008040"
{-#
  dialect_resources: {
    builtin: {
      lm_head.weight: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
