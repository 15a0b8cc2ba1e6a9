// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the data-movement ops.

// CHECK-LABEL: func @cast_reshape_transpose
func.func @cast_reshape_transpose(%x: tensor<?x?xi64>, %y: tensor<?x?x768xf32>, %s: tensor<4xi64>) -> (tensor<?x?xf32>, tensor<?x12x?x64xf32>) {
  // CHECK: kiln.cast %{{.*}} {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  %0 = kiln.cast %x {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  // CHECK: kiln.reshape %{{.*}}, %{{.*}} {allowzero = 0 : i64} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
  %1 = kiln.reshape %y, %s {allowzero = 0 : i64} : (tensor<?x?x768xf32>, tensor<4xi64>) -> tensor<?x?x12x64xf32>
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32>
  %2 = kiln.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32>
  return %0, %2 : tensor<?x?xf32>, tensor<?x12x?x64xf32>
}

// CHECK-LABEL: func @concat_split
func.func @concat_split(%past: tensor<?x12x?x64xf32>, %new: tensor<?x12x1x64xf32>, %qkv: tensor<?x?x2304xf32>, %sizes: tensor<2xi64>) -> (tensor<?x12x?x64xf32>, tensor<?x?x768xf32>, tensor<?x?x1000xf32>) {
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<?x12x?x64xf32>, tensor<?x12x1x64xf32>) -> tensor<?x12x?x64xf32>
  %0 = kiln.concat %past, %new {axis = 2 : i64} : (tensor<?x12x?x64xf32>, tensor<?x12x1x64xf32>) -> tensor<?x12x?x64xf32>
  // CHECK: kiln.split %{{.*}} {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x?x2304xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>)
  %1:3 = kiln.split %qkv {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x?x2304xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>)
  // CHECK: kiln.split %{{.*}}, %{{.*}} {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<?x?x2304xf32>, tensor<2xi64>) -> (tensor<?x?x1000xf32>, tensor<?x?x1304xf32>)
  %2:2 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<?x?x2304xf32>, tensor<2xi64>) -> (tensor<?x?x1000xf32>, tensor<?x?x1304xf32>)
  return %0, %1#0, %2#0 : tensor<?x12x?x64xf32>, tensor<?x?x768xf32>, tensor<?x?x1000xf32>
}

// CHECK-LABEL: func @slice
func.func @slice(%x: tensor<1x1x1024x1024xi1>, %i: tensor<1xi64>, %j: tensor<1xi32>) -> (tensor<1x1x?x1024xi1>, tensor<1x1x?x1024xi1>, tensor<?x1x1024x1024xi1>, tensor<?x1x1024x1024xi1>) {
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}} axes %{{.*}} steps %{{.*}} : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x1024xi1>
  %0 = kiln.slice %x, %i, %i axes %i steps %i : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x1024xi1>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}} axes %{{.*}} : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x1024xi1>
  %1 = kiln.slice %x, %i, %i axes %i : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x1024xi1>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}} steps %{{.*}} : (tensor<1x1x1024x1024xi1>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?x1x1024x1024xi1>
  %2 = kiln.slice %x, %j, %j steps %j : (tensor<1x1x1024x1024xi1>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?x1x1024x1024xi1>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x1024x1024xi1>
  %3 = kiln.slice %x, %i, %i : (tensor<1x1x1024x1024xi1>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x1024x1024xi1>
  return %0, %1, %2, %3 : tensor<1x1x?x1024xi1>, tensor<1x1x?x1024xi1>, tensor<?x1x1024x1024xi1>, tensor<?x1x1024x1024xi1>
}

// CHECK-LABEL: func @gather_squeeze_unsqueeze
func.func @gather_squeeze_unsqueeze(%wte: tensor<50257x768xf32>, %ids: tensor<?x?xi64>, %s: tensor<i64>, %a: tensor<1xi64>, %y: tensor<?x1x768xf32>) -> (tensor<?x?x768xf32>, tensor<1xi64>, tensor<?x768xf32>, tensor<?x768xf32>) {
  // CHECK: kiln.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<50257x768xf32>, tensor<?x?xi64>) -> tensor<?x?x768xf32>
  %0 = kiln.gather %wte, %ids {axis = 0 : i64} : (tensor<50257x768xf32>, tensor<?x?xi64>) -> tensor<?x?x768xf32>
  // CHECK: kiln.unsqueeze %{{.*}}, %{{.*}} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %1 = kiln.unsqueeze %s, %a : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  // CHECK: kiln.squeeze %{{.*}}, %{{.*}} : (tensor<?x1x768xf32>, tensor<1xi64>) -> tensor<?x768xf32>
  %2 = kiln.squeeze %y, %a : (tensor<?x1x768xf32>, tensor<1xi64>) -> tensor<?x768xf32>
  // CHECK: kiln.squeeze %{{.*}} : (tensor<?x1x768xf32>) -> tensor<?x768xf32>
  %3 = kiln.squeeze %y : (tensor<?x1x768xf32>) -> tensor<?x768xf32>
  return %0, %1, %2, %3 : tensor<?x?x768xf32>, tensor<1xi64>, tensor<?x768xf32>, tensor<?x768xf32>
}

// CHECK-LABEL: func @expand_tile_flatten
func.func @expand_tile_flatten(%m: tensor<?x1x1x?xf32>, %s: tensor<4xi64>, %x: tensor<2x3xf32>, %r: tensor<2xi64>, %z: tensor<2x3x4xf32>) -> (tensor<?x1x?x?xf32>, tensor<4x3xf32>, tensor<2x12xf32>) {
  // CHECK: kiln.expand %{{.*}}, %{{.*}} : (tensor<?x1x1x?xf32>, tensor<4xi64>) -> tensor<?x1x?x?xf32>
  %0 = kiln.expand %m, %s : (tensor<?x1x1x?xf32>, tensor<4xi64>) -> tensor<?x1x?x?xf32>
  // CHECK: kiln.tile %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  %1 = kiln.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  // CHECK: kiln.flatten %{{.*}} {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %2 = kiln.flatten %z {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return %0, %1, %2 : tensor<?x1x?x?xf32>, tensor<4x3xf32>, tensor<2x12xf32>
}

// CHECK-LABEL: func @clip_trilu
func.func @clip_trilu(%x: tensor<?x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %k: tensor<i64>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: kiln.clip %{{.*}} min %{{.*}} max %{{.*}} : (tensor<?x8xf32>, tensor<f32>, tensor<f32>) -> tensor<?x8xf32>
  %0 = kiln.clip %x min %lo max %hi : (tensor<?x8xf32>, tensor<f32>, tensor<f32>) -> tensor<?x8xf32>
  // CHECK: kiln.clip %{{.*}} max %{{.*}} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %1 = kiln.clip %x max %hi : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  // CHECK: kiln.clip %{{.*}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = kiln.clip %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: kiln.trilu %{{.*}}, %{{.*}} {upper = 1 : i64} : (tensor<?x8xf32>, tensor<i64>) -> tensor<?x8xf32>
  %3 = kiln.trilu %x, %k {upper = 1 : i64} : (tensor<?x8xf32>, tensor<i64>) -> tensor<?x8xf32>
  // CHECK: kiln.trilu %{{.*}} {upper = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %4 = kiln.trilu %x {upper = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0, %1, %2, %3, %4 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func @gather_nd_scatter_nd
func.func @gather_nd_scatter_nd(%mask: tensor<?x?xi1>, %idx: tensor<?x?x2xi64>, %x: tensor<2x3x4xf32>, %bi: tensor<2x1xi64>, %m: tensor<?x1x?x?xf32>, %mi: tensor<?x1x?x?x4xi64>, %mu: tensor<?x1x?x?xf32>, %v: tensor<8xi64>, %vi: tensor<3x1xi64>, %vu: tensor<3xi64>) -> (tensor<?x?xi1>, tensor<2x4xf32>, tensor<?x1x?x?xf32>, tensor<8xi64>) {
  // CHECK: kiln.gather_nd %{{.*}}, %{{.*}} {batch_dims = 0 : i64} : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
  %0 = kiln.gather_nd %mask, %idx {batch_dims = 0 : i64} : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
  // CHECK: kiln.gather_nd %{{.*}}, %{{.*}} {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  %1 = kiln.gather_nd %x, %bi {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  // CHECK: kiln.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "none"} : (tensor<?x1x?x?xf32>, tensor<?x1x?x?x4xi64>, tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %2 = kiln.scatter_nd %m, %mi, %mu {reduction = "none"} : (tensor<?x1x?x?xf32>, tensor<?x1x?x?x4xi64>, tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  // CHECK: kiln.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "add"} : (tensor<8xi64>, tensor<3x1xi64>, tensor<3xi64>) -> tensor<8xi64>
  %3 = kiln.scatter_nd %v, %vi, %vu {reduction = "add"} : (tensor<8xi64>, tensor<3x1xi64>, tensor<3xi64>) -> tensor<8xi64>
  return %0, %1, %2, %3 : tensor<?x?xi1>, tensor<2x4xf32>, tensor<?x1x?x?xf32>, tensor<8xi64>
}
