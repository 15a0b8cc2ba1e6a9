// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of the tensor-parallel collectives (docs/tensor-parallel.md).

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<1x?x64xf32>, %l: tensor<1x?x50xf32>, %h: tensor<1x?x0xbf16>) -> (tensor<1x?x64xf32>, tensor<1x?x128xf32>, tensor<1x?x3xbf16>) {
  // CHECK: kiln.all_reduce %{{.*}} {reduction = "sum"} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %0 = kiln.all_reduce %x {reduction = "sum"} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  // CHECK: kiln.all_gather %{{.*}} {axis = 2 : i64, sizes = array<i64: 50, 50, 28>} : (tensor<1x?x50xf32>) -> tensor<1x?x128xf32>
  %1 = kiln.all_gather %l {axis = 2 : i64, sizes = array<i64: 50, 50, 28>} : (tensor<1x?x50xf32>) -> tensor<1x?x128xf32>
  // A rank with an empty slice (uneven heads) still takes part.
  // CHECK: kiln.all_gather %{{.*}} {axis = 2 : i64, sizes = array<i64: 1, 1, 1, 0>} : (tensor<1x?x0xbf16>) -> tensor<1x?x3xbf16>
  %2 = kiln.all_gather %h {axis = 2 : i64, sizes = array<i64: 1, 1, 1, 0>} : (tensor<1x?x0xbf16>) -> tensor<1x?x3xbf16>
  return %0, %1, %2 : tensor<1x?x64xf32>, tensor<1x?x128xf32>, tensor<1x?x3xbf16>
}

// Collectives are not Pure: an unused one stays (every rank must run it).
// RUN: kiln-opt %s -canonicalize | FileCheck %s --check-prefix=KEEP
// KEEP-LABEL: func @unused
// KEEP: kiln.all_reduce
func.func @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.all_reduce %x {reduction = "sum"} : (tensor<4xf32>) -> tensor<4xf32>
  return %x : tensor<4xf32>
}
