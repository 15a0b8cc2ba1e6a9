// RUN: kiln-opt %s --kiln-mark-host --split-input-file --verify-diagnostics

// A shape computed from a matmul's output cannot be known before the model
// runs: the error is at the matmul, with a note at the reshape that needs
// it. (host-tensors-node-names.mlir checks that ONNX node names appear.)

func.func @shape_from_matmul(%x: tensor<2xf32>, %w: tensor<2x2xf32>, %d: tensor<?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{kiln.matmul computes float data that a shape depends on: it reaches the shape operand of kiln.reshape}}
  %h = kiln.matmul %x, %w : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<2xf32>
  %i = kiln.cast %h {to = 8 : i64} : (tensor<2xf32>) -> tensor<2xi64>
  // expected-note @+1 {{the shape is used here}}
  %y = kiln.reshape %d, %i {allowzero = 0 : i64} : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// The same through elementwise arithmetic, which the host could evaluate:
// the walk passes the add and the cast and stops at the softmax.

func.func @axes_from_softmax(%x: tensor<1xf32>, %d: tensor<?x?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{kiln.softmax computes float data that a shape depends on: it reaches the axes operand of kiln.reduce_sum}}
  %p = kiln.softmax %x {axis = -1 : i64} : (tensor<1xf32>) -> tensor<1xf32>
  %q = kiln.add %p, %p : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %a = kiln.cast %q {to = 8 : i64} : (tensor<1xf32>) -> tensor<1xi64>
  // expected-note @+1 {{the shape is used here}}
  %r = kiln.reduce_sum %d, %a {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
