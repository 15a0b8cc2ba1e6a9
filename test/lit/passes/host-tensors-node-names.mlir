// RUN: not kiln-opt %s --kiln-mark-host 2>&1 | FileCheck %s

// The host-tensor error names the ONNX nodes (the importer's NameLocs) at
// both ends of the chain, so the user can find them in the model.

// CHECK: error: {{.*}}'proj' (kiln.matmul) computes float data that a shape depends on: it reaches the shape operand of 'view' (kiln.reshape)
// CHECK: note: {{.*}}the shape is used here
func.func @shape_from_matmul(%x: tensor<2xf32>, %w: tensor<2x2xf32>, %d: tensor<?xf32>) -> tensor<?x?xf32> {
  %h = kiln.matmul %x, %w : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<2xf32> loc("proj")
  %i = kiln.cast %h {to = 8 : i64} : (tensor<2xf32>) -> tensor<2xi64> loc("to_int")
  %y = kiln.reshape %d, %i {allowzero = 0 : i64} : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x?xf32> loc("view")
  return %y : tensor<?x?xf32>
}
